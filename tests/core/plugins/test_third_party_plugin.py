"""A real third-party plugin distribution, installed with pip and driven through the CLI.

``examples/harness-plugin-example`` is built and installed with pip into a temporary directory
(offline: ``--no-index --no-build-isolation``) and put on ``PYTHONPATH`` of ``harness`` run in a
subprocess, so plugin discovery goes through real entry points and distribution metadata, exactly
as for a user who ran ``pip install harness-plugin-example``. Three tiny broken distributions,
written here, show how a broken plugin, a duplicate retriever name and a misspelled hook are
reported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.paths import REPO

EXAMPLE = REPO / "examples" / "harness-plugin-example"

#: Expected first-hit ranks of example-overlap on example-capitals, worked out by hand from the
#: word overlaps (score = distinct lowercased question words found in title + text):
#: - plain questions "What is the capital of X?": X's passage shares 5 words (the, capital, of,
#:   is, x); every other passage shares at most 4 -> rank 0.
#: - q02 "Which town is the capital of Quenmark?": p02 "... Ostbury, a market town." shares 6 -> 0.
#: - q04 "Which city is the capital of the Republic of Brellin?": the distractor d01 "The Republic
#:   of Brellin is a city state whose capital markets ..." shares 7, p04 (Kessary) 5 -> rank 1.
#: - q05 "What is the capital of Tamsk today?": d02 "Until 1920 the capital of Tamsk was Vorny;
#:   today ..." shares 6, p05 (Lindra) 5 -> rank 1.
#: - q07 "Name the capital of Corvenna.": p07 shares 4, the others at most 3 -> rank 0.
#: - q10 "Which city hosts the government of Pelloria?": p10 "Pelloria's parliament sits in
#:   Caddon." shares only "pelloria"; nine other capitals' passages share "the" and "of" -> not
#:   in the top 5, and no other passage names Caddon -> None.
EXPECTED_RANKS = {
    "plain": {"q01": 0, "q03": 0, "q06": 0, "q08": 0, "q09": 0},
    "tricky": {"q02": 0, "q04": 1, "q05": 1, "q07": 0, "q10": None},
}
#: So top-1 is 5/5 on plain and 2/5 on tricky (macro 0.7), top-5 is 5/5 and 4/5 (macro 0.9).
EXPECTED_ACCURACY = {"1": 0.7, "5": 0.9}

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pip") is None or importlib.util.find_spec("setuptools") is None,
    reason="needs pip and setuptools in the test environment to install plugin distributions",
)


# --- building and installing distributions ---------------------------------------------------


def write_distribution(root: Path, *, dist: str, version: str, entry: str, module: str, source: str) -> Path:
    """A one-module setuptools distribution whose module is a ``harness`` entry point."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools>=64"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{dist}"
            version = "{version}"

            [project.entry-points.harness]
            {entry} = "{module}"

            [tool.setuptools]
            py-modules = ["{module}"]
            """
        ),
        encoding="utf-8",
    )
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return root


BROKEN_SOURCE = """\
    raise ImportError("harness-broken-plugin is broken on purpose")
"""

DUPLICATE_SOURCE = """\
    from harness import hookimpl
    from harness.api import RetrieverSpec


    @hookimpl
    def register_retrievers(register):
        register(RetrieverSpec(name="bm25", description="a second bm25", load=lambda: None))
"""

RAISING_SOURCE = """\
    from harness import hookimpl
    from harness.api import RetrieverSpec


    @hookimpl
    def register_retrievers(register):
        register(RetrieverSpec(name="raising-one", description="registered, then the hook raises", load=lambda: None))
        raise RuntimeError("register_retrievers is broken on purpose")


    @hookimpl
    def register_commands(cli):
        raise RuntimeError("register_commands is broken on purpose")
