"""``generate-questions`` under faults: resuming a progress file that names a passage the corpus lacks,
two runs into one output, and an output under a file are one line each, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.errors import HarnessError
from helpers.integrity import one_line_exit_2

# ------------------------------------------------------------------------------ generate-questions


class Generator:
    """A fake question generator that is interrupted after ``batches`` calls (None: never)."""

    def __init__(self, batches: int | None = None):
        self.batches, self.calls = batches, 0

    def __call__(self, prompts):
        self.calls += 1
        if self.batches is not None and self.calls > self.batches:
            raise KeyboardInterrupt
        return ["when was Ann born"] * len(prompts)


def _interrupted(tmp_path: Path):
    """A run over three passages killed after its first batch; a function that runs it again (with
    a generator that works) and its progress file."""
    from harness.api import InMemoryCorpus, Passage
    from harness_builtins.datasets.generate import generate_questions

    corpus = InMemoryCorpus("three", [Passage(id=f"p{i}", title=f"T{i}", text=f"Ann was born in {1950 + i}.")
                                      for i in range(3)])

    def run(generate=None):
        return generate_questions(corpus, None, output=tmp_path / "gen.json", negatives=0, batch_size=1,
                                  generate=generate or Generator(), progress=False)

    with pytest.raises(KeyboardInterrupt):
        run(Generator(batches=1))
    return run, tmp_path / "gen.json.partial.jsonl"


def test_resuming_a_progress_file_that_names_an_unknown_passage_is_one_line(tmp_path):
    run, partial = _interrupted(tmp_path)
    lines = partial.read_text().splitlines()
    assert len(lines) == 2
    partial.write_text("\n".join([lines[0], lines[1].replace('"p0"', '"ghost"')]) + "\n")
    with pytest.raises(HarnessError) as caught:
        run()
    message = str(caught.value)
    assert message.startswith(f"{partial}:2: ") and "'ghost'" in message and "corpus three" in message
    assert "\n" not in message and not (tmp_path / "gen.json").exists()


def test_two_runs_into_one_output_the_second_stops_with_one_line(tmp_path):
    import fcntl

    run, partial = _interrupted(tmp_path)
    lock = tmp_path / "gen.json.lock"
    assert not lock.exists()  # removed when the run ended, even by an interrupt
    before = partial.read_bytes()
    with open(lock, "w") as held:  # another run holds the output
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(HarnessError, match=r"gen.json is being written by another generate-questions run"):
            run()
        assert partial.read_bytes() == before and not (tmp_path / "gen.json").exists()
    stats = run()  # the lock released: the run resumes and finishes
    assert stats.resumed == 1 and stats.passages == 3 and stats.kept == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gen.json", "gen.json.meta.json"]


@pytest.fixture(scope="module")
def t5_dir(tmp_path_factory):
    from helpers.rerank_models import tiny_t5

    return tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5")


def test_a_cli_run_into_an_output_under_a_file_is_one_line(tmp_path, t5_dir, capsys):
    (tmp_path / "file").write_text("x")
    code = main(["data", "generate-questions", "demo", "--model", str(t5_dir), "--passages", "2", "--device", "cpu",
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--output", str(tmp_path / "file" / "gen.json")])
    one_line_exit_2(code, capsys.readouterr().err, "cannot write output", "is a file, not a folder")


