"""Round 11 rules-in-the-sandbox tests: deny rules compiled into a policy, one command run under it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox import SandboxBackend, SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import derive_policy
from shellrt.supervisor import Supervisor


def deny(text: str, root: Path) -> Any:
    """A ``deny`` rule as the CLI's ``--deny`` gives it, relative to ``root``."""
    return parse_rule(text, "deny", RuleOrigin("cli", None, None, root))


def deny_policy(ws: Path, *rules: str, **kw: Any) -> SandboxPolicy:
    """The sandbox policy of a workspace ``ws`` (``kw``: more policy fields) under deny ``rules``,
    without the default masks (only what the rules ask for)."""
    policy, _ = derive_policy(
        SandboxPolicy(workspace=ws, **kw), rules=[deny(r, ws) for r in rules], mask_defaults=False
    )
    return policy


async def run_in(
    backend: SandboxBackend, ws: Path, session: Path, command: str, timeout_s: float = 60
) -> str:
    """Start ``backend``, run ``cd <ws as the sandbox sees it>; command`` under a Supervisor and
    return its whole output; the backend is closed after."""
    await backend.start()
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            result = await sup.run(f"cd {backend.to_sandbox_path(ws)}; {command}", timeout_s=timeout_s)
            assert result.output_path is not None
            return result.output_path.read_text()
    finally:
        await backend.close()