"""

RUN_FORMAT_SOURCE = """\
    from harness import hookimpl
    from harness.api import RunEntry, RunFormatSpec
    from harness.errors import InputFileError

    HEADER = "qid,docid,score"


    def entries(body, name, chunk):
        # a question's lines are together; within them, best first by score
        current, first, hits = None, 0, []

        def entry():
            hits.sort(key=lambda h: -h[1])
            n = len(hits)
            return RunEntry(qid=current, question=None, answers=None, ids=[h[0] for h in hits],
                            scores=[h[1] for h in hits], texts=[None] * n, titles=[None] * n, flags=[None] * n,
                            line=first, where=f"question {current!r}: ")

        for line_no, raw in enumerate(body.read().decode("utf-8").splitlines(), start=1):
            if line_no == 1:
                if raw != HEADER:
                    raise InputFileError(name, f"expected the header {HEADER!r}", line=1)
                continue
            fields = raw.split(",")
            if len(fields) != 3:
                raise InputFileError(name, f"expected 3 comma-separated columns, got {len(fields)}", line=line_no)
            qid, docid, score = fields
            try:
                value = float(score)
            except ValueError:
                raise InputFileError(name, f"score must be a number, got {score!r}", line=line_no) from None
            if qid != current:
                if current is not None:
                    yield entry()
                current, first, hits = qid, line_no, []
            hits.append((docid, value))
        if current is not None:
            yield entry()


    @hookimpl
    def register_run_formats(register):
        register(RunFormatSpec(
            name="example-csv", aliases=("excsv",), description="qid,docid,score with a header line",
            entries=entries, match="qid", sniff=lambda head, reopen: head.startswith(HEADER),
        ))
"""

TYPO_SOURCE = """\
    from harness import hookimpl


    @hookimpl
    def register_retreivers(register):  # misspelled on purpose
        pass
