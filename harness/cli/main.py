"""Entry point of the ``harness`` command: the command group, plugin commands, and error handling.

User errors (:class:`harness.errors.HarnessError`) print one line on stderr and exit with 2. An
exception from a plugin's code is that plugin's failure: one line naming what ran and the plugin's
distribution (``retriever 'tfidf' (plugin harness-tfidf) failed: ...``), exit status 1 as for any
fault in code rather than in the user's input; anything else is harness's internal error (1).

While a command runs, the warnings of third-party libraries (:data:`QUIET_PACKAGES`: deprecation
notices and advice meant for their developers) are hidden and transformers logs errors only;
the harness's own warnings are shown. ``HARNESS_DEBUG=1`` shows everything.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator

import click

from harness import __version__
from harness.errors import HarnessError


def _group() -> click.Group:
    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="harness")
    def cli() -> None:
        """Benchmark open-domain QA retrievers with the exact DPR protocol (top-k answer accuracy)."""

    return cli


def _warn(failure) -> None:
    click.echo(
        f"harness: warning: {failure.describe()}; skipped (HARNESS_STRICT_PLUGINS=1 makes this an error)",
        err=True,
    )


#: Third-party packages whose Python warnings a ``harness`` command hides (``HARNESS_DEBUG=1`` shows them).
QUIET_PACKAGES = (
    "transformers", "sentence_transformers", "torch", "torchvision", "pyserini", "jnius", "datasets",
    "huggingface_hub", "accelerate", "tokenizers", "safetensors", "faiss", "tensorboard", "pyarrow",
)
_QUIET_MODULE = re.compile(r"(?:%s)(?:\.|$)" % "|".join(re.escape(p) for p in QUIET_PACKAGES))
#: Their loggers, set to errors only; the libraries that configure their own logger read the variables.
_QUIET_LOGGERS = ("sentence_transformers", "accelerate", "pyserini", "torch")
_QUIET_ENVIRONMENT = {"TRANSFORMERS_VERBOSITY": "error", "DATASETS_VERBOSITY": "error", "HF_HUB_VERBOSITY": "error",
                      "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}


def _debug() -> bool:
    return os.environ.get("HARNESS_DEBUG", "").strip() not in ("", "0")


def _third_party(module: object) -> bool:
    return isinstance(module, str) and _QUIET_MODULE.match(module) is not None


def _issuer(frame) -> str | None:
    """The module of the code that called ``warnings.warn``, from ``frame`` outwards (not the one
    the warning is attributed to: a library's ``stacklevel`` points at its caller, which may be
    the harness)."""
    while frame is not None and frame.f_globals.get("__name__") in ("warnings", "_py_warnings"):
        frame = frame.f_back
    return frame.f_globals.get("__name__") if frame is not None else None


@contextlib.contextmanager
def quiet_third_party() -> Iterator[None]:
    """Hide third-party warnings and logs below errors (see the module notes) while the block
    runs; the filters, loggers and environment are restored after it. No-op under ``HARNESS_DEBUG=1``."""
    if _debug():
        yield
        return
    with warnings.catch_warnings(), contextlib.ExitStack() as restore:
        warnings.filterwarnings("ignore", module=_QUIET_MODULE.pattern)
        # torch's C++ warnings, raised in the frame of whoever called the operation
        warnings.filterwarnings("ignore", message=r"(?s).*\(Triggered internally at ")
        shown = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if not _third_party(_issuer(sys._getframe(1))):
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        for key, value in _QUIET_ENVIRONMENT.items():
            if key not in os.environ:
                os.environ[key] = value
                restore.callback(os.environ.pop, key, None)
        for name in _QUIET_LOGGERS:
            logger = logging.getLogger(name)
            restore.callback(logger.setLevel, logger.level)
            logger.setLevel(max(logger.getEffectiveLevel(), logging.ERROR))
        if "transformers" in sys.modules:  # imported already: its logger was configured before
            with contextlib.suppress(Exception):
                from transformers.utils import logging as hf_logging

                restore.callback(hf_logging.set_verbosity, hf_logging.get_verbosity())
                hf_logging.set_verbosity_error()
        from harness.util.progress import quiet_third_party_progress, stderr_is_tty

        if not stderr_is_tty():  # no bars from Hugging Face's libraries in a log
            quiet_third_party_progress()
        yield


def build_cli() -> click.Group:
    """A new command group: the built-in commands, then each plugin's ``register_commands``.

    A plugin whose ``register_commands`` raises, or that adds a command under a name already
    taken, is recorded as failed and its commands are left out; every other command works.
    """
    from harness.cli.compare import compare_command
    from harness.cli.leaderboard import leaderboard
    from harness.cli.plot import plot
    from harness.cli.results import results_group
    from harness.cli.submit import submit_command
    from harness.cli.validate import validate_command
    from harness.cli.reproduce import reproduce
    from harness.cli.listing import list_command, plugins_command
    from harness.cli.run import run
    from harness.cli.score import score
    from harness.plugins import loaded_plugins

    cli = _group()
    for command in (run, score, leaderboard, compare_command, reproduce, plot, list_command, plugins_command,
                    validate_command, submit_command, results_group):
        cli.add_command(command)
    owners = {name: "harness" for name in cli.commands}

    loaded = loaded_plugins()
    for failure in loaded.failures:
        _warn(failure)
    loaded.notify = _warn
    for impl in loaded.manager.hook.register_commands.get_hookimpls():
        before = dict(cli.commands)
        try:
            impl.function(cli=cli)
            for name, command in cli.commands.items():
                if name in before and before[name] is not command:
                    raise HarnessError(f"command {name!r} is already defined by {owners[name]!r}")
        except (Exception, SystemExit) as exc:
            cli.commands.clear()
            cli.commands.update(before)
            loaded.fail(impl.plugin_name, "register_commands", str(exc) if isinstance(exc, HarnessError) else exc)
            continue
        for name in cli.commands:
            owners.setdefault(name, impl.plugin_name)
    cli.owners = owners  # command name -> the plugin that added it ("harness": the core)
    return cli


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Every failure is one line on stderr: a problem with the user's input or environment
    (:class:`HarnessError`, a usage error) exits with 2, Ctrl-C with 130, and anything else (a
    bug) with 1: a plugin's failure naming the plugin when its code raised, else "internal error"
    (``HARNESS_DEBUG=1`` shows the traceback instead).
    """
    try:
        with quiet_third_party():
            cli = build_cli()
            args = sys.argv[1:] if argv is None else list(argv)
            # click's own main() would print a blank line on Ctrl-C and turn EOFError into an abort
            with cli.make_context("harness", args) as ctx, _running_command(cli, args):
                returned = cli.invoke(ctx)
    except HarnessError as exc:
        click.echo(f"harness: error: {_one_line(exc)}", err=True)
        return exc.exit_code
    except EOFError as exc:
        click.echo(f"harness: error: unexpected end of input: {_one_line(exc)}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("harness: interrupted", err=True)
        return 130
    except click.ClickException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError" and getattr(exc, "ctx", None) is not None:
            click.echo(exc.ctx.get_help())  # a bare `harness`: show what it can do
            return 0
        hint = f" (see `{exc.ctx.command_path} --help`)" if isinstance(exc, click.UsageError) and exc.ctx else ""
        click.echo(f"harness: error: {_one_line(exc.format_message())}{hint}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("harness: interrupted", err=True)
        return 130
    except BrokenPipeError:  # `harness list suites | head`: the reader left; end quietly
        try:  # nothing more can be written; keep Python from complaining at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except RecursionError:
        click.echo("harness: error: an input is nested too deeply to read", err=True)
        return 2
    except Exception as exc:
        if _debug():
            raise
        click.echo(_failure(exc), err=True)
        return 1
    return returned if isinstance(returned, int) else 0


def _running_command(cli: click.Group, args: list[str]) -> contextlib.AbstractContextManager:
    """While the command runs, an exception is marked as raised in it (``command 'NAME'`` and the
    plugin that added it), for :func:`_failure` when no retriever or other named thing ran."""
    from harness.registry import running

    name = next((arg for arg in args if not arg.startswith("-")), None)
    owners = getattr(cli, "owners", {})
    if name is None or name not in owners:
        return contextlib.nullcontext()
    return running("command", name, owners[name])


def _failure(exc: Exception) -> str:
    """The line for an exception that is not the user's input: a plugin's failure, naming the
    thing that ran and the plugin's distribution, when another distribution's plugin code raised
    it; else harness's own internal error (naming the built-in plugin's thing when one ran)."""
    from harness.registry import failure_line

    hint = " (HARNESS_DEBUG=1 shows the traceback)"
    try:
        found = failure_line(exc)
    except Exception:  # reporting must not fail in its turn
        found = None
    if found is not None:
        line, third_party = found
        return f"harness: {'error' if third_party else 'internal error'}: {_one_line(line)}{hint}"
    return f"harness: internal error: {type(exc).__name__}: {_one_line(exc)}{hint}"


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
