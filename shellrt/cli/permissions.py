"""``shellrt permissions``: explain a permission decision, list the effective rules.

``check TOOL INPUT_JSON`` runs the real decision engine (rules from every
source, the mode, the tool's own check) on one call and prints the decision
with the chain of steps that produced it. It never runs hooks and never asks:
an ``ask`` is reported as such (and as the deny it becomes in a headless run).

Tools come from ``shellrt.tools`` when they import; otherwise (a partial
checkout, an MCP tool name) a generic stand-in derives the subject from the
JSON: ``Bash``/``PowerShell`` -> the command analysis of ``command``; file
tools -> ``file_path`` / ``path`` / ``notebook_path`` resolved against the
workspace (Read/Glob/Grep read, Edit/Write/MultiEdit/NotebookEdit write);
``WebFetch`` -> the host of ``url``; anything else -> no subject (tool-wide rules only).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shellrt.permissions.modes import PERMISSION_MODES

__all__ = ["register", "run_check", "run_list"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``permissions check`` and ``permissions list``."""
    parser = subparsers.add_parser(
        "permissions",
        help="explain permission decisions and list effective rules",
        description="Explain how shellrt's permission rules, modes and the tool's own check decide a call.",
    )
    sub = parser.add_subparsers(dest="permissions_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="explain the decision for one call", description=__doc__)
    check.add_argument("tool", metavar="TOOL", help="tool name, e.g. Bash, Read, WebFetch, mcp__server__tool")
    check.add_argument(
        "input_json", metavar="INPUT_JSON", help='the tool input, e.g. \'{"command": "git status"}\''
    )
    _common(check)
    check.set_defaults(func=run_check)
    listing = sub.add_parser("list", help="show the effective rules with their sources")
    _common(listing)
    listing.set_defaults(func=run_list)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", type=Path, default=Path("."), help="workspace directory (default: .)")
    parser.add_argument(
        "--settings", type=Path, action="append", default=[], metavar="FILE", help="extra settings file"
    )
    parser.add_argument("--mode", choices=PERMISSION_MODES, default=None, help="permission mode")
    parser.add_argument(
        "--allow", action="append", default=[], metavar="RULE", help="allow rule (repeatable)"
    )
    parser.add_argument("--deny", action="append", default=[], metavar="RULE", help="deny rule (repeatable)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--trust-workspace", action="store_true", help="obey the workspace's own settings files in full"
    )


def run_check(args: argparse.Namespace) -> int:
    """``shellrt permissions check``: 0 when explained, 2 on bad input."""
    from shellrt.cli._permissions_check import run_check as check

    return check(args)


def run_list(args: argparse.Namespace) -> int:
    """``shellrt permissions list``: the effective rules with their sources."""
    from shellrt.cli._permissions_list import run_list as listing

    return listing(args)