"""


def pip_install(jobs: dict[str, tuple[Path, Path]]) -> None:
    """Install each ``name: (source, target)`` with pip, offline, all at once."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
             "--quiet", "--target", str(target), str(source)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )
        for name, (source, target) in jobs.items()
    }
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"pip install of {name} failed:\n{output}"


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    """Site directories, one per installed distribution: example, broken, duplicate, typo, raising,
    runformat."""
    root = tmp_path_factory.mktemp("third-party")
    example_src = root / "src" / "harness-plugin-example"
    # Build from a copy: pip builds in the source tree and would leave build/ and *.egg-info there.
    shutil.copytree(EXAMPLE, example_src, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    sources = {
        "example": example_src,
        "broken": write_distribution(root / "src" / "broken", dist="harness-broken-plugin", version="0.2.0",
                                     entry="broken", module="harness_broken_plugin", source=BROKEN_SOURCE),
        "duplicate": write_distribution(root / "src" / "duplicate", dist="harness-duplicate-plugin", version="0.1.0",
                                        entry="dup", module="harness_duplicate_plugin", source=DUPLICATE_SOURCE),
        "typo": write_distribution(root / "src" / "typo", dist="harness-typo-plugin", version="0.1.0",
                                   entry="typo", module="harness_typo_plugin", source=TYPO_SOURCE),
        "raising": write_distribution(root / "src" / "raising", dist="harness-raising-plugin", version="0.3.0",
                                      entry="raising", module="harness_raising_plugin", source=RAISING_SOURCE),
        "runformat": write_distribution(root / "src" / "runformat", dist="harness-runformat-plugin", version="0.1.0",
                                        entry="runformat", module="harness_runformat_plugin", source=RUN_FORMAT_SOURCE),
    }
    targets = {name: root / "site" / name for name in sources}
    pip_install({name: (sources[name], targets[name]) for name in sources})
    assert (targets["example"] / "harness_plugin_example" / "__init__.py").is_file()
    return targets


@pytest.fixture(scope="module")
def unavailable_builtins() -> list[str]:
    """Installed plugins that fail to load in this checkout without any third-party plugin (e.g. a
    built-in still being written). They are disabled in the subprocesses, so that strict mode
    judges only the plugins under test."""
    from harness.plugins import load_plugins

    return [failure.name for failure in load_plugins(strict=False).failures]


class Harness:
    """Runs the ``harness`` command line in a subprocess with a given plugin path."""

    def __init__(self, sites: list[Path], workdir: Path, disabled: list[str], *, strict: bool = True):
        self.workdir = workdir
        self.results = workdir / "results"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        env["PYTHONPATH"] = os.pathsep.join([*map(str, sites), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["HARNESS_RESULTS_DIR"] = str(self.results)
        env["HARNESS_CACHE_DIR"] = str(workdir / "cache")
        if strict:
            env["HARNESS_STRICT_PLUGINS"] = "1"
        if disabled:
            env["HARNESS_DISABLE_PLUGINS"] = ",".join(disabled)
        self.env = env

    def __call__(self, *args: str, command: list[str] | None = None) -> subprocess.CompletedProcess:
        command = command or [sys.executable, "-m", "harness.cli.main"]
        return subprocess.run(
            [*command, *args], cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=120
        )


@pytest.fixture
def harness(sites, unavailable_builtins, tmp_path) -> Harness:
    """``harness`` with the example plugin installed, in strict mode."""
    return Harness([sites["example"]], tmp_path, unavailable_builtins)


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def line_for(name: str, output: str) -> str:
    lines = [line for line in output.splitlines() if line.split(" ", 1)[0] == name]
    assert len(lines) == 1, f"expected one line for {name!r} in:\n{output}"
    return lines[0]


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("harness: warning: ")]
    assert len(lines) == 1, f"expected a one-line error, got:\n{proc.stderr}"
    assert lines[0].startswith("harness: error: ")
    return lines[0]


# --- the example plugin ----------------------------------------------------------------------


def test_plugins_lists_the_example_distribution(harness):
    line = line_for("example", ok(harness("plugins")))
    assert "harness-plugin-example 0.1.0" in line
    assert "(harness_plugin_example)" in line
    assert "hooks: register_commands, register_encoders, register_losses, register_retrievers, register_suites, register_variants" in line


def test_list_shows_the_example_retriever_and_suite(harness):
    retrievers = ok(harness("list", "retrievers"))
    assert "word" in line_for("example-overlap", retrievers)
    assert "[encoder from plugin 'example']" in line_for("example-hashing", retrievers)
    assert "hashed bag-of-words" in line_for("example-hashing", ok(harness("list", "encoders")))
    suites = ok(harness("list", "suites"))
    assert line_for("example-capitals", suites).endswith("[synthetic]")


def test_run_example_retriever_on_example_suite(harness):
    out = ok(harness("run", "--retriever", "example-overlap", "--suite", "example-capitals", "--k", "1,5", "--no-progress"))
    assert "suite example-capitals (SYNTHETIC data): 10 questions in 2 part(s), 20 passages" in out
    assert "retriever example-overlap (lowercase=True)" in out
    table = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("plain", "tricky", "macro"))}
    assert table["plain"][-2:] == ["100.00", "100.00"]
    assert table["tricky"][-2:] == ["40.00", "80.00"]
    assert table["macro"][-2:] == ["70.00", "90.00"]

    files = sorted(harness.results.glob("*.json"))
    assert [f.name.rsplit("--", 1)[0] for f in files] == ["example-capitals--example-overlap"]
    assert f"result written to {files[0]}" in out
    result = json.loads(files[0].read_text(encoding="utf-8"))
    assert result["retriever"] == {"name": "example-overlap", "plugin": "example", "parameters": {"lowercase": True}}
    assert result["suite"]["name"] == "example-capitals" and result["suite"]["synthetic"] is True
    assert result["k"] == [1, 5] and result["depth"] == 5
    assert result["first_hit_ranks"] == EXPECTED_RANKS
    assert result["metrics"]["accuracy"]["macro"] == pytest.approx(EXPECTED_ACCURACY)
    parts = result["metrics"]["accuracy"]["parts"]
    assert parts["plain"] == pytest.approx({"1": 1.0, "5": 1.0})
    assert parts["tricky"] == pytest.approx({"1": 0.4, "5": 0.8})
    assert result["versions"]["plugins"]["example"] == {"distribution": "harness-plugin-example", "version": "0.1.0"}


def test_run_passes_retriever_options(harness):
    ok(harness("run", "-r", "example-overlap", "-s", "example-capitals", "--k", "1", "-o", "lowercase=false", "--no-progress"))
    (file,) = harness.results.glob("*.json")
    assert json.loads(file.read_text(encoding="utf-8"))["retriever"]["parameters"] == {"lowercase": False}

    error = one_line_error(harness("run", "-r", "example-overlap", "-s", "example-capitals", "-o", "stem=true"))
    assert "has no option 'stem'" in error and "lowercase" in error


