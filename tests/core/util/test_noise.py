"""Noise and silence: stdout stays clean, a log file gets no bars, third-party warnings stay out,
and the documentation and scripts say what they offer.

- training prints no ``{'loss': ...}`` dictionaries on stdout, one tidy line per logging step on stderr;
- progress on a stderr that is not a terminal writes plain lines only (no ``\\r``, no escape codes), few of them;
- the ``harness`` command hides warnings issued by third-party libraries, not the harness's own;
- the plugin tutorial's hook count and table match ``harness/hookspecs.py``;
- every option of the demo training scripts has a help string.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from harness.util import progress as progress_module
from harness.util.progress import PlainProgress, note, progress, set_progress, task
from helpers.paths import REPO



@pytest.fixture
def bars_on(monkeypatch):
    monkeypatch.delenv("HARNESS_NO_PROGRESS", raising=False)
    monkeypatch.setattr(progress_module, "_enabled", True)
    yield


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", fake)
    return fake


# -- progress without a terminal ------------------------------------------------------------------


def test_progress_without_a_terminal_writes_a_few_plain_lines(bars_on, clock, capsys):
    assert not sys.stderr.isatty()
    with progress(total=1000, desc="search", unit="q") as bar:
        assert isinstance(bar, PlainProgress)
        for _ in range(1000):
            clock.now += 0.1  # 100 s in all
            bar.update(1)
            bar.set_postfix(passages=7, refresh=False)
    out, err = capsys.readouterr()
    assert out == ""
    assert "\r" not in err and "\x1b" not in err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 5, lines  # one every 30 s and one at the end
    assert re.fullmatch(r"search: 30[0-9]/1,000 q \(30%\), 30\.[0-9] s \(passages=7\)", lines[0]), lines[0]
    assert lines[-1].startswith("search: 1,000 q in 1 min 40 s")


def test_short_steps_without_a_terminal_write_nothing(bars_on, clock, capsys, tmp_path):
    from harness.data.download import sha256_file

    for i in range(24):  # the 24 "checking P17.test.json" bars of one log
        path = tmp_path / f"P{i}.test.json"
        path.write_text("[]")
        sha256_file(path, progress=True)
    with progress(total=3, desc="quick") as bar:
        bar.update(3)
    for _ in progress(range(5), desc="iterated"):
        pass
    assert capsys.readouterr() == ("", "")


def test_byte_counts_and_resets_read_plainly(bars_on, clock, capsys):
    with progress(total=10 * 1024 ** 2, desc="corpus x", unit="B", unit_scale=True, unit_divisor=1024) as bar:
        bar.update(1024 ** 2)
        bar.reset(total=bar.total)
        bar.total = 10 * 1024 ** 2
        bar.refresh()
        clock.now += 31
        bar.update(5 * 1024 ** 2)
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err
    assert err.splitlines() == ["corpus x: 5.00MB/10.0MB (50%), 31.0 s", "corpus x: 5.00MB in 31.0 s"]


def test_the_last_update_leaves_the_closing_line_alone(bars_on, clock, capsys):
    with progress(total=2, desc="dense encode", unit="psg") as bar:
        clock.now += 31
        bar.update(1)
        clock.now += 31
        bar.update(1)
    assert capsys.readouterr().err.splitlines() == [
        "dense encode: 1/2 psg (50%), 31.0 s", "dense encode: 2 psg in 1 min 02 s"]


def test_disabled_progress_and_a_failed_step_say_nothing(bars_on, clock, capsys):
    set_progress(False)
    try:
        with progress(total=5, desc="off") as bar:
            clock.now += 100
            bar.update(5)
        with task("off too"):
            pass
    finally:
        set_progress(True)
    with pytest.raises(RuntimeError):
        with progress(total=5, desc="failing"):
            clock.now += 5
            raise RuntimeError("boom")
    assert capsys.readouterr() == ("", "")


def test_a_task_and_a_note_are_plain_lines(bars_on, clock, capsys):
    with task("mining BM25 negatives"):
        clock.now += 2.5
    note("step 1/3  loss 0.5000")
    assert capsys.readouterr().err.splitlines() == [
        "mining BM25 negatives ...", "mining BM25 negatives: done in 2.5 s", "step 1/3  loss 0.5000"]


def test_the_bm25_miner_labels_its_step(bars_on, capsys, tmp_path):
    from harness.api import Passage, RunContext, TrainingExample
    from harness_builtins.training import mining

    class Retriever:
        def index(self, corpus, context):
            pass

    class Corpus:
        name = "tiny"
        passages = {"p1": Passage(id="p1", title="A", text="the sky is blue"),
                    "p2": Passage(id="p2", title="B", text="grass is green")}

        def get(self, passage_id):
            return self.passages[passage_id]

    def retrieve(model, questions, depth, context, **kwargs):
        from harness.api import Hit

        return [[Hit(passage_id="p1", score=2.0), Hit(passage_id="p2", score=1.0)] for _ in questions]

    miner = mining.RetrieverMiner(negatives=1, depth=2)
    example = TrainingExample(question="what colour is grass?", answers=("green",),
                              positives=(Passage(id="p2", title="B", text="grass is green"),))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mining.registry, "load", lambda *a, **k: type("Found", (), {"value": Retriever()})())
        patch.setattr(mining, "retrieve", retrieve)
        mined = miner([example], Corpus(), RunContext(cache_dir=tmp_path, progress=True))
    assert [p.id for p in mined[0].hard_negatives] == ["p1"]
    assert capsys.readouterr().err.splitlines()[0] == "mining BM25 negatives (1 question, top 2 of tiny) ..."


# -- training's output -----------------------------------------------------------------------------


def test_training_prints_no_loss_dicts_on_stdout(tiny, data, tmp_path, capfd):
    from harness.cli.main import main

    output = tmp_path / "out"
    code = main([
        "train", "--variant", "dpr", "--data", str(data), "--model", str(tiny), "--output", str(output),
        "--max-steps", "3", "--batch-size", "4", "--logging-steps", "1",
        "--max-question-length", "16", "--max-passage-length", "32",  # progress left on: it printed the dicts
    ])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "{'loss'" not in out and "'loss'" not in out and "train_runtime" not in out
    assert [line.split(" ")[0] for line in out.splitlines()] == ["wrote"], out
    assert "\r" not in err and "\x1b" not in err
    steps = [line for line in err.splitlines() if line.startswith("step ")]
    assert [s.split("  ")[0] for s in steps] == ["step 1/3", "step 2/3", "step 3/3"], err
    assert re.fullmatch(r"step 1/3  epoch [0-9.]+  loss [0-9.]+  lr [0-9.e+-]+(  grad norm [0-9.e+-]+)?", steps[0]), steps[0]
    assert re.search(r"^trained 3 steps in [0-9.]+ s  mean loss [0-9.]+$", err, re.M), err
    assert len(err.splitlines()) <= 8, err
    logged = [json.loads(line) for line in (output / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged if "loss" in r] == [1, 2, 3]  # the log file keeps every logging step


# -- third-party warnings --------------------------------------------------------------------------

NOISY = textwrap.dedent('''
    import sys, types, warnings
    import click
    import harness.cli.main as cli_main

    def module(name, source):
        namespace = {"__name__": name}
        exec(compile(source, name.replace(".", "/") + ".py", "exec"), namespace)
        return namespace

    third = module("transformers.fake_noise", """
    import warnings
    def warn():
        warnings.warn("third-party future warning", FutureWarning)
    def warn_at_caller():
        warnings.warn("third-party warning blamed on its caller", UserWarning, stacklevel=2)
    """)
    ours = module("harness.fake_noise", """
    import warnings
    def warn():
        warnings.warn("harness's own warning", UserWarning)
    def torch_operation():  # what a torch C++ warning looks like from the frame that called it
        warnings.warn("a torch kernel complains (Triggered internally at tensor_numpy.cpp:213.)", UserWarning)
    def call(f):
        f()
    """)

    @click.group()
    def group():
        pass

    @group.command()
    def noisy():
        third["warn"]()
        ours["call"](third["warn_at_caller"])
        ours["torch_operation"]()
        ours["warn"]()
        click.echo("clean output")

    cli_main.build_cli = lambda: group
    sys.exit(cli_main.main(["noisy"]))
''')


@pytest.mark.parametrize("debug", [False, True])
def test_the_cli_hides_third_party_warnings_and_shows_its_own(debug):
    env = {k: v for k, v in os.environ.items() if k not in ("HARNESS_DEBUG", "PYTHONWARNINGS")}
    if debug:
        env["HARNESS_DEBUG"] = "1"
    done = subprocess.run([sys.executable, "-c", NOISY], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "clean output\n"
    assert "harness's own warning" in done.stderr
    assert ("third-party future warning" in done.stderr) is debug
    assert ("third-party warning blamed on its caller" in done.stderr) is debug
    assert ("Triggered internally" in done.stderr) is debug


def test_the_cli_restores_warning_filters_and_logging_after_a_command():
    import logging
    import warnings

    from harness.cli.main import quiet_third_party

    filters, show = list(warnings.filters), warnings.showwarning
    level = logging.getLogger("sentence_transformers").level
    with quiet_third_party():
        assert logging.getLogger("sentence_transformers").getEffectiveLevel() >= logging.ERROR
    assert warnings.filters == filters and warnings.showwarning is show
    assert logging.getLogger("sentence_transformers").level == level


# -- documentation and scripts ---------------------------------------------------------------------

NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}


def test_the_plugin_tutorial_counts_and_tables_every_hookspec():
    from harness import hookspecs

    specs = {name: fn for name, fn in vars(hookspecs).items()
             if inspect.isfunction(fn) and getattr(fn, "harness_spec", None) is not None}
    text = (REPO / "docs" / "writing-plugins.md").read_text(encoding="utf-8")
    stated = re.search(r"harness defines (\w+) hooks", text)
    assert stated, "the tutorial no longer says how many hooks harness defines"
    count = NUMBERS.get(stated.group(1), int(stated.group(1)) if stated.group(1).isdigit() else None)
    assert count == len(specs), f"the tutorial says {stated.group(1)} hooks; harness/hookspecs.py has {len(specs)}"
    section = text.split("## 3. The hooks", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `register_")]
    tabled = [re.match(r"\| `(register_\w+)\(", row).group(1) for row in rows]
    assert sorted(tabled) == sorted(specs)
    for name, fn in specs.items():
        assert f"`{name}{inspect.signature(fn)}`".replace("'", "") in section, name


def test_the_plugin_tutorial_shows_what_harness_plugins_prints(capsys):
    from harness.cli.main import main

    text = (REPO / "docs" / "writing-plugins.md").read_text(encoding="utf-8")
    sample = text.split("$ harness plugins\n", 1)[1].split("\n$ ", 1)[0].splitlines()
    assert main(["plugins"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if "odqa-harness" in line]
    assert printed and [line for line in sample if "odqa-harness" in line] == printed


def _script(name: str):
    path = REPO / "scripts" / name
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", ["train_demo_inloop.py", "train_demo_variants.py"])
def test_every_option_of_the_demo_scripts_has_help(script):
    parser = _script(script).build_parser()
    options = [a for a in parser._actions if a.option_strings and "-h" not in a.option_strings]
    assert len(options) >= 4
    for action in options:
        assert action.help and len(action.help) > 10, f"{script}: {action.option_strings[0]} has no help"
    shown = parser.format_help()
    for action in options:
        assert action.option_strings[0] in shown
