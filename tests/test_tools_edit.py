"""Edit: read-before-edit, optimistic concurrency, unique matches, byte-faithful writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.edit import EditInput, EditTool
from shellrt.tools.read import ReadTool


def make_ctx(root: Path, **kw: Any) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=root / ".session",
        workspace=root,
        cwd=str(root),
        allowed_roots=(root,),
        **kw,
    )


def read(ctx: ToolContext, path: Path, **kw: Any) -> None:
    tool = ReadTool()

    async def go() -> None:
        await tool.call(tool.parse_input({"file_path": str(path), **kw}), ctx)

    anyio.run(go)


def edit(ctx: ToolContext, **raw: Any) -> tuple[str, str]:
    """Run validate + call like the runtime does; returns (model text, UI diff)."""
    tool = EditTool()

    async def go() -> tuple[str, str]:
        inp = tool.parse_input(raw)
        v = await tool.validate(inp, ctx)
        if not v.ok:
            raise ToolExecutionError(v.message)
        out = await tool.call(inp, ctx)
        content = tool.to_model_content(out.data)
        assert isinstance(content, str)
        return content, tool.render_result(out.data)

    return anyio.run(go)


def test_edit_without_read_refused(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    with pytest.raises(ToolExecutionError, match="has not been read yet"):
        edit(make_ctx(tmp_path), file_path=str(f), old_string="x = 1", new_string="x = 2")
    assert f.read_text() == "x = 1\n"


def test_edit_after_external_change_refused(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    f.write_text("x = 1\ny = 2\n")
    with pytest.raises(ToolExecutionError, match="read it again"):
        edit(ctx, file_path=str(f), old_string="x = 1", new_string="x = 3")
    # The race window between validate and call is covered too: call re-checks.
    read(ctx, f)
    tool = EditTool()

    async def racing() -> None:
        inp = tool.parse_input({"file_path": str(f), "old_string": "x = 1", "new_string": "x = 3"})
        assert (await tool.validate(inp, ctx)).ok
        f.write_text("changed meanwhile\nx = 1\n")
        await tool.call(inp, ctx)

    with pytest.raises(ToolExecutionError, match="read it again"):
        anyio.run(racing)
    assert f.read_text() == "changed meanwhile\nx = 1\n"


def test_touch_without_content_change_is_fine(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    os.utime(f, ns=(1, 1))
    edit(ctx, file_path=str(f), old_string="x = 1", new_string="x = 2")
    assert f.read_text() == "x = 2\n"


def test_ambiguous_old_string_refused_then_replace_all(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("a = 1\na = 1\n")
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    with pytest.raises(ToolExecutionError, match="matches 2 times"):
        edit(ctx, file_path=str(f), old_string="a = 1", new_string="a = 2")
    text, _ = edit(ctx, file_path=str(f), old_string="a = 1", new_string="a = 2", replace_all=True)
    assert "2 replacements" in text and f.read_text() == "a = 2\na = 2\n"


def test_not_found_and_identical_refused(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("    indented\n")
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    with pytest.raises(ToolExecutionError, match="not found"):
        edit(ctx, file_path=str(f), old_string="missing", new_string="x")
    with pytest.raises(ToolExecutionError, match="line-number prefix"):
        edit(ctx, file_path=str(f), old_string="     1\t    indented", new_string="x")
    with pytest.raises(ToolExecutionError, match="identical"):
        edit(ctx, file_path=str(f), old_string="indented", new_string="indented")


def test_crlf_survives_byte_for_byte(tmp_path: Path) -> None:
    f = tmp_path / "win.txt"
    original = b"first\r\nsecond\r\nthird\r\nfourth\r\n"
    f.write_bytes(original)
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    edit(ctx, file_path=str(f), old_string="second\nthird", new_string="SECOND\nTHIRD\nextra")
    assert f.read_bytes() == b"first\r\nSECOND\r\nTHIRD\r\nextra\r\nfourth\r\n"


def test_latin1_survives_byte_for_byte(tmp_path: Path) -> None:
    f = tmp_path / "legacy.txt"
    original = b"caf\xe9 = 1\nna\xefve = 2\n\xff\xfe end\n"
    f.write_bytes(original)
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    edit(ctx, file_path=str(f), old_string="naïve = 2", new_string="naïve = 3")
    assert f.read_bytes() == original.replace(b"na\xefve = 2", b"na\xefve = 3")
    with pytest.raises(ToolExecutionError, match="latin-1"):
        edit(ctx, file_path=str(f), old_string="naïve = 3", new_string="snowman ☃")


def test_bom_and_mode_preserved(tmp_path: Path) -> None:
    f = tmp_path / "run.sh"
    f.write_bytes(b"\xef\xbb\xbfecho hi\n")
    f.chmod(0o750)
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    edit(ctx, file_path=str(f), old_string="hi", new_string="ho")
    assert f.read_bytes() == b"\xef\xbb\xbfecho ho\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o750
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_faces_and_read_state_updated(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("".join(f"l{i}\n" for i in range(20)))
    ctx = make_ctx(tmp_path)
    read(ctx, f)
    text, diff = edit(ctx, file_path=str(f), old_string="l10\n", new_string="ten\n")
    assert "has been updated" in text and "    11\tten" in text
    assert "-l10" in diff and "+ten" in diff and diff.startswith("--- a/")
    # A second edit needs no new Read: the edit refreshed the read state.
    edit(ctx, file_path=str(f), old_string="ten", new_string="TEN")
    assert "TEN" in f.read_text()


def test_create_with_empty_old_string(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    text, _ = edit(ctx, file_path="new/dir/f.txt", old_string="", new_string="hello\n")
    assert (tmp_path / "new/dir/f.txt").read_text() == "hello\n" and "Created" in text


def test_symlink_escape_denied_and_sensitive_paths_safety_checked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = tmp_path / "outside.txt"
    target.write_text("x")
    (ws / "inner").symlink_to(target)
    (ws / ".git" / "hooks").mkdir(parents=True)
    ctx = make_ctx(ws)
    tool = EditTool()

    async def verdict(path: str) -> Any:
        inp = EditInput(file_path=path, old_string="a", new_string="b")
        await tool.validate(inp, ctx)
        res = await tool.check_permissions(inp, ctx)
        return res, tool.permission_subject(tool.backfill(inp))

    res, subject = anyio.run(verdict, "inner")
    # Writing outside the sandbox's writable places is the boundary, not a question: denied.
    assert res.behavior == "deny" and "outside" in res.reason and res.reason.startswith("inner:")
    assert subject.paths == (str(target),) and subject.access == "write"
    for sensitive in (
        ".env.local",
        ".git/hooks/pre-commit",
        ".git/config",
        ".bashrc",
        ".ssh/config",
        ".shellrt/settings.local.json",
        ".claude/settings.json",
    ):
        res, _ = anyio.run(verdict, sensitive)
        assert res.behavior == "ask" and res.safety_check, sensitive
    res, _ = anyio.run(verdict, "src/ok.py")
    assert res.behavior == "passthrough"
    ctx_denied = make_ctx(ws, read_denied=(ws / "private",))
    assert (
        anyio.run(
            lambda: tool.check_permissions(
                EditInput(file_path="private/x", old_string="a", new_string="b"), ctx_denied
            )
        ).behavior
        == "deny"
    )


def test_symlink_escape_refused_by_the_gate(tmp_path: Path) -> None:
    """Headless (no one to approve), an edit through a symlink to outside the workspace is refused."""
    from shellrt.permissions import build_governance

    ws = tmp_path / "ws"
    ws.mkdir()
    target = tmp_path / "outside.txt"
    target.write_text("a\n")
    (ws / "inner").symlink_to(target)
    gov = build_governance(ws, mode="acceptEdits", home=tmp_path / "home")
    ctx = make_ctx(ws)
    read(ctx, ws / "inner")
    tool = EditTool()

    async def decide(path: str) -> Any:
        inp = tool.parse_input({"file_path": path, "old_string": "a", "new_string": "b"})
        assert (await tool.validate(inp, ctx)).ok
        return await gov.gate.authorize(tool, tool.backfill(inp), ctx)

    decision = anyio.run(decide, "inner")
    assert decision.behavior == "deny" and "outside" in decision.reason
    assert target.read_text() == "a\n"
    (ws / "own.txt").write_text("a\n")
    read(ctx, ws / "own.txt")
    assert anyio.run(decide, "own.txt").behavior == "allow"  # acceptEdits inside the workspace


def test_read_then_edit_through_the_runtime(tmp_path: Path) -> None:
    """The real pipeline: schema, validate, backfill, rules, call, read state shared across calls."""
    import shellrt

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_bytes(b"x = 1\r\ny = 2\r\n")

    async def go() -> list[Any]:
        async with shellrt.Runtime(
            workspace=ws, sandbox="local", session_dir=tmp_path / "s", mode="acceptEdits"
        ) as rt:
            edit_use = {
                "type": "tool_use",
                "id": "e1",
                "name": "Edit",
                "input": {"file_path": "app.py", "old_string": "y = 2", "new_string": "y = 3"},
            }
            first = await rt.run({"role": "assistant", "content": [edit_use]})
            read_use = {"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "app.py"}}
            second = await rt.run({"role": "assistant", "content": [read_use]})
            third = await rt.run({"role": "assistant", "content": [{**edit_use, "id": "e2"}]})
            return [first["content"][0], second["content"][0], third["content"][0]]

    first, second, third = anyio.run(go)
    assert first["is_error"] and "has not been read yet" in first["content"]
    assert not second["is_error"] and "     2\ty = 2" in second["content"]
    assert not third["is_error"] and "has been updated" in third["content"], third
    assert (ws / "app.py").read_bytes() == b"x = 1\r\ny = 3\r\n"


class _MappedBackend:
    """A docker-like path view: the workspace appears as /workspace inside the sandbox."""

    @staticmethod
    def make(ws: Path) -> Any:
        from pathlib import PurePosixPath

        from sandbox.base import SandboxBackend
        from sandbox.policy import SandboxPolicy

        class Mapped(SandboxBackend):
            name = "mapped"

            async def exec(self, request: Any) -> Any:  # pragma: no cover - not used
                raise NotImplementedError

            def to_host_path(self, sandbox_path: str) -> Path | None:
                try:
                    return ws / PurePosixPath(sandbox_path).relative_to("/workspace")
                except ValueError:
                    return None

            def to_sandbox_path(self, host_path: Path) -> str | None:
                try:
                    return str(PurePosixPath("/workspace") / Path(host_path).relative_to(ws))
                except ValueError:
                    return None

        return Mapped(SandboxPolicy(workspace=ws))


def test_sandbox_paths_map_to_host_paths(tmp_path: Path) -> None:
    """With a container view (/workspace), relative and sandbox paths reach the host file; outputs speak sandbox."""
    from sandbox.base import SandboxBackend
    from shellrt.tools.glob import GlobTool
    from shellrt.tools.grep import GrepTool

    ws = (tmp_path / "ws").resolve()
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "m.py").write_text("value = 1\n")
    ctx = ToolContext(
        session_id="s",
        session_dir=tmp_path / "s",
        workspace=ws,
        cwd="/workspace/src",
        allowed_roots=(ws,),
        services={SandboxBackend: _MappedBackend.make(ws)},
    )
    read(ctx, Path("m.py"))
    assert str(ws / "src" / "m.py") in ctx.read_state
    with pytest.raises(ToolExecutionError, match=r"File does not exist: nope\.py \(/workspace/src/nope\.py\)"):
        read(ctx, Path("nope.py"))
    text, _ = edit(ctx, file_path="/workspace/src/m.py", old_string="value = 1", new_string="value = 2")
    assert "/workspace/src/m.py" in text and (ws / "src" / "m.py").read_text() == "value = 2\n"

    async def tool_text(tool: Any, raw: dict[str, Any]) -> str:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    assert (
        anyio.run(tool_text, GlobTool(), {"pattern": "*.py", "path": "/workspace"}) == "/workspace/src/m.py"
    )
    assert anyio.run(tool_text, GrepTool(), {"pattern": "value"}) == "Found 1 file\n/workspace/src/m.py"
    assert (
        anyio.run(tool_text, GrepTool(), {"pattern": "value", "output_mode": "content"}) == "m.py:1:value = 2"
    )