def test_plugin_command(harness):
    out = ok(harness("example-hello", "--name", "tester"))
    assert out.strip() == (
        "hello, tester, from harness-plugin-example 0.1.0: suite 'example-capitals' has 10 questions over 20 passages"
    )
    assert "example-hello" in ok(harness("--help"))


def test_console_script(harness):
    script = Path(sys.executable).parent / ("harness.exe" if os.name == "nt" else "harness")
    if not script.exists():
        pytest.skip(f"no console script at {script}")
    line_for("example", ok(harness("plugins", command=[str(script)])))


def test_check_retriever_by_name_on_the_installed_plugin(harness):
    code = (
        "from harness.testing import check_retriever\n"
        "check = check_retriever('example-overlap')\n"
        "print(check.parameters, check.accuracy)\n"
    )
    out = ok(harness(command=[sys.executable, "-c", code]))
    assert out.strip() == "{'lowercase': True} {1: 1.0, 5: 1.0}"


def test_example_retriever_on_builtin_demo_suite(harness):
    suites = ok(harness("list", "suites"))
    if "demo" not in [line.split(" ", 1)[0] for line in suites.splitlines()]:
        pytest.skip("the built-in demo suite is not installed")
    out = ok(harness("run", "-r", "example-overlap", "-s", "demo", "--k", "1,5", "--no-progress"))
    assert "retriever example-overlap" in out
    (file,) = harness.results.glob("demo--example-overlap--*.json")
    result = json.loads(file.read_text(encoding="utf-8"))
    assert result["retriever"]["plugin"] == "example"
    for value in result["metrics"]["accuracy"]["macro"].values():
        assert 0.0 <= value <= 1.0


# --- broken plugins --------------------------------------------------------------------------


def test_broken_plugin_is_reported_and_skipped(sites, unavailable_builtins, tmp_path):
    harness = Harness([sites["example"], sites["broken"]], tmp_path, unavailable_builtins, strict=False)
    proc = harness("plugins")
    out = ok(proc)
    line = line_for("broken", out)
    assert "harness-broken-plugin 0.2.0" in line
    assert "FAILED" in line and "ImportError: harness-broken-plugin is broken on purpose" in line
    line_for("example", out)  # the others still load
    assert "plugin 'broken'" in proc.stderr and "Traceback" not in proc.stderr
    assert "example-overlap" in ok(harness("list", "retrievers"))


@pytest.mark.parametrize(
    "args",
    [
        ["plugins"],
        ["list", "retrievers"],
        ["run", "-r", "example-overlap", "-s", "example-capitals"],
        ["example-hello"],
    ],
    ids=lambda args: " ".join(args),
)
def test_strict_mode_makes_a_broken_plugin_fatal(sites, unavailable_builtins, tmp_path, args):
    harness = Harness([sites["example"], sites["broken"]], tmp_path, unavailable_builtins)
    proc = harness(*args)
    error = one_line_error(proc)
    assert "'broken'" in error and "harness-broken-plugin 0.2.0" in error
    assert "ImportError: harness-broken-plugin is broken on purpose" in error
    assert proc.stdout == ""
    assert not harness.results.exists()


def test_duplicate_retriever_name_is_unusable_and_the_rest_works(sites, unavailable_builtins, tmp_path):
    if "bm25" in unavailable_builtins:
        pytest.skip("the built-in bm25 plugin does not load in this checkout")
    harness = Harness([sites["duplicate"]], tmp_path, unavailable_builtins)
    error = one_line_error(harness("list", "retrievers"))  # strict mode: an error at once
    assert "'bm25'" in error and "'dup'" in error and "two plugins" in error
    ok(harness("list", "metrics"))  # other kinds are unaffected

    lenient = Harness([sites["duplicate"]], tmp_path, unavailable_builtins, strict=False)
    listing = ok(lenient("list", "retrievers"))
    assert "UNUSABLE: provided by 'bm25' and 'dup'" in line_for("bm25", listing)
    line_for("dpr-nq", listing)
    error = one_line_error(lenient("run", "-r", "bm25", "-s", "demo"))
    assert "retriever 'bm25' is provided by two plugins: 'bm25' and 'dup'" in error
    listing = ok(lenient("plugins")).splitlines()
    assert [line for line in listing if line.startswith("dup ") and "FAILED IN register_retrievers" in line]


