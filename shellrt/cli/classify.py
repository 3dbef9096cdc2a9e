"""``shellrt classify``: show how a command is classified (read-only, subcommands, reasons).

``--jsonl`` turns it into a filter: one JSON request per stdin line (a JSON
string, or an object with ``command`` and optional ``shell``), one JSON answer
per stdout line, in order, flushed per line. A bad line gets
``{"error": ..., "line": N}`` and processing continues.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from shellrt.cli._stdout import silence_stdout

__all__ = ["register", "run"]

_SHELLS = ("bash", "powershell")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``classify`` sub-command."""
    parser = subparsers.add_parser(
        "classify",
        help="classify a shell command (read-only? subcommands? why?)",
        description="Parse a command and show whether it is read-only, concurrency-safe and destructive.",
    )
    parser.add_argument("command_text", nargs="?", metavar="COMMAND", help="the command to classify")
    parser.add_argument("--shell", choices=_SHELLS, default="bash", help="shell dialect (default: bash)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON object")
    output.add_argument("--jsonl", action="store_true", help="read JSON lines on stdin, answer one per line")
    parser.set_defaults(func=run)


#: Exit status when our reader closed stdout early (``| head``), as a process killed by SIGPIPE.
EXIT_STDOUT_CLOSED = 141


def run(args: argparse.Namespace) -> int:
    """Execute ``shellrt classify``; returns the exit code (0; 2 when misused; 141 when stdout closed)."""
    try:
        return _run(args)
    except BrokenPipeError:
        silence_stdout()
        return EXIT_STDOUT_CLOSED


def _run(args: argparse.Namespace) -> int:
    if args.jsonl:
        return _jsonl(sys.stdin, sys.stdout, args.shell)
    if args.command_text is None:
        print("shellrt classify: give a COMMAND, or use --jsonl to read commands from stdin", file=sys.stderr)
        return 2
    # The analysis is imported when a command is classified, not for ``--help``; its verdict is read
    # as plain fields, so no pydantic class is built (start-up, issue 22).
    from shellrt.analysis.analyze import analysis_fields

    fields = analysis_fields(args.command_text, args.shell)
    if args.json:
        import json  # only for JSON output: a table needs no codec

        from shellrt.analysis.wire import wire_form
        from shellrt.protocol._one_line import printable_json

        print(printable_json(json.dumps(wire_form(fields), ensure_ascii=False)))
    else:
        print(_table(fields))
    return 0


def _jsonl(stdin: TextIO, stdout: TextIO, default_shell: str) -> int:
    import json

    from shellrt.protocol._one_line import printable_json

    for number, line in enumerate(stdin, start=1):
        if not line.strip():
            continue
        try:
            answer = _answer(line, default_shell)
        except _BadLine as exc:
            answer = {"error": str(exc), "line": number}
        except Exception as exc:  # never die on one line
            answer = {"error": f"internal error: {type(exc).__name__}: {exc}", "line": number}
        stdout.write(printable_json(json.dumps(answer, ensure_ascii=False)) + "\n")
        stdout.flush()
    return 0


class _BadLine(ValueError):
    """Raised when a ``--jsonl`` input line is not a JSON string or a valid request object."""


def _answer(line: str, default_shell: str) -> dict[str, Any]:
    import json

    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _BadLine(f'invalid JSON: {exc.msg}; send a JSON string or {{"command": ...}}') from None
    except RecursionError:
        raise _BadLine('JSON nested too deeply to read; send a JSON string or {"command": ...}') from None
    shell = default_shell
    if isinstance(request, dict):
        command = request.get("command")
        shell = request.get("shell", default_shell)
        if not isinstance(command, str):
            raise _BadLine("object needs a string 'command'")
        if shell not in _SHELLS:
            raise _BadLine(f"'shell' must be one of {', '.join(_SHELLS)}")
    elif isinstance(request, str):
        command = request
    else:
        raise _BadLine("expected a JSON string or an object with 'command'")
    from shellrt.analysis import analyze

    return analyze(command, "powershell" if shell == "powershell" else "bash").to_json_dict()


def _table(fields: Mapping[str, Any]) -> str:
    """The verdict's fields (``CommandAnalysis``'s, see ``analysis_fields``) as aligned rows."""
    rows = [
        ("command", fields["command"]),
        ("shell", fields["shell"]),
        ("parse ok", _yes(fields["parse_ok"])),
        ("read-only", _yes(fields["read_only"])),
        ("concurrency-safe", _yes(fields["concurrency_safe"])),
        ("destructive", _yes(fields["destructive"])),
    ]
    for index, sub in enumerate(fields["subcommands"]):
        rows.append(("subcommands" if index == 0 else "", sub.text))
    for index, reason in enumerate(fields["reasons"]):
        rows.append(("reasons" if index == 0 else "", reason))
    if fields["write_targets"] or fields["writes_unknown"]:
        targets = ", ".join(fields["write_targets"]) or "-"
        rows.append(("writes", targets + (" (+ unknown)" if fields["writes_unknown"] else "")))
    if fields["cd_targets"]:
        rows.append(("cd", ", ".join(fields["cd_targets"])))
    width = max(len(key) for key, _ in rows)
    return "\n".join(f"{key:<{width}}  {_cell(value)}" for key, value in rows)


def _cell(value: str) -> str:
    """A value of the command (its text, subcommands, targets) as one line, controls escaped: the
    operator reviews a command someone gave them, and ``#<CR><ESC>[2Kls -la`` showed as ``ls -la``
    (red team round 29). Plain ASCII, the common case, loads nothing."""
    if value.isascii() and value.isprintable():
        return value
    from shellrt.permissions.shown import for_person

    return for_person(value, one_line=True)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"
