"""Running the CLI in a test and checking a one-line error: what the hostile-input tests share."""

from __future__ import annotations

from harness.cli.main import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *fragments: str, status: int = 2) -> str:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("harness: warning:")]
    assert code == status, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