@pytest.mark.slow
def test_a_raising_plugin_leaves_plugins_and_bm25_working(sites, unavailable_builtins, tmp_path):
    if "bm25" in unavailable_builtins:
        pytest.skip("the built-in bm25 plugin does not load in this checkout")
    lenient = Harness([sites["raising"]], tmp_path, unavailable_builtins, strict=False)
    proc = lenient("plugins")
    out = ok(proc)
    failures = [line for line in out.splitlines() if line.startswith("raising ")]
    assert any("FAILED IN register_retrievers: RuntimeError: register_retrievers is broken on purpose" in f for f in failures)
    assert any("FAILED IN register_commands: RuntimeError: register_commands is broken on purpose" in f for f in failures)
    assert "Traceback" not in proc.stderr
    assert "raising-one" not in ok(lenient("list", "retrievers"))  # a failed hook contributes nothing
    run = lenient("run", "--retriever", "bm25", "--suite", "demo", "--no-progress")
    out = ok(run)
    assert "macro average (24 parts)" in out and "46.53" in out
    assert "plugin 'raising'" in run.stderr and "failed in register_commands" in run.stderr

    strict = Harness([sites["raising"]], tmp_path, unavailable_builtins)
    error = one_line_error(strict("plugins"))
    assert "'raising'" in error and "register_commands is broken on purpose" in error


def test_example_encoder_runs_through_the_dense_engine(harness, sites):
    """`register_encoders` is all it takes: the dense engine embeds, caches and searches. Each
    question's top 5 from the engine is an exact top 5 of a brute-force inner product with the
    same encoder (same scores; passages with equal scores may come in either order)."""
    import numpy as np

    out = ok(harness("run", "-r", "example-hashing", "-s", "example-capitals", "--k", "1,5", "-o", "dim=64",
                     "--no-progress", "--save-run", "--runs-dir", str(harness.workdir / "runs")))
    assert "retriever example-hashing (" in out and "dim=64" in out
    (file,) = harness.results.glob("example-capitals--example-hashing--*.json")
    result = json.loads(file.read_text(encoding="utf-8"))
    assert result["retriever"]["plugin"] == "dense" and result["retriever"]["parameters"]["dim"] == 64
    (trec,) = (harness.workdir / "runs").glob("*.trec")
    run: dict[str, list[tuple[str, float]]] = {}
    for line in trec.read_text(encoding="utf-8").splitlines():
        qid, _, pid, _, score, _ = line.split()
        run.setdefault(qid, []).append((pid, float(score)))

    sys.path.insert(0, str(sites["example"]))
    try:
        from harness_plugin_example.encoder import HashingEncoder
        from harness_plugin_example.suite import capitals_suite
    finally:
        sys.path.remove(str(sites["example"]))
    suite, encoder = capitals_suite(), HashingEncoder(dim=64)
    ids = [p.id for p in suite.corpus]
    # a small corpus keeps the encoder's float32 vectors; final scores are summed in float64
    stored = encoder.encode_passages([(p.title, p.text) for p in suite.corpus]).astype(np.float64)
    scores = (encoder.encode_queries([q.text for q in suite.questions]).astype(np.float64) @ stored.T).astype(np.float32)
    assert sorted(run) == sorted(q.id for q in suite.questions)
    for row, question in zip(scores, suite.questions):
        hits = run[question.id]
        assert len(hits) == 5
        for pid, score in hits:
            assert score == pytest.approx(float(row[ids.index(pid)]), abs=1e-5)
        assert [s for _, s in hits] == pytest.approx(sorted(row, reverse=True)[:5], abs=1e-5)


def test_misspelled_hook_is_reported(sites, unavailable_builtins, tmp_path):
    lenient = Harness([sites["typo"]], tmp_path, unavailable_builtins, strict=False)
    line = line_for("typo", ok(lenient("plugins")))
    assert "harness-typo-plugin 0.1.0" in line and "FAILED" in line
    assert "implements unknown hook(s) register_retreivers" in line

    strict = Harness([sites["typo"]], tmp_path, unavailable_builtins)
    error = one_line_error(strict("plugins"))
    assert "'typo'" in error and "register_retreivers" in error


