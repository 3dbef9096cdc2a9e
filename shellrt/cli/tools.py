"""``shellrt tools``: list the session's tools and what each may do.

For each tool: read-only, concurrency-safe, destructive, open-world (each
``yes``/``no``/``depends on input`` — Bash decides per command), whether it is
deferred (found through ToolSearch), and what a call needs permission-wise.
External MCP servers configured in settings are started to list their tools.
No sandbox is needed: tools are listed, never run.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from shellrt.cli._runtime_options import add_runtime_options, runtime_from_args

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "tools",
        help="list the tools with their semantics",
        description="List the tools a session offers, with read-only / concurrency / destructive / "
        "open-world semantics, deferral and permission needs.",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    parser.add_argument("--workspace", default=".", help="workspace whose settings apply (default: .)")
    add_runtime_options(parser, sandbox=False)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    import anyio

    try:
        rows = anyio.run(_collect, args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"shellrt tools: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(_table(rows))
    return 0


async def _collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    from shellrt.cli._terminal import escape_log_lines, shown
    from shellrt.server.mcp_semantics import semantics_of

    escape_log_lines()  # the runtime's warnings quote MCP servers' stderr (see `_terminal`)
    runtime = runtime_from_args(args)
    for line in runtime.diagnostics:
        print(f"shellrt tools: settings: {shown(line)}", file=sys.stderr)
    async with runtime:
        registry, gate = runtime.registry, runtime.gate

        def row_of(tool: Any) -> dict[str, Any]:  # the tool's own code: asked through the registry's guard
            row = semantics_of(tool).as_dict()
            row["hidden_by_rule"] = not gate.is_visible(tool)
            description = tool.prompt()
            if not isinstance(description, str):
                raise TypeError(f"prompt() returned {type(description).__name__}, not str")
            row["description"] = _first_line(str.__str__(description))
            return row

        rows = [row for tool in registry.all_tools() if (row := registry.asked(tool, lambda t=tool: row_of(t)))]
        for line in registry.listing_diagnostics:  # a tool that failed is named, never a traceback
            print(f"shellrt tools: {shown(line)}", file=sys.stderr)
        return rows


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:97] + "..."


def _cell(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return "per input" if value == "depends on input" else str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    headers = ["tool", "read-only", "concurrent", "destructive", "open-world", "deferred", "permission"]
    data = [
        [
            r["name"] + (" (denied)" if r["hidden_by_rule"] else ""),
            _cell(r["read_only"]),
            _cell(r["concurrency_safe"]),
            _cell(r["destructive"]),
            _cell(r["open_world"]),
            _cell(r["deferred"]),
            r["permission"],
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in data)) if data else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in data]
    lines.append("'per input': the tool decides per call (e.g. Bash judges each command).")
    return "\n".join(lines)
