"""Released runs on the harness's own suites: every Rankify and UPR spec loads and names what
exists; UPR's per-relation archives and Rankify's one-file EntityQuestions runs score, through the
loopback server, exactly as the same rankings written as a TREC run; question order is matched by
text (a shuffled file scores as the ordered one) and a question that matches nothing, or cannot be
told apart, is one line naming the file and the line."""

from __future__ import annotations

import csv
import io
import json
import random
import tarfile
import tomllib
from pathlib import Path

import pytest

import harness.registry
from harness.cli.main import main
from harness.errors import InputFileError
from harness.runfiles.published import read_run_spec, row_to_check
from harness.runfiles.registered import format_names
from harness.runfiles.stream import PER_PART, part_of_member
from helpers.loopback import serving
from helpers.paths import REPO

#: The runs added for the suites' missing releases (Rankify's pre_defined_datasets.py at 5604499,
#: UPR's utils/download_data.py at a05d296).
NEW_RUNS = (
    "rankify-bm25-entityquestions-test", "rankify-dpr-entityquestions-test", "rankify-mss-dpr-entityquestions-test",
    "rankify-contriever-entityquestions-test", "rankify-bm25-curated-test", "rankify-ance-curated-test",
    "rankify-ance-nq-test", "rankify-ance-trivia-test", "rankify-ance-webq-test", "rankify-bge-curated-test",
    "rankify-bge-nq-dev", "rankify-bge-nq-test", "rankify-bge-trivia-test", "rankify-bge-webq-test",
    "rankify-colbert-curated-test", "rankify-colbert-nq-dev", "rankify-colbert-nq-test", "rankify-colbert-trivia-dev",
    "rankify-colbert-trivia-test", "rankify-colbert-webq-test",
    "upr-bm25-entityquestions-test", "upr-contriever-entityquestions-test", "upr-dpr-entityquestions-test",
    "upr-mss-dpr-entityquestions-test", "upr-mss-entityquestions-test", "upr-mss-squad1-test",
    "upr-dpr-reranked-nq-dev", "upr-dpr-reranked-trivia-dev", "upr-dpr-reranked-squad1-test",
    "upr-mss-dpr-reranked-nq-dev", "upr-mss-dpr-reranked-trivia-dev", "upr-mss-dpr-reranked-squad1-test",
    "upr-mss-reranked-nq-dev", "upr-mss-reranked-trivia-dev", "upr-mss-reranked-squad1-test", "upr-mss-bm25-union-nq-dev",
)

SPEC_DIR = REPO / "datasets_spec" / "runs"


def test_every_new_spec_loads_names_a_known_suite_and_format_and_its_row():
    runs = {r.name: r for r in harness.registry.registry("runs")}
    tables = list(harness.registry.registry("published"))
    suites = harness.registry.suites()
    for name in NEW_RUNS:
        assert (SPEC_DIR / f"{name}.toml").is_file(), name
        run = read_run_spec(SPEC_DIR / f"{name}.toml")
        assert runs[name] == run
        assert run.suite in suites and run.format in format_names(), name
        assert not run.sha256 and run.size is None, name  # nothing is known of them: nothing is made up
        assert run.url.startswith(("https://huggingface.co/datasets/abdoelsayed/", "https://www.dropbox.com/s/")), name
        assert not run.table or row_to_check(run, tables, name) is not None, name
    per_part = [n for n in NEW_RUNS if runs[n].member == PER_PART]
    assert per_part == [n for n in NEW_RUNS if n.startswith("upr-") and "entityquestions" in n]
    assert all(runs[n].suite == "entityquestions" and runs[n].compression == "tar.gz" for n in per_part)
    eq_parts = {p["name"] for p in tomllib.loads((SPEC_DIR.parent / "suites" / "entityquestions.toml").read_text())["parts"]}
    assert len(eq_parts) == 24
    # every relation is told apart by name: P17 is not P170, P20 not P201 ...
    for part in eq_parts:
        assert part_of_member(f"entity-questions/{part}.test.json", sorted(eq_parts)) == [part]
    reproduced = {n: (runs[n].table, runs[n].system) for n in NEW_RUNS if runs[n].table}
    assert reproduced["rankify-bm25-entityquestions-test"] == ("sciavolino2021-table1", "BM25")
    assert reproduced["upr-mss-dpr-entityquestions-test"] == ("sachan2022-upr-supervised", "MSS-DPR")
    assert reproduced["upr-mss-reranked-squad1-test"] == ("sachan2022-upr-unsupervised", "MSS + UPR (T0-3B, top-1000 re-ranked)")


