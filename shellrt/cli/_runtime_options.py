"""Options that build a governed `Runtime`, shared by ``shellrt serve`` and ``shellrt tools``.

`add_runtime_options` adds the sandbox flags (``--sandbox``, ``--workspace`` …)
plus governance: ``--settings FILE``, ``--mode``, ``--allow RULE``,
``--deny RULE``, ``--trust-workspace``. `runtime_from_args` turns them into an (unstarted) Runtime.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from shellrt.cli._sandbox_options import add_sandbox_options, mask_defaults_from_args, sandbox_from_args

__all__ = ["PERMISSION_MODES", "add_runtime_options", "runtime_from_args"]

PERMISSION_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


def add_runtime_options(parser: argparse.ArgumentParser, *, sandbox: bool = True) -> None:
    """Add the sandbox options (unless ``sandbox`` is False) and the governance options."""
    if sandbox:
        add_sandbox_options(parser)
    group = parser.add_argument_group("permissions")
    group.add_argument(
        "--settings",
        action="append",
        default=[],
        metavar="FILE",
        help="extra settings file (JSON, Claude-Code shape: permissions, hooks, mcpServers); repeatable. "
        "The workspace's .shellrt/settings.json and your user settings are read as well",
    )
    group.add_argument(
        "--trust-workspace",
        action="store_true",
        help="obey the workspace's own settings (.claude/settings*.json, .shellrt/settings*.json, .mcp.json: "
        "hooks, allow rules, defaultMode, MCP servers) this session. Without it they are obeyed only when "
        "`shellrt trust add DIR` recorded them unchanged; otherwise only their deny/ask rules apply",
    )
    group.add_argument(
        "--mode",
        choices=PERMISSION_MODES,
        default=None,
        help="permission mode (default: from settings, else 'default': read-only calls run, others are asked)",
    )
    group.add_argument(
        "--allow", action="append", default=[], metavar="RULE", help="allow rule, e.g. 'Bash(git status:*)'"
    )
    group.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="RULE",
        help="deny rule, e.g. 'Bash(rm:*)' or 'WebFetch'",
    )


def runtime_from_args(
    args: argparse.Namespace,
    *,
    approver: Any = None,
    progress: Callable[..., None] | None = None,
) -> Any:
    """An unstarted `shellrt.Runtime` for the parsed options (use it as ``async with``)."""
    from shellrt.runtime import Runtime

    if hasattr(args, "sandbox"):
        config, policy = sandbox_from_args(args, masks=False)  # the Runtime derives them
        sandbox: Any = config
    else:
        from pathlib import Path

        from sandbox import SandboxPolicy

        workspace = Path(args.workspace).expanduser().resolve()
        sandbox, policy = "local", SandboxPolicy(workspace=workspace)
    from shellrt.runtime.sandbox_policy import PolicyError

    try:
        return Runtime(
            policy.workspace,
            sandbox,
            policy=policy,
            approver=approver,
            settings_files=list(args.settings),
            mode=args.mode,
            allow=list(args.allow),
            deny=list(args.deny),
            trust_workspace=bool(getattr(args, "trust_workspace", False)),
            progress=progress,
            mask_defaults=mask_defaults_from_args(args),
            session_id=getattr(args, "session", None),
        )
    except PolicyError as exc:  # a rule the sandbox cannot enforce exactly: refuse, saying what to do
        raise SystemExit(f"shellrt: {exc}") from exc
