"""Red team round 41 (files4): refusals told which names exist in a read-denied place.

Every file tool refuses a masked (read-denied) path at its permission check, whether or not it
exists, and Glob leaves masked names out of its listings. Two answers came before that check or
beside it and depended on what is there: Grep's validation said "Path does not exist" for a
missing ``secrets/id_ed25519`` but let an existing ``secrets/id_rsa`` reach the denial (the names
in a masked directory could be enumerated, one call a guess), and Read of a missing
``.env.local`` answered "Did you mean .env?" naming a masked file, or a rule-denied one. Now a
denied path gets the same denial whether it exists or not, and a suggestion never names a path
the session may not read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from shellrt.permissions import PermissionGate, build_governance
from shellrt.protocol import Tool, ToolContext
from shellrt.tools.grep import GrepTool
from shellrt.tools.read import ReadTool
from tests import _nonroot
from tests.test_tools_edit import make_ctx


def _workspace(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / ".session").mkdir()
    (root / ".env").write_text("TOKEN=hunter2\n")
    (root / "secrets/id_rsa").write_text("KEY\n")
    (root / "notes.md").write_text("hello\n")
    return root


def _rule_ctx(root: Path, tmp_path: Path) -> ToolContext:
    (root / ".shellrt").mkdir()
    (root / ".shellrt/settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./**/*.pem)"]}}))
    gov = build_governance(
        root, home=tmp_path / "home", managed_path=tmp_path / "managed.json", trust_workspace=True
    )
    ctx = make_ctx(root)
    ctx.services[PermissionGate] = gov.gate
    return ctx


def _answer(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    """What the model is told: validation, then the permission decision, then the call."""

    async def go() -> str:
        inp = tool.parse_input(raw)
        valid = await tool.validate(inp, ctx)
        if not valid.ok:
            return f"invalid: {valid.message}"
        gate = ctx.services.get(PermissionGate)
        if isinstance(gate, PermissionGate):  # the rules engine, the tool's own check among its steps
            allowed = await gate.authorize(tool, inp, ctx)
        else:
            allowed = await tool.check_permissions(inp, ctx)
        if allowed.behavior != "allow":
            return f"permission: {allowed.behavior}"
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except Exception as exc:
            return f"error: {exc}"

    return anyio.run(go)


def test_grep_answers_a_masked_path_alike_whether_it_exists(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    ctx = make_ctx(root, read_denied=(root / ".env", root / "secrets"))
    there = _answer(GrepTool(), ctx, {"pattern": "x", "path": str(root / "secrets/id_rsa")})
    assert there == "permission: deny", there
    for missing in ("secrets/id_ed25519", "secrets/a/b", "SECRETS/nope"):
        got = _answer(GrepTool(), ctx, {"pattern": "x", "path": str(root / missing)})
        assert got == there, f"{missing}: {got}"


def test_grep_answers_a_rule_denied_path_alike_whether_it_exists(tmp_path: Path) -> None:
    """A deny rule whose glob masked nothing when the session started (`_paths.rule_denied`)."""
    root = _workspace(tmp_path)
    (root / "deploy.pem").write_text("KEY\n")
    ctx = _rule_ctx(root, tmp_path)
    there = _answer(GrepTool(), ctx, {"pattern": "x", "path": str(root / "deploy.pem")})
    missing = _answer(GrepTool(), ctx, {"pattern": "x", "path": str(root / "other.pem")})
    assert there == "permission: deny", there
    assert missing == there, missing


def test_reads_suggestion_never_names_a_masked_path(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    ctx = make_ctx(root, read_denied=(root / ".env", root / "secrets"))
    for missing in (".env.local", "secrets.txt", ".ENV.example"):
        got = _answer(ReadTool(), ctx, {"file_path": str(root / missing)})
        assert "does not exist" in got, got
        assert "Did you mean" not in got, got
    near = _answer(ReadTool(), ctx, {"file_path": str(root / "notes.txt")})
    assert f"Did you mean {root / 'notes.md'}?" in near, near  # a readable neighbour is still named


def test_reads_suggestion_never_names_a_rule_denied_path(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "deploy.pem").write_text("KEY\n")
    ctx = _rule_ctx(root, tmp_path)
    got = _answer(ReadTool(), ctx, {"file_path": str(root / "deploy.txt")})
    assert "does not exist" in got and "deploy.pem" not in got, got


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_grep_answers_a_masked_path_alike_whether_it_exists",
        "test_grep_answers_a_rule_denied_path_alike_whether_it_exists",
        "test_reads_suggestion_never_names_a_masked_path",
        "test_reads_suggestion_never_names_a_rule_denied_path",
        "test_a_hard_links_refusal_names_the_mask_not_the_file",
    )


def test_a_hard_links_refusal_names_the_mask_not_the_file(tmp_path: Path) -> None:
    """Read of a workspace name that is a hard link of a file in a masked directory is refused;
    the refusal named that file (``secrets/id_rsa``), a name the mask keeps from every listing."""
    root = _workspace(tmp_path)
    os.link(root / "secrets/id_rsa", root / "copy.txt")
    ctx = make_ctx(root, read_denied=(root / "secrets",))
    got = _answer(ReadTool(), ctx, {"file_path": str(root / "copy.txt")})
    assert "hard link" in got and str(root / "secrets") in got, got
    assert "id_rsa" not in got and "KEY" not in got, got