def test_a_spec_with_a_member_pattern_other_than_per_part_is_refused(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text('name = "x"\ndescription = "d"\nsuite = "entityquestions"\nformat = "upr-json"\nurl = "https://e/x.tar.gz"\n'
                   'path = "x.tar.gz"\ncompression = "tar.gz"\nmember = "{relation}.json"\nlicense = "l"\ncitation = "c"\n')
    with pytest.raises(InputFileError, match=r"x.toml: 'member' is a file name inside the archive, or \"\{part\}\""):
        read_run_spec(bad)


# ---- a small relation suite served by the loopback server -------------------------------------------

PARTS = ("P17", "P170", "P19")
PER = 6  # questions per relation
DEPTH = 6


def _relations():
    """Each relation's questions; P170 has one text twice with different answers, P19 one text
    twice with the same answers (both as in EntityQuestions' own files)."""
    out = {}
    for r, part in enumerate(PARTS):
        items = [{"question": f"Which place is linked to entity {r}-{i} by {part}?", "answers": [f"Answer{r}x{i}"]} for i in range(PER)]
        out[part] = items
    out["P170"][4] = {"question": out["P170"][1]["question"], "answers": ["Answer1x4"]}
    out["P19"][5] = {"question": out["P19"][2]["question"], "answers": list(out["P19"][2]["answers"])}
    return out


def _rankings(relations, seed=0):
    """Per relation, per question: DEPTH passage ids best first, its answer planted at a rank."""
    rng = random.Random(seed)
    passages, rankings = {}, {}
    for r, part in enumerate(PARTS):
        rankings[part] = []
        for i, item in enumerate(relations[part]):
            ids = [10_000 + 1000 * r + DEPTH * i + j for j in range(DEPTH)]
            planted = rng.choice([0, 1, 3, 5, None])
            for j, pid in enumerate(ids):
                passages[pid] = f"the answer is {item['answers'][0]}" if j == planted else f"nothing about {pid}"
            rankings[part].append(ids)
    return passages, rankings


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("entity-questions")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _upr_records(items, ids, order):
    return [{"question": items[i]["question"], "answers": items[i]["answers"],
             "ctxs": [{"id": pid, "has_answer": False} for pid in ids[i]]} for i in order]


def _pyserini_records(items, ids, order):
    """UPR's BM25 files come from pyserini: an object keyed by the relation file's own qids."""
    return {str(i): {"question": items[i]["question"], "answers": items[i]["answers"],
                     "contexts": [{"docid": str(pid), "score": 50.0 - j, "has_answer": False} for j, pid in enumerate(ids[i])]}
            for i in order}


@pytest.fixture
def relation_site(tmp_path, monkeypatch, shared_data):
    relations = _relations()
    passages, rankings = _rankings(relations)
    site = tmp_path / "site"
    site.mkdir()
    with open(site / "psgs.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        for pid, text in sorted(passages.items()):
            writer.writerow([pid, text, f"Title {pid}"])
    for part in PARTS:
        (site / f"{part}.test.json").write_text(json.dumps(relations[part]), encoding="utf-8")
    rng = random.Random(7)
    shuffled = {part: rng.sample(range(PER), PER) for part in PARTS}
    files = {
        # list-shaped members in each relation's own (shuffled) order, and the archive lacks nothing
        "upr-eq.tar.gz": _tar_gz({f"entity-questions/{part}.test.json":
                                  json.dumps(_upr_records(relations[part], rankings[part], shuffled[part])).encode() for part in PARTS}),
        # pyserini-shaped members (UPR's BM25), relations in another archive order
        "upr-eq-bm25.tar.gz": _tar_gz({f"entity-questions/{part}.test.json":
                                       json.dumps(_pyserini_records(relations[part], rankings[part], shuffled[part])).encode()
                                       for part in reversed(PARTS)}),
        # Rankify's one file for every relation, questions of all relations interleaved
        "rankify-eq.json": json.dumps([
            {"question": relations[part][i]["question"], "answers": relations[part][i]["answers"], "query_id": f"{part}:{i}",
             "ctxs": [{"id": pid, "score": 9.0 - j, "has_answer": False} for j, pid in enumerate(rankings[part][i])]}
            for part, i in random.Random(3).sample([(p, i) for p in PARTS for i in range(PER)], len(PARTS) * PER)
        ]).encode(),
    }
    for name, data in files.items():
        (site / name).write_bytes(data)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HARNESS_OFFLINE", raising=False)
    with serving(site) as server:
        specs = tmp_path / "specs"
        for sub in ("suites", "corpora", "runs"):
            (specs / sub).mkdir(parents=True)
        url = server.url
        (specs / "corpora" / "eqc.toml").write_text(
            f'name = "eqt-corpus"\ndescription = "d"\nurl = "{url}/psgs.tsv"\npath = "eqt/psgs.tsv"\nformat = "dpr-tsv"\n'
            'license = "l"\ncitation = "c"\n')
        parts = "".join(f'[[parts]]\nname = "{p}"\nurl = "{url}/{p}.test.json"\npath = "eqt/{p}.test.json"\nformat = "json-list"\n'
                        for p in PARTS)
        (specs / "suites" / "eqt.toml").write_text(
            'name = "eqt"\ndescription = "d"\nmatch = "string"\ncorpus = "eqt-corpus"\nlicense = "l"\ncitation = "c"\n'
            f'default_k = [1, 5]\n{parts}')
        for name, file, extra, fmt in (
            ("eqt-upr", "upr-eq.tar.gz", f'compression = "tar.gz"\nmember = "{PER_PART}"\n', "upr-json"),
            ("eqt-upr-bm25", "upr-eq-bm25.tar.gz", f'compression = "tar.gz"\nmember = "{PER_PART}"\n', "upr-json"),
            ("eqt-rankify", "rankify-eq.json", "", "rankify-json"),
        ):
            (specs / "runs" / f"{name}.toml").write_text(
                f'name = "{name}"\ndescription = "d"\nsuite = "eqt"\nformat = "{fmt}"\nurl = "{url}/{file}"\npath = "runs/{file}"\n'
                f'{extra}depth = {DEPTH}\nk = [1, 5]\nlicense = "l"\ncitation = "c"\n')
        monkeypatch.setenv("HARNESS_SPEC_PATH", str(specs))
        from harness.plugins import loaded_plugins
        from harness.registry import KINDS, Registry

        monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
        yield tmp_path, relations, rankings


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _score(capsys, folder: Path, *args) -> dict:
    code, out, err = _cli(capsys, "score", *args, "--no-progress", "--results-dir", str(folder))
    assert code == 0, err
    (path,) = folder.glob("*.json")
    return json.loads(path.read_text())


def _trec(tmp_path: Path, rankings) -> Path:
    """The same rankings as a TREC run, qids the suite's own question ids, in suite order."""
    suite = harness.registry.suites().get("eqt").load()
    lines = []
    for part in suite.parts:
        for question, ids in zip(part.questions, rankings[part.name]):
            lines += [f"{question.id} Q0 {pid} {j + 1} {100.0 - j} ref" for j, pid in enumerate(ids)]
    path = tmp_path / "same.trec"
    path.write_text("\n".join(lines) + "\n")
    return path


def _paired(ranks: dict) -> dict:
    """First-hit ranks with P19's questions 2 and 5 (same text, same answers) as one sorted pair."""
    out = {part: dict(by_q) for part, by_q in ranks.items()}
    pair = sorted((out["P19"].pop("P19-2"), out["P19"].pop("P19-5")), key=lambda r: (r is None, r))
    out["P19"]["pair"] = pair
    return out


@pytest.mark.parametrize("name", ["eqt-upr", "eqt-upr-bm25", "eqt-rankify"])
def test_a_per_relation_or_one_file_run_scores_exactly_as_the_same_ranking_in_trec(capsys, relation_site, name):
    tmp_path, _relations_, rankings = relation_site
    ours = _score(capsys, tmp_path / "ours", "--run", name)
    trec = _score(capsys, tmp_path / "trec", "--run", str(_trec(tmp_path, rankings)), "-s", "eqt", "--format", "trec", "--k", "1,5")
    assert sorted(ours["first_hit_ranks"]) == list(sorted(PARTS))
    if name == "eqt-upr-bm25":  # keyed by the relation file's qids: every question where it belongs
        assert ours["first_hit_ranks"] == trec["first_hit_ranks"]
    else:  # P19's two questions of one text and one answer are interchangeable: compare them as a pair
        assert _paired(ours["first_hit_ranks"]) == _paired(trec["first_hit_ranks"])
    assert ours["metrics"] == trec["metrics"]
    hits = [r for by_q in ours["first_hit_ranks"].values() for r in by_q.values() if r is not None]
    assert 0 < len(hits) < len(PARTS) * PER  # the planted answers, and questions without one


def test_a_shuffled_upr_file_scores_as_the_ordered_one(capsys, relation_site):
    tmp_path, relations, rankings = relation_site
    suite = harness.registry.suites().get("eqt").load()
    part = suite.parts[1]  # P170: one text twice, told apart by its answers
    questions = relations[part.name]
    ordered = tmp_path / "ordered.json"
    ordered.write_text(json.dumps(_upr_records(questions, rankings[part.name], range(PER))))
    shuffled = tmp_path / "shuffled.json"
    shuffled.write_text(json.dumps(_upr_records(questions, rankings[part.name], [4, 2, 0, 5, 1, 3]), indent=1))
    results = []
    for i, path in enumerate((ordered, shuffled)):
        results.append(_score(capsys, tmp_path / f"r{i}", "--run", str(path), "-s", "eqt", "--format", "upr"))
    assert results[0]["first_hit_ranks"] == results[1]["first_hit_ranks"]
    assert results[0]["metrics"] == results[1]["metrics"]
    # the P170 questions only were given: the other relations count as missing, the same in both
    assert results[0]["first_hit_ranks"]["P170"] == _score(
        capsys, tmp_path / "t", "--run", str(_trec(tmp_path, rankings)), "-s", "eqt", "--format", "trec", "--k", "1,5",
    )["first_hit_ranks"]["P170"]


def _one_line(err: str) -> str:
    """The one error line (warnings aside: the question files these suites fetch pin no sha256)."""
    lines = [line for line in err.strip().splitlines() if line and not line.startswith("harness: warning:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_question_matching_nothing_or_ambiguous_is_one_line_with_file_and_line(capsys, relation_site):
    tmp_path, relations, rankings = relation_site
    items, ids = relations["P170"], rankings["P170"]
    records = _upr_records(items, ids, range(PER))
    text = json.dumps(records, indent=1)
    bad = json.loads(text)
    bad[3]["question"] = "Who wrote a question nobody asked?"
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps(bad, indent=1))
    code, _out, err = _cli(capsys, "score", "--run", str(path), "-s", "eqt", "--format", "upr", "--no-progress")
    starts = [n + 1 for n, s in enumerate(json.dumps(bad, indent=1).split("\n")) if s == " {"]
    assert code == 2
    assert f"unknown.json:{starts[3]}: item 3: question 'Who wrote a question nobody asked?' is not a question of the suite" in _one_line(err), err
    # the duplicated P170 text with answers that match neither of its two questions
    ambiguous = json.loads(text)
    ambiguous[4]["answers"] = ["somebody else"]
    ambiguous[1]["answers"] = ["somebody else"]
    path = tmp_path / "ambiguous.json"
    path.write_text(json.dumps(ambiguous, indent=1))
    code, _out, err = _cli(capsys, "score", "--run", str(path), "-s", "eqt", "--format", "upr", "--no-progress")
    message = _one_line(err)
    assert code == 2 and f"ambiguous.json:{starts[1]}: item 1: question" in message
    assert "matches 2 suite questions" in message and "single out none" in message
    # one question given twice where the suite has it once
    twice = json.loads(text)
    twice[5] = dict(twice[0])
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(twice, indent=1))
    code, _out, err = _cli(capsys, "score", "--run", str(path), "-s", "eqt", "--format", "upr", "--no-progress")
    message = _one_line(err)
    assert code == 2 and f"twice.json:{starts[5]}: item 5: question" in message and f"line(s) {starts[0]}" in message


def test_per_part_archive_problems_are_one_line(capsys, relation_site, monkeypatch):
    tmp_path, relations, rankings = relation_site
    cases = {
        "noname.tar.gz": ({"eq/relation.json": b"[]"}, "member 'eq/relation.json' names no part of the suite"),
        "twice.tar.gz": ({"eq/P19.json": b"[]", "other/P19.test.json": b"[]"},
                         "members 'eq/P19.json' and 'other/P19.test.json' are both part P19"),
        "empty.tar.gz": ({"eq/README": b"x"}, "the archive has no .json member (members: 'entity-questions', 'eq/README')"),
    }
    specs = Path(harness.registry.registry("runs").get("eqt-upr").source).parent
    for file, (members, expected) in cases.items():
        (tmp_path / "data" / "runs").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / "runs" / file).write_bytes(_tar_gz(members))
        (specs / "eqt-bad.toml").write_text(
            f'name = "eqt-bad"\ndescription = "d"\nsuite = "eqt"\nformat = "upr-json"\nurl = "http://127.0.0.1:9/{file}"\n'
            f'path = "runs/{file}"\ncompression = "tar.gz"\nmember = "{PER_PART}"\nlicense = "l"\ncitation = "c"\n')
        from harness.plugins import loaded_plugins
        from harness.registry import KINDS, Registry

        monkeypatch.setattr(harness.registry, "_cache", {k: Registry.collect(loaded_plugins().manager, k) for k in KINDS})
        code, _out, err = _cli(capsys, "score", "--run", "eqt-bad", "--no-progress", "--results-dir", str(tmp_path / "r"))
        assert code == 2 and expected in _one_line(err), (file, err)
