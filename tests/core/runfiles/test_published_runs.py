"""Published runs as data: specs, the real download (dropped and resumed), streamed reading of
DPR-, UPR- and Rankify-shaped files, scoring by name, re-ranking and ``harness reproduce --runs``,
all against a loopback server."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

import harness.registry
from harness.cli.main import main
from harness.errors import InputFileError
from harness.runfiles.published import read_run_spec
from harness.runfiles.registered import run_format
from harness.runfiles.stream import JsonMembers
from helpers.loopback import serving
from helpers.qa_data import load_set

N = 12  # questions
DEPTH = 8  # passages per question
#: Where question i's answer passage is ranked (None: no answer passage); 4 of 12 at rank 0.
PLANTED = [0, 0, 0, 0, 1, 2, 2, 3, 5, 7, None, None]


def _questions():
    qa = load_set("nq-dpr-test")[:N]
    assert len(qa) == N
    return qa


def _passages(qa):
    """Per question, DEPTH passages (id, title, text) best first, the answer planted at PLANTED[i]."""
    out = []
    for i, (_question, answers) in enumerate(qa):
        ranking = []
        for j in range(DEPTH):
            pid = 1000 + i * DEPTH + j
            text = f"filler passage {pid} about nothing in particular"
            if PLANTED[i] == j:
                text = f"this passage says {answers[0]} plainly"
            ranking.append((pid, f"Title {pid}", text))
        out.append(ranking)
    return out


def _accuracy(k: int) -> float:
    return 100 * sum(1 for r in PLANTED if r is not None and r < k) / N


def _dpr_records(qa, passages, *, text=True, int_ids=False, score=True, query_id=False):
    records = []
    for i, ((question, answers), ranking) in enumerate(zip(qa, passages)):
        ctxs = []
        for j, (pid, title, body) in enumerate(ranking):
            ctx = {"id": pid if int_ids else f"wiki:{pid}", "has_answer": PLANTED[i] == j}
            if score:
                ctx["score"] = str(90.0 - j) if not int_ids else 90.0 - j
            if text:
                ctx.update(title=title, text=body)
            ctxs.append(ctx)
        record = {"question": question, "answers": answers, "ctxs": ctxs}
        if query_id:
            record["query_id"] = i
        records.append(record)
    return records


def _tar_gz(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("downloads/README")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _write_site(root: Path, qa, passages) -> dict[str, bytes]:
    """The files the loopback server serves: questions, corpus and three runs."""
    site = root / "site"
    site.mkdir()
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    for question, answers in qa:
        writer.writerow([question, repr(list(answers))])
    (site / "questions.tsv").write_text(buffer.getvalue(), encoding="utf-8")
    with open(site / "psgs.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        for ranking in passages:
            for pid, title, body in ranking:
                writer.writerow([pid, body, title])
    files = {
        "dpr.json.gz": gzip.compress(json.dumps(_dpr_records(qa, passages), indent=2).encode()),
        "upr.tar.gz": _tar_gz("downloads/nq-test.json", json.dumps(_dpr_records(qa, passages, text=False, int_ids=True, score=False)).encode()),
        "rankify.json": json.dumps(_dpr_records(qa, passages, int_ids=True, query_id=True), indent=1).encode(),
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    return files


def _write_specs(root: Path, url: str, files: dict[str, bytes]) -> Path:
    specs = root / "specs"
    for sub in ("suites", "corpora", "runs", "published"):
        (specs / sub).mkdir(parents=True)
    (specs / "corpora" / "pub.toml").write_text(
        f'name = "pub-corpus"\ndescription = "d"\nurl = "{url}/psgs.tsv"\npath = "pub/psgs.tsv"\nformat = "dpr-tsv"\n'
        'license = "l"\ncitation = "c"\n'
    )
    (specs / "suites" / "pub.toml").write_text(
        'name = "pubq"\ndescription = "d"\nmatch = "string"\ncorpus = "pub-corpus"\nlicense = "l"\ncitation = "c"\n'
        f'default_k = [1, 5, 20]\n[[parts]]\nname = "test"\nurl = "{url}/questions.tsv"\npath = "pub/questions.tsv"\nformat = "dpr-tsv"\n'
    )
    rankify_sha = hashlib.sha256(files["rankify.json"]).hexdigest()
    runs = {
        "pub-dpr": ('format = "dpr-json"\ncompression = "gzip"\n', "dpr.json.gz", "DPR-like"),
        "pub-upr": ('format = "upr-json"\ncompression = "tar.gz"\nmember = "downloads/nq-test.json"\n', "upr.tar.gz", "UPR-like"),
        "pub-rankify": (f'format = "rankify-json"\nsha256 = "{rankify_sha}"\nsize = {len(files["rankify.json"])}\n', "rankify.json", "Rankify-like"),
    }
    for name, (extra, file, system) in runs.items():
        (specs / "runs" / f"{name}.toml").write_text(
            f'name = "{name}"\ndescription = "a {system} run"\nsuite = "pubq"\nurl = "{url}/{file}"\npath = "runs/{file}"\n{extra}'
            f'depth = {DEPTH}\nk = [1, 5]\nretriever = "{system}"\ncheckpoint = "none"\nlicense = "l"\ncitation = "c"\nversion = "v1"\n'
            f'[reproduces]\ntable = "pub-table"\nsystem = "{system}"\n'
        )
    rows = "".join(
        f'[[rows]]\nsystem = "{system}"\nsuite = "pubq"\nvalues = {{ 1 = {_accuracy(1):.4f}, 5 = {_accuracy(5) + (30 if system == "UPR-like" else 0):.4f} }}\n'
        for system in ("DPR-like", "UPR-like", "Rankify-like")
    )
    (specs / "published" / "pub-table.toml").write_text(
        f'name = "pub-table"\ntitle = "made-up numbers"\ncitation = "c"\n{rows}'
    )
    return specs


@pytest.fixture
def site(tmp_path, monkeypatch, shared_data):
    """A loopback server with the files, a spec folder naming it, an empty data folder and
    registries rebuilt with that spec folder."""
    qa = _questions()
    passages = _passages(qa)
    files = _write_site(tmp_path, qa, passages)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    with serving(tmp_path / "site") as server:
        specs = _write_specs(tmp_path, server.url, files)
        monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
        from harness.plugins import loaded_plugins
        from harness.registry import KINDS, Registry

        monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
        yield server, tmp_path, files


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _result(folder: Path) -> dict:
    (path,) = folder.glob("*.json")
    return json.loads(path.read_text())


def _expected_ranks():
    return {str(i): r for i, r in enumerate(PLANTED)}


def test_list_runs_shows_the_built_in_and_the_user_specs(capsys, site):
    code, out, err = _cli(capsys, "list", "runs")
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert {"pub-dpr", "pub-upr", "pub-rankify", "dpr-nq-single-test", "upr-bm25-nq-test", "rankify-dpr-nq-test"} <= set(lines)
    assert "a UPR-like run" in lines["pub-upr"]


def test_every_built_in_run_names_a_suite_and_a_published_row_that_exist():
    from harness.runfiles.published import row_to_check

    runs = list(harness.registry.registry("runs"))
    assert len(runs) >= 40
    tables = list(harness.registry.registry("published"))
    suites = harness.registry.suites()
    for run in runs:
        assert run.suite in suites, run.name
        assert not run.table or row_to_check(run, tables, run.name) is not None, run.name
    assert {r.format for r in runs} == {"dpr-json", "upr-json", "rankify-json"}


def test_data_fetch_resumes_a_dropped_transfer_and_records_the_checksum(capsys, site):
    server, tmp_path, files = site
    server.drop_after, server.drops = 300, 1
    code, out, err = _cli(capsys, "data", "fetch", "pub-dpr", "pub-rankify", "--no-progress")
    assert code == 0, err
    assert "published run pub-dpr: downloaded, sha256" in out and "(no pinned checksum: recorded)" in out
    assert "published run pub-rankify: downloaded, verified" in out
    assert any(r.range == "bytes=300-" and r.path == "/dpr.json.gz" for r in server.log)
    assert (tmp_path / "data" / "runs" / "dpr.json.gz").read_bytes() == files["dpr.json.gz"]
    code, out, err = _cli(capsys, "data", "fetch", "pub-dpr", "--no-progress")
    assert code == 0 and "published run pub-dpr: present" in out


def test_a_tampered_pinned_run_is_refused(capsys, site):
    server, tmp_path, _files = site
    server.corrupt = True
    code, out, err = _cli(capsys, "data", "fetch", "pub-rankify", "--no-progress")
    assert code == 2 and "checksum mismatch" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "data" / "runs" / "rankify.json").exists()


@pytest.mark.parametrize("name", ["pub-dpr", "pub-upr", "pub-rankify"])
def test_score_by_name_fetches_streams_and_scores_on_the_runs_suite(capsys, site, name):
    _server, tmp_path, _files = site
    code, out, err = _cli(capsys, "score", "--run", name, "--no-progress", "--results-dir", str(tmp_path / "results"))
    assert code == 0, err
    data = _result(tmp_path / "results")
    assert data["suite"]["name"] == "pubq"
    assert data["first_hit_ranks"] == {"test": _expected_ranks()}
    assert data["retriever"]["name"] == name and data["retriever"]["parameters"]["published_run"] == name
    assert data["metrics"]["accuracy"]["macro"]["1"] == pytest.approx(_accuracy(1) / 100)
    assert sorted(data["metrics"]["accuracy"]["macro"]) == ["1", "5"]  # the spec's k


def test_a_file_of_the_same_name_wins_and_published_prefix_forces_the_run(capsys, site, monkeypatch):
    _server, tmp_path, files = site
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "pub-rankify").write_bytes(files["rankify.json"])
    code, out, err = _cli(capsys, "score", "--run", "pub-rankify", "-s", "pubq", "--format", "rankify", "--no-progress",
                          "--results-dir", str(tmp_path / "r1"))
    assert code == 0, err
    assert "the file pub-rankify is scored" in err and "published:pub-rankify" in err
    assert "published_run" not in _result(tmp_path / "r1")["retriever"]["parameters"]
    code, out, err = _cli(capsys, "score", "--run", "published:pub-rankify", "--no-progress", "--results-dir", str(tmp_path / "r2"))
    assert code == 0, err
    assert _result(tmp_path / "r2")["retriever"]["parameters"]["published_run"] == "pub-rankify"
    code, out, err = _cli(capsys, "score", "--run", "pub-rankify", "-s", "nq", "--no-progress")
    assert code == 2 and "no such" not in err  # the file wins; its questions are not nq's
    code, out, err = _cli(capsys, "score", "--run", "published:pub-rankify", "-s", "nq", "--no-progress")
    assert code == 2 and "answers suite 'pubq', not 'nq'" in err
    code, out, err = _cli(capsys, "score", "--run", "pub-nothing", "--no-progress")
    assert code == 2 and "no such file, and no published run of that name" in err


def test_rerank_works_on_a_published_run(capsys, site):
    from helpers.fake_rerankers import registries_with_fake_rerankers

    _server, tmp_path, _files = site
    with registries_with_fake_rerankers():
        code, out, err = _cli(capsys, "score", "--run", "pub-upr", "--rerank", "test-title", "--rerank-depth", "3",
                              "--no-progress", "--results-dir", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "c"))
    assert code == 0, err
    data = _result(tmp_path / "results")
    assert data["reranker"]["name"] == "test-title" and data["reranker"]["depth"] == 3
    ranks = data["first_hit_ranks"]["test"]
    # A streamed run is kept to max(re-rank depth, largest cutoff) = 5 passages a question, and
    # re-ranking the top 3 moves hits within them only: a first hit at 3 or 4 stays where it was.
    assert data["depth"] == 5
    assert all(ranks[q] == (r if r is not None and r < 5 else None) for q, r in _expected_ranks().items() if r is None or r >= 3)
    assert all(ranks[q] is not None and ranks[q] < 3 for q, r in _expected_ranks().items() if r is not None and r < 3)


def test_reproduce_runs_fetches_scores_and_checks_each_against_its_row(capsys, site):
    _server, tmp_path, _files = site
    results = tmp_path / "results"
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-dpr", "--run", "pub-upr", "--run", "pub-rankify",
                          "--no-progress", "--results-dir", str(results))
    assert code == 0, err
    assert out.count("result written to") == 3 and len(list(results.glob("*.json"))) == 3
    lines = [line for line in out.splitlines() if "pub-table" in line]
    assert len(lines) == 6  # two cutoffs of three rows
    assert all("OK" in line for line in lines if "UPR-like" not in line or "top-1" in line)
    assert any("DRIFT" in line and "UPR-like" in line and "top-5" in line for line in lines)
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-upr", "--check", "--no-progress", "--results-dir", str(results))
    assert code == 1


def test_reproduce_runs_offline_names_each_missing_run_in_one_line(capsys, site, monkeypatch):
    _server, tmp_path, _files = site
    monkeypatch.setenv("HARNESS_OFFLINE", "1")
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-dpr", "--run", "pub-rankify", "--check", "--no-progress",
                          "--results-dir", str(tmp_path / "results"))
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("harness: published run")]
    assert len(lines) == 2
    for line, file in zip(lines, ("dpr.json.gz", "rankify.json")):
        assert f"/{file}" in line and str(tmp_path / "data" / "runs" / file) in line
    assert "2 of 2 published runs could not be scored" in err


def test_reproduce_runs_scores_the_others_when_one_run_file_is_broken(capsys, site):
    """A broken file (a score of 400 digits, an internal error before) is named with its run;
    the other runs are scored and compared, and the command exits 1 without --check too."""
    _server, tmp_path, _files = site
    qa = _questions()
    text = json.dumps(_dpr_records(qa, _passages(qa)), indent=2).replace('"score": "90.0"', '"score": 1' + "0" * 400, 1)
    (tmp_path / "site" / "dpr.json.gz").write_bytes(gzip.compress(text.encode()))
    results = tmp_path / "results"
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-dpr", "--run", "pub-upr", "--run", "pub-rankify",
                          "--no-progress", "--results-dir", str(results))
    assert code == 1, err
    (line,) = [line for line in err.splitlines() if line.startswith("harness: published run")]
    assert line.startswith("harness: published run pub-dpr: ") and "dpr.json.gz:" in line and "too large for a float" in line
    assert "1 of 3 published runs could not be scored" in err
    assert out.count("result written to") == 2 and len(list(results.glob("*.json"))) == 2
    assert sum("pub-table" in line for line in out.splitlines()) == 4  # two cutoffs of the two rows scored


def test_reproduce_runs_names_an_internal_error_of_one_run_and_goes_on(capsys, site, monkeypatch):
    import harness.runfiles.published as published

    _server, tmp_path, _files = site
    real = published.score_published_run

    def broken(run, **options):
        if run.name == "pub-upr":
            raise ZeroDivisionError("a bug in a reader")
        return real(run, **options)

    monkeypatch.setattr(published, "score_published_run", broken)
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-upr", "--run", "pub-rankify", "--no-progress",
                          "--results-dir", str(tmp_path / "results"))
    assert code == 1 and "Traceback" not in err
    assert "harness: published run pub-upr: internal error: ZeroDivisionError: a bug in a reader" in err
    assert "published run pub-rankify: result written to" in out


def test_data_verify_accepts_published_runs(capsys, site):
    _server, tmp_path, files = site
    code, out, err = _cli(capsys, "data", "verify", "pub-dpr", "--no-progress")
    assert code == 0 and "is not fetched (harness data fetch pub-dpr)" in out, (out, err)
    assert _cli(capsys, "data", "fetch", "pub-dpr", "pub-rankify", "--no-progress")[0] == 0
    code, out, err = _cli(capsys, "data", "verify", "pub-dpr", "pub-rankify", "--no-progress")
    assert code == 0, err
    assert "runs/dpr.json.gz (recorded sha256)" in out and "runs/rankify.json (pinned sha256)" in out
    assert "2 file(s) ok, 0 bad" in out
    code, out, err = _cli(capsys, "data", "verify", "--no-progress")  # every suite's files and every run there
    assert code == 0 and "runs/dpr.json.gz" in out and "runs/rankify.json" in out
    with open(tmp_path / "data" / "runs" / "dpr.json.gz", "ab") as f:
        f.write(b"x")
    code, out, err = _cli(capsys, "data", "verify", "pub-dpr", "--no-progress")
    assert code == 1 and "BAD" in out and "dpr.json.gz" in out


def test_upr_reranked_shards_merged_in_listdir_order_score_as_the_suites_order(capsys, site):
    """UPR's upr.py re-ranks on several GPUs (rank r takes every W-th question) and merges the
    ranks' files in os.listdir order: the released file's questions are not in suite order. They
    are matched by text, so it scores as the same rankings in order; a question of another set,
    or one more than the suite has, is one line."""
    _server, tmp_path, _files = site
    qa = _questions()
    records = _dpr_records(qa, _passages(qa), text=False, int_ids=True)
    for record in records:
        for j, ctx in enumerate(record["ctxs"]):
            ctx["score"] = -1.5 - j  # UPR's scores: log-likelihoods, best first
    world = 3
    shards = {f"rank{r}.json": [records[i] for i in range(r, len(records), world)] for r in range(world)}
    merged = [record for name in ("rank2.json", "rank0.json", "rank1.json") for record in shards[name]]
    assert [r["question"] for r in merged] != [r["question"] for r in records]
    runs = {"ordered.tar.gz": records, "merged.tar.gz": merged}
    ranks = {}
    for name, items in runs.items():
        code, out, err = _score_file(capsys, tmp_path, name, _tar_gz("nq-test.json", json.dumps(items, indent=4).encode()), "upr")
        assert code == 0, err
        (result,) = (tmp_path / "results").glob(f"*--{name.split('.')[0]}--*.json")
        ranks[name] = json.loads(result.read_text())["first_hit_ranks"]
    assert ranks["merged.tar.gz"] == ranks["ordered.tar.gz"] == {"test": _expected_ranks()}
    twice = merged + [merged[0]]
    code, out, err = _score_file(capsys, tmp_path, "twice.tar.gz", _tar_gz("nq-test.json", json.dumps(twice, indent=4).encode()), "upr")
    errors = [line for line in err.strip().splitlines() if not line.startswith("harness: warning:")]
    assert code == 2 and len(errors) == 1, err
    line = json.dumps(twice, indent=4).count("\n", 0, json.dumps(twice, indent=4).rindex("{\n        \"question\""))
    assert f"twice.tar.gz:{line + 1}: item {len(merged)}: question {merged[0]['question']!r} again" in errors[0], errors


def test_unknown_run_names_are_refused_before_any_work(capsys, site):
    _server, tmp_path, _files = site
    code, out, err = _cli(capsys, "reproduce", "--run", "pub-nope", "--results-dir", str(tmp_path / "results"))
    assert code == 2 and "pub-nope" in err and "Traceback" not in err
    code, out, err = _cli(capsys, "data", "fetch", "pub-nope")
    assert code == 2 and "pub-nope" in err


# ---- malformed input: one line naming the file and the line ---------------------------------------


def _score_file(capsys, tmp_path, name: str, data: bytes, fmt: str):
    path = tmp_path / name
    path.write_bytes(data)
    return _cli(capsys, "score", "--run", str(path), "-s", "pubq", "--format", fmt, "--no-progress",
                "--results-dir", str(tmp_path / "results"))


def test_malformed_streamed_runs_name_file_and_line(capsys, site):
    _server, tmp_path, _files = site
    qa = _questions()
    records = _dpr_records(qa, _passages(qa), int_ids=True)
    text = json.dumps(records, indent=1)
    broken = text.replace('"score": 86.0', '"score": "lots"', 1)
    line = broken[: broken.index('"lots"')].count("\n") + 1
    item_line = broken[: broken.rindex('"question"', 0, broken.index('"lots"'))].count("\n")  # the item's "{"
    code, out, err = _score_file(capsys, tmp_path, "bad.json.gz", gzip.compress(broken.encode()), "rankify")
    errors = [line for line in err.strip().splitlines() if not line.startswith("harness: warning:")]  # the suite's first fetch
    assert code == 2 and len(errors) == 1, err
    assert f"bad.json.gz:{item_line}: item 0: ctxs[4]: score must be a number, got 'lots'" in err, (err, line)
    truncated = text[: len(text) // 2]
    code, out, err = _score_file(capsys, tmp_path, "cut.json.gz", gzip.compress(truncated.encode()), "dpr")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cut.json.gz:" in err and "invalid JSON" in err
    bad_syntax = text.replace('"has_answer": false', '"has_answer" false', 3)
    want = bad_syntax.index('"has_answer" false')
    code, out, err = _score_file(capsys, tmp_path, "syntax.json.gz", gzip.compress(bad_syntax.encode()), "dpr")
    assert code == 2 and f"syntax.json.gz:{bad_syntax[:want].count(chr(10)) + 1}: invalid JSON" in err, err
    foreign = [records[0], dict(records[1], question="a question of another set")]
    code, out, err = _score_file(capsys, tmp_path, "other.json", json.dumps(foreign).encode(), "upr")
    assert code == 2 and "other.json:1: item 1: question 'a question of another set' is not a question of the suite" in err, err
    no_member = _tar_gz("x/readme.txt", b"{}")
    code, out, err = _score_file(capsys, tmp_path, "none.tar.gz", no_member, "upr")
    assert code == 2 and "none.tar.gz: the archive has no .json member (members: 'downloads/README', 'x/readme.txt')" in err


def test_a_malformed_run_spec_is_one_line_and_left_out(capsys, site, tmp_path):
    bad = tmp_path / "runs-spec" / "runs"
    bad.mkdir(parents=True)
    (bad / "x.toml").write_text('name = "x"\ndescription = "d"\nsuite = "nq"\nformat = "dpr-json"\nurl = "https://e/x"\n'
                                'path = "x.json"\nmember = "a.json"\nlicense = "l"\ncitation = "c"\n')
    with pytest.raises(InputFileError, match=r"x.toml: 'member' is only for compression"):
        read_run_spec(bad / "x.toml")
    (bad / "x.toml").write_text('name = "x"\ndescription = "d"\nsuite = "nq"\nformat = "trec-ish"\nurl = "https://e/x"\n'
                                'path = "x.json"\nlicense = "l"\ncitation = "c"\n')
    with pytest.raises(InputFileError, match=r"'format' must be one of"):
        read_run_spec(bad / "x.toml")


# ---- the streaming decoder -------------------------------------------------------------------------


def test_tiny_read_chunks_give_the_same_entries_and_a_bounded_buffer():
    records = [
        {"question": f"q{i} \u00e9\u2019", "answers": ["a"], "ctxs": [{"id": j, "score": -j, "text": "x " * 40 + "\\\"]}"}
                                                                           for j in range(20)]}
        for i in range(200)
    ]
    data = json.dumps(records, indent=2).encode()
    whole = list(run_format("rankify-json").entries(io.BytesIO(data), "f", 1 << 20))
    members = JsonMembers(io.BytesIO(data), "f", chunk=7)
    largest = 0
    count = 0
    for _key, value, _line in members:
        largest = max(largest, len(members.buffer))
        count += 1
    assert count == 200
    one_item = len(json.dumps(records[0], indent=2))
    assert largest < 4 * one_item  # one member and the read-ahead, never the file
    small = list(run_format("rankify-json").entries(io.BytesIO(data), "f", 7))
    assert [(e.ids, e.scores, e.texts, e.question, e.line) for e in small] == [
        (e.ids, e.scores, e.texts, e.question, e.line) for e in whole
    ]
    assert whole[1].line == data[: data.index(b'"q1 ')].count(b"\n")
    object_run = json.dumps({"7": {"question": "q", "contexts": [{"docid": "wiki:3", "score": 1.5, "text": "T\nbody"}]}}).encode()
    (entry,) = run_format("pyserini-json").entries(io.BytesIO(object_run), "f", 3)
    assert (entry.qid, entry.ids, entry.titles, entry.texts) == ("7", ["3"], ["T"], ["body"])
