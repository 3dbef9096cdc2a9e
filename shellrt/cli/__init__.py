"""The `shellrt` command line: a thin shim over the async runtime.

Each sub-command lives in its own module exposing ``register(subparsers)``; the
module sets ``func`` on its parser, a callable taking the parsed namespace and
returning the process exit code. No policy lives here.
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


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="shellrt",
        description="Sandboxed shell execution for AI agents: governed tool_use -> tool_result.",
    )
    parser.add_argument("--version", action="version", version=f"shellrt {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        module = importlib.import_module(f"shellrt.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``shellrt`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        return func(args)
    except KeyboardInterrupt:
        print("shellrt: interrupted", file=sys.stderr)
        return 130


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("shellrt")
    except PackageNotFoundError:
        return "0+unknown"
