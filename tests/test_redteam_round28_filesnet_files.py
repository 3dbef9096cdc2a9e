"""Red team round 28 (filesnet): the file tools against path spellings, hard links and a racing swap.

All held (kept as regressions): a read-denied file and an ``Edit(./prot/**)``-denied one named
through ``/proc/self/root``, ``/proc/PID/root``, ``/proc/self/cwd``, ``/proc/thread-self/root``,
``/dev/fd/N``, ``/proc/self/fd/N``, ``//`` and ``./x/..`` are denied as by their plain name;
Write and Edit through a hard link to ``.git/config`` or agent settings replace the link (a new
inode), never the protected file; a command swapping a name between a file, a link out of the
workspace and a link to an outside directory while Read and Write run never lets a permitted
call read or change a file outside the workspace.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import anyio

from shellrt.permissions.engine import PermissionEngine
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.protocol import Tool, ToolContext, ToolExecutionError
from shellrt.tools.edit import EditTool
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool
from tests.test_tools_edit import make_ctx


def _ctx(root: Path, denied: tuple[Path, ...] = ()) -> ToolContext:
    (root / ".session").mkdir(exist_ok=True)
    return make_ctx(root, read_denied=denied)


def test_proc_and_fd_spellings_of_denied_paths_are_denied(tmp_path: Path, monkeypatch: Any) -> None:
    root = Path(os.path.realpath(tmp_path))
    (root / "secrets").mkdir()
    (root / "secrets/key").write_text("K\n")
    (root / "prot").mkdir()
    (root / "prot/f").write_text("p\n")
    origin = RuleOrigin("project", root=root)
    rules = RuleSet(
        [parse_rule("Read(./secrets/**)", "deny", origin), parse_rule("Edit(./prot/**)", "deny", origin)]
    )
    engine = PermissionEngine(rules, mode="acceptEdits", workspace=root)
    ctx = _ctx(root, denied=(root / "secrets",))
    monkeypatch.chdir(root)
    fd = os.open(root, os.O_RDONLY)
    try:

        def spellings(rel: str) -> list[str]:
            return [
                f"/proc/self/root{root}/{rel}",
                f"/proc/{os.getpid()}/root{root}/{rel}",
                f"/proc/self/cwd/{rel}",
                f"/proc/thread-self/root{root}/{rel}",
                f"/dev/fd/{fd}/{rel}",
                f"/proc/self/fd/{fd}/{rel}",
                f"/{root}/{rel}",
                f"{root}/./x/../{rel}",
            ]

        async def decide(tool: Tool[Any, Any], raw: dict[str, Any]) -> str:
            inp = tool.parse_input(raw)
            await tool.validate(inp, ctx)
            return (await engine.decide(tool, inp, ctx)).behavior

        async def main() -> list[tuple[str, str]]:
            passed = []
            for p in spellings("secrets/key"):
                if (got := await decide(ReadTool(), {"file_path": p})) != "deny":
                    passed.append((p, got))
            for p in spellings("prot/f"):
                if (got := await decide(WriteTool(), {"file_path": p, "content": "x"})) != "deny":
                    passed.append((p, got))
            return passed

        assert anyio.run(main) == []
    finally:
        os.close(fd)
    assert (root / "prot/f").read_text() == "p\n"


def test_hard_links_and_a_racing_swap_never_reach_protected_or_outside_files(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    root, outside = base / "ws", base / "outside"
    (root / ".git").mkdir(parents=True)
    (root / ".claude").mkdir()
    outside.mkdir()
    (root / ".git/config").write_text("[core]\n")
    (root / ".claude/settings.json").write_text("{}\n")
    os.link(root / ".git/config", root / "cfg.txt")
    os.link(root / ".claude/settings.json", root / "s.txt")
    (outside / "target").write_text("ORIGINAL\n")
    (outside / "secret").write_text("SECRET-OUTSIDE\n")
    ctx = _ctx(root)
    engine = PermissionEngine(RuleSet(), mode="acceptEdits", workspace=root)

    async def run(tool: Tool[Any, Any], raw: dict[str, Any]) -> str:
        """The call as the runtime makes it: validate, permission, then (if allowed) call."""
        inp = tool.parse_input(raw)
        if not (await tool.validate(inp, ctx)).ok:
            return "invalid"
        if (await engine.decide(tool, inp, ctx)).behavior != "allow":
            return "not allowed"
        try:
            return str(tool.to_model_content((await tool.call(inp, ctx)).data))
        except ToolExecutionError:
            return "error"

    async def linked() -> None:
        for name, old in (("cfg.txt", "[core]"), ("s.txt", "{")):
            await run(ReadTool(), {"file_path": str(root / name)})
            await run(EditTool(), {"file_path": str(root / name), "old_string": old, "new_string": "X"})
            await run(WriteTool(), {"file_path": str(root / name), "content": "PWNED\n"})

    anyio.run(linked)
    assert (root / ".git/config").read_text() == "[core]\n"
    assert (root / ".claude/settings.json").read_text() == "{}\n"

    stop = threading.Event()

    def swap() -> None:  # the command beside the tools: f and d are a file, then a link out, ...
        i = 0
        while not stop.is_set():
            i += 1
            for name in ("f", "d"):
                tmp = root / f".tmp{i}{name}"
                try:
                    if i % 3 == 0:
                        os.symlink(outside / "target", tmp)
                    elif i % 3 == 1:
                        tmp.write_text("a\n")
                    else:
                        os.symlink(outside, tmp)
                    os.rename(tmp, root / name)
                except OSError:
                    pass

    async def race() -> list[str]:
        seen = []
        for i in range(40):
            seen.append(await run(WriteTool(), {"file_path": str(root / "f"), "content": f"W{i}\n"}))
            seen.append(await run(WriteTool(), {"file_path": str(root / "d/target"), "content": f"D{i}\n"}))
            seen.append(await run(ReadTool(), {"file_path": str(root / "f")}))
            seen.append(await run(ReadTool(), {"file_path": str(root / "d/secret")}))
        return seen

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        seen = anyio.run(race)
    finally:
        stop.set()
        swapper.join(5)
    assert not [s for s in seen if "ORIGINAL" in s or "SECRET-OUTSIDE" in s]
    assert (outside / "target").read_text() == "ORIGINAL\n"
    assert sorted(os.listdir(outside)) == ["secret", "target"]
