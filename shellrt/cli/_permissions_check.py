"""The implementation of ``shellrt permissions check`` (see `shellrt.cli.permissions`).

Kept apart from the argument parser so ``shellrt --help`` loads no governance.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError

from sandbox.confine import contained
from shellrt.permissions import Governance, PermissionDecision, build_governance
from shellrt.protocol import PermissionResult, PermissionSubject, Tool, ToolContext, ToolOutput
from shellrt.protocol._one_line import printable_json

__all__ = ["run_check"]

#: Built-in tool classes by name, imported one by one so a missing module only loses that tool.
_KNOWN_TOOLS: dict[str, tuple[str, str]] = {
    "Bash": ("shellrt.tools.bash", "Bash"),
    "PowerShell": ("shellrt.tools.powershell", "PowerShell"),
    "Read": ("shellrt.tools.read", "ReadTool"),
    "Edit": ("shellrt.tools.edit", "EditTool"),
    "Write": ("shellrt.tools.write", "WriteTool"),
    "Glob": ("shellrt.tools.glob", "GlobTool"),
    "Grep": ("shellrt.tools.grep", "GrepTool"),
    "WebFetch": ("shellrt.tools.web_fetch", "WebFetchTool"),
}
_READ_TOOLS = {"Read", "Glob", "Grep"}
_WRITE_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}


def _governance(args: argparse.Namespace) -> Governance:
    return build_governance(
        args.workspace.resolve(),
        settings_files=args.settings,
        mode=args.mode,
        allow=args.allow,
        deny=args.deny,
        trust_workspace=args.trust_workspace,
    )


def run_check(args: argparse.Namespace) -> int:
    """``shellrt permissions check``: 0 when explained, 2 on bad input."""
    try:
        raw = json.loads(args.input_json)
    except json.JSONDecodeError as exc:
        print(f"shellrt permissions check: INPUT_JSON is not JSON ({exc.msg})", file=sys.stderr)
        return 2
    if not isinstance(raw, dict):
        print("shellrt permissions check: INPUT_JSON must be a JSON object", file=sys.stderr)
        return 2
    workspace = args.workspace.resolve()
    if not workspace.is_dir():
        from shellrt.permissions.shown import for_person

        print(for_person(f"shellrt permissions check: workspace {workspace} is not a directory"), file=sys.stderr)
        return 2
    gov = _governance(args)
    tool, kind = _tool_for(args.tool, workspace)
    try:
        tool_input = tool.parse_input(raw)
    except ValidationError as exc:
        print(f"shellrt permissions check: invalid input for {args.tool}: {exc}", file=sys.stderr)
        return 2
    ctx = ToolContext(
        session_id="permissions-check",
        session_dir=Path(tempfile.gettempdir()),
        workspace=workspace,
        cwd=str(workspace),
        allowed_roots=gov.allowed_roots(),
    )

    async def decide() -> PermissionDecision:
        return await gov.engine.decide(tool, tool_input, ctx)

    decision = anyio.run(decide)
    visible = gov.gate.is_visible(tool)
    if args.json:
        print(
            json.dumps(
                {
                    "tool": args.tool,
                    "tool_source": kind,
                    "input": raw,
                    "behavior": decision.behavior,
                    "headless_behavior": "deny" if decision.behavior == "ask" else decision.behavior,
                    "reason": decision.reason,
                    "rule": decision.rule,
                    "source": decision.source,
                    "chain": list(decision.chain),
                    "visible": visible,
                    "mode": gov.mode,
                    "diagnostics": gov.diagnostics,
                },
                indent=2,
            )
        )
        return 0
    from shellrt.permissions.shown import for_person

    headless = " (headless: deny)" if decision.behavior == "ask" else ""
    print(f"{args.tool} {printable_json(json.dumps(raw, ensure_ascii=False))}")  # controls: round 47
    print(f"decision: {decision.behavior}{headless}")
    print(f"reason:   {for_person(decision.reason)}")
    if decision.rule:
        print(f"rule:     {for_person(str(decision.rule))}  [{decision.source}]")
    print(f"tool:     {kind}" + ("" if visible else "; hidden from tools[] (denied outright)"))
    print("chain:")
    for step in decision.chain:
        print(f"  {for_person(step)}")
    _print_diagnostics(gov)
    return 0


def _print_diagnostics(gov: Governance) -> None:
    from shellrt.cli._permissions_list import print_diagnostics

    print_diagnostics(gov.diagnostics)


# --- tools ------------------------------------------------------------------------------
def _tool_for(name: str, workspace: Path) -> tuple[Tool[Any, Any], str]:
    """The built-in tool when it can be imported, else a generic stand-in (see module doc)."""
    spec = _KNOWN_TOOLS.get(name)
    if spec is not None:
        try:
            cls = getattr(importlib.import_module(spec[0]), spec[1])
            return cls(), f"built-in {spec[0]}.{spec[1]}"
        except Exception as exc:  # a partial checkout: explain with the generic subject
            return _GenericTool(name, workspace), f"generic stand-in ({spec[0]} not importable: {exc})"
    return _GenericTool(name, workspace), "generic stand-in (no built-in tool of that name)"


class _AnyInput(BaseModel):
    model_config = ConfigDict(extra="allow")


class _GenericTool(Tool[_AnyInput, str]):
    """Derives a permission subject from raw JSON the way the real tools do (approximately)."""

    input_model = _AnyInput

    def __init__(self, name: str, workspace: Path) -> None:
        self.name = name
        self.workspace = workspace

    def prompt(self) -> str:
        return self.name

    async def call(self, tool_input: _AnyInput, ctx: ToolContext) -> ToolOutput[str]:
        raise NotImplementedError("the generic stand-in only explains permissions")

    def to_model_content(self, output: str) -> str:
        return output

    def _field(self, tool_input: _AnyInput, *keys: str) -> str | None:
        extra = tool_input.model_extra or {}
        for key in keys:
            value = extra.get(key)
            if isinstance(value, str) and value:
                return value
        return None

    def _analysis(self, tool_input: _AnyInput) -> Any:
        from shellrt.analysis import analyze

        command = self._field(tool_input, "command") or ""
        return analyze(command, shell="powershell") if self.name == "PowerShell" else analyze(command)

    def permission_subject(self, tool_input: _AnyInput) -> PermissionSubject:
        if self.name in ("Bash", "PowerShell"):
            a = self._analysis(tool_input)
            return PermissionSubject(
                commands=tuple(s.text for s in a.subcommands), access="execute", incomplete=not a.parse_ok
            )
        if self.name in _READ_TOOLS | _WRITE_TOOLS:
            target = self._field(tool_input, "file_path", "path", "notebook_path") or str(self.workspace)
            path = os.path.realpath(os.path.join(self.workspace, os.path.expanduser(target)))
            return PermissionSubject(paths=(path,), access="read" if self.name in _READ_TOOLS else "write")
        if self.name == "WebFetch":
            host = urlparse(self._field(tool_input, "url") or "").hostname
            return PermissionSubject(domains=(host,) if host else (), access="fetch", incomplete=not host)
        return PermissionSubject()

    def is_read_only(self, tool_input: _AnyInput) -> bool:
        if self.name in ("Bash", "PowerShell"):
            return bool(self._analysis(tool_input).read_only)
        return self.name in _READ_TOOLS

    async def check_permissions(self, tool_input: _AnyInput, ctx: ToolContext) -> PermissionResult:
        subject = self.permission_subject(tool_input)
        if self.name in ("Bash", "PowerShell"):
            if self.is_read_only(tool_input):
                return PermissionResult.allow("read-only command (generic stand-in)")
            return PermissionResult.ask("this command is not read-only")
        if subject.paths:
            path = subject.paths[0]
            if not contained((path,), ctx.allowed_roots or (ctx.workspace,), resolve=True):
                return PermissionResult.ask(f"{path} is outside the allowed directories")
            if subject.access == "read":
                return PermissionResult.allow("read inside the allowed directories")
        return PermissionResult.passthrough()