def test_a_third_party_loss_and_variant_train_end_to_end(harness, tmp_path):
    """The example distribution's ``example-margin`` loss (its formula checked by hand here) and
    variant, listed and used by ``harness train`` exactly like the built-ins."""
    from helpers.training_models import TINY, examples

    from harness.data.training import write_training_examples

    assert "hinge loss" in line_for("example-margin", ok(harness("list", "losses")))
    assert "margin loss" in line_for("example-margin", ok(harness("list", "variants")))
    # the loss by hand: q = [1, 0], passages [1, 0] (positive, score 1) and [0.5, 0] (score 0.5):
    # max(0, 1 - 1 + 0.5) = 0.5 for margin 1
    code = (
        "import torch\nfrom harness import registry\n"
        "loss = registry.load('losses', 'example-margin', {}).value\n"
        "out = loss(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.5, 0.0]]), torch.tensor([0]))\n"
        "print(float(out['loss']), float(out['violations']))\n"
    )
    assert ok(harness(command=[sys.executable, "-c", code])).split() == ["0.5", "1.0"]

    import torch
    from helpers.dense_models import save_tokenizer
    from transformers import BertConfig, BertModel

    model = tmp_path / "tiny"
    save_tokenizer(model)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, **TINY), add_pooling_layer=False).save_pretrained(model)
    data = tmp_path / "train.json"
    write_training_examples(data, examples())
    out = ok(harness("train", "--variant", "example-margin", "--data", str(data), "--model", str(model),
                     "--output", str(tmp_path / "ckpt"), "--max-steps", "2", "--batch-size", "4",
                     "--max-question-length", "16", "--max-passage-length", "32", "--no-progress"))
    assert "wrote" in out
    record = json.loads((tmp_path / "ckpt" / "harness_training.json").read_text(encoding="utf-8"))
    assert record["variant"] == "example-margin" and record["recipe"]["loss"] == {"name": "example-margin", "options": {"margin": 1.0}}
    log = [json.loads(line) for line in (tmp_path / "ckpt" / "train_log.jsonl").read_text().splitlines()]
    assert any("loss/violations" in line for line in log)


# --- a third-party run format ------------------------------------------------------------------


def test_a_third_party_run_format_is_listed_detected_and_scored(sites, unavailable_builtins, tmp_path):
    """A plugin's ``register_run_formats`` adds a format: ``harness list run-formats`` shows it,
    ``harness score`` detects a file in it (its ``sniff``) or takes its name or alias, and scores
    it exactly as the TREC run it was converted from (written by ``harness run --save-run``)."""
    harness = Harness([sites["example"], sites["runformat"]], tmp_path, unavailable_builtins)
    assert "qid,docid,score" in line_for("example-csv", ok(harness("list", "run-formats")))
    assert "register_run_formats" in line_for("runformat", ok(harness("plugins")))
    ok(harness("run", "-r", "example-overlap", "-s", "example-capitals", "--k", "1,5", "--save-run", "--no-progress",
               "--results-dir", str(tmp_path / "native")))
    (trec,) = (tmp_path / "runs").glob("*.trec")
    lines = ["qid,docid,score"]
    for line in trec.read_text(encoding="utf-8").splitlines():
        qid, _q0, docid, _rank, score, _tag = line.split()
        lines.append(f"{qid},{docid},{score}")
    run = tmp_path / "overlap.run"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for extra in ([], ["--format", "example-csv"], ["--format", "excsv"]):
        results = tmp_path / f"scored{len(extra)}{extra[-1] if extra else ''}"
        out = ok(harness("score", "--suite", "example-capitals", "--run", str(run), "--k", "1,5", "--results-dir", str(results), *extra))
        (file,) = results.glob("*.json")
        result = json.loads(file.read_text(encoding="utf-8"))
        assert result["retriever"]["parameters"]["format"] == "example-csv", out
        assert result["first_hit_ranks"] == EXPECTED_RANKS
        assert result["metrics"]["accuracy"]["macro"] == pytest.approx(EXPECTED_ACCURACY)
    assert "example-csv" in ok(harness("score", "--help"))
    run.write_text("qid,docid,score\nq01,p01,1.0\nq01,p02,high\n", encoding="utf-8")
    error = one_line_error(harness("score", "--suite", "example-capitals", "--run", str(run), "--results-dir", str(tmp_path / "bad")))
    assert error == f"harness: error: {run}:3: score must be a number, got 'high'"
