"""The `shellrt` command line: a thin shim over the async runtime.

Each sub-command lives in its own module exposing ``register(subparsers)``; the
module sets ``func`` on its parser, a callable taking the parsed namespace and
returning the process exit code. No policy lives here.

Start-up cost is the operator's per-command cost (``shellrt run`` in a loop), so
only the chosen sub-command's module is imported, and those modules import
their implementations (runtime, analysis, servers) inside the functions that
need them: ``shellrt run`` never loads the command analysis, MCP or httpx, and
``--help`` loads no implementation at all. ``tests/test_cli_imports.py`` pins this.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

__all__ = ["build_parser", "main"]

#: Sub-command modules, in the order ``--help`` lists them.
_COMMAND_MODULES: tuple[str, ...] = (
    "classify",
    "run",
    "batch",
    "sandbox",
    "permissions",
    "trust",
    "serve",
    "tools",
    "sessions",
)


def build_parser(commands: Sequence[str] = _COMMAND_MODULES) -> argparse.ArgumentParser:
    """Build the top-level parser with ``commands`` (default: every sub-command) registered."""
    parser = argparse.ArgumentParser(
        prog="shellrt",
        description="Sandboxed shell execution for AI agents: governed tool_use -> tool_result.",
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in commands:
        module = importlib.import_module(f"shellrt.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``shellrt`` console script; returns the exit code.

    Standard error escapes control characters while it runs (`shellrt.cli._stderr`): diagnostics,
    usage errors, warnings and tracebacks quote text others chose (red team round 29). Run as the
    program (``argv`` None) it stays so to the end, for the traceback or the ``SystemExit`` message
    Python prints after this returns; called with ``argv`` (embedded, tests) the caller's stream
    is put back.
    """
    from shellrt.cli._stderr import escape_controls, escaping_stderr

    replaced = escaping_stderr()
    try:
        return _main(argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):  # printed by Python, outside any stream this function chose
            raise SystemExit(escape_controls(exc.code)) from None
        raise
    finally:
        if replaced is not None and argv is not None and getattr(sys.stderr, "unescaped", None) is replaced:
            sys.stderr = replaced


def _main(argv: Sequence[str] | None) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(_chosen_commands(words))
    args = parser.parse_args(words)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        code = func(args)
        sys.stdout.flush()  # here, not at exit: a reader gone is then a broken pipe caught below
        return code
    except KeyboardInterrupt:
        print("shellrt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _stdout_closed()


def _stdout_closed() -> int:
    """Our reader went away (``shellrt tools | head -1``): end as a pipeline's writer does, status
    141 and no traceback (round 37: every sub-command without its own handling printed one). A
    broken pipe of anything else is re-raised."""
    from shellrt.cli._stdout import silence_stdout
    from shellrt.server._reader_gone import reader_gone

    try:
        gone = reader_gone(sys.stdout.fileno())
    except (OSError, ValueError):
        gone = False
    if not gone:
        raise
    silence_stdout()
    return 141


def _chosen_commands(words: Sequence[str]) -> tuple[str, ...]:
    """Only the named sub-command when the first word names one; else all (for help and errors).

    The top-level parser takes no option with a value, so the first word is the
    sub-command whenever it is not an option.
    """
    if words and words[0] in _COMMAND_MODULES:
        return (words[0],)
    return _COMMAND_MODULES


class _VersionAction(argparse.Action):
    """``--version``: looks the installed version up only when asked (package metadata is slow to load)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> None:
        print(f"shellrt {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("shellrt")
    except PackageNotFoundError:
        return "0+unknown"
