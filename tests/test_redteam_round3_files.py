"""Red team, round 3: the file tools (Read, Write, Edit, Glob, Grep) against hostile paths.

Each test is an attack through the real runtime on the local backend, where the
tools' own confinement and the permission rules are the only guard. Classes:
process magic links (``/proc/self/root``, ``/proc/<pid>/cwd``), device and
descriptor files, lexical spellings of a denied path, Glob patterns that climb
out of their directory, and writes that reach agent settings or git metadata
through a symlink the workspace already holds. All of these held; the tests keep
them held.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import shellrt

pytestmark = pytest.mark.anyio

_ids = itertools.count()


async def _call(
    ws: Path, calls: list[tuple[str, dict[str, Any]]], *, mode: str, **kw: Any
) -> list[tuple[bool, str]]:
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        session_dir=ws.parent / f".s{next(_ids)}",
        settings_files=(),
        mode=mode,
        **kw,
    ) as rt:
        blocks = [{"type": "tool_use", "id": f"r3f{next(_ids)}", "name": n, "input": i} for n, i in calls]
        user = await rt.run(blocks)
    out = []
    for block in user["content"]:
        content = block["content"]
        text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)
        out.append((bool(block.get("is_error")), text))
    return out


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secrets").mkdir()
    (ws / "secrets" / "a").write_text("TOPSECRET\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("OUTSIDE\n")
    return ws


def _deny(ws: Path) -> list[str]:
    return [f"Read(/{ws}/secrets/**)"]


@pytest.mark.parametrize(
    "spelling",
    [
        "/proc/self/root{ws}/secrets/a",
        "/proc/{pid}/root{ws}/secrets/a",
        "/proc/thread-self/root{ws}/secrets/a",
        "{ws}/secrets//a",
        "{ws}/./secrets/../secrets/a",
        "{ws}/secrets/a/",
        "secrets/./a",
    ],
)
async def test_read_of_a_denied_file_in_any_spelling_is_refused(ws: Path, spelling: str) -> None:
    path = spelling.format(ws=ws, pid=os.getpid())
    [(error, text)] = await _call(
        ws, [("Read", {"file_path": path})], mode="bypassPermissions", deny=_deny(ws)
    )
    assert error and "TOPSECRET" not in text


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"])
async def test_read_refuses_devices_and_descriptors(ws: Path, path: str) -> None:
    [(error, text)] = await _call(ws, [("Read", {"file_path": path})], mode="bypassPermissions")
    assert error, text


@pytest.mark.parametrize(
    "target",
    ["/proc/self/cwd/x.txt", "/proc/self/root{outside}/y.txt", "lnk/new/deeper/x.txt", "{outside}/z.txt"],
)
async def test_write_never_lands_outside_through_magic_links_or_symlinked_parents(
    ws: Path, target: str
) -> None:
    outside = ws.parent / "outside"
    (ws / "lnk").symlink_to(outside)
    before = sorted(p.name for p in outside.rglob("*"))
    [(error, _)] = await _call(
        ws,
        [("Write", {"file_path": target.format(outside=outside), "content": "PWN"})],
        mode="bypassPermissions",
    )
    assert error
    assert sorted(p.name for p in outside.rglob("*")) == before
    assert not (ws.parent / "x.txt").exists()


@pytest.mark.parametrize(
    ("pattern", "path"),
    [("../outside/*", None), ("../../**/o.txt", "sub"), ("{outside}/*", None), ("sub/../../outside/*", None)],
)
async def test_glob_patterns_that_climb_out_of_the_workspace_are_not_free(
    ws: Path, pattern: str, path: str | None
) -> None:
    (ws / "sub").mkdir()
    raw: dict[str, Any] = {"pattern": pattern.format(outside=ws.parent / "outside")}
    if path:
        raw["path"] = str(ws / path)
    [(error, text)] = await _call(ws, [("Glob", raw)], mode="dontAsk")
    assert "o.txt" not in text, text


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("Glob", {"pattern": "sub/../secrets/*"}),
        ("Glob", {"pattern": "s*/a"}),
        ("Grep", {"pattern": "TOP", "glob": "secrets/*", "output_mode": "content"}),
        ("Grep", {"pattern": "TOP", "path": "sub/../secrets", "output_mode": "content"}),
        ("Grep", {"pattern": "--pre=cat", "output_mode": "content"}),
    ],
)
async def test_search_tools_never_show_a_denied_file(ws: Path, tool: str, raw: dict[str, Any]) -> None:
    (ws / "sub").mkdir()
    [(_, text)] = await _call(ws, [(tool, raw)], mode="dontAsk", deny=_deny(ws))
    assert "TOPSECRET" not in text and "secrets/a" not in text, text


@pytest.mark.parametrize(
    "target",
    [
        "cfg/settings.json",  # cfg -> .claude
        "plain.json",  # plain.json -> .claude/settings.json
        "hk/pre-commit",  # hk -> .git/hooks
        "sub/.git/config",
        "bare.git/config",
        ".gitattributes",
        ".mcp.json",
        ".vscode/tasks.json",
        ".bashrc",
    ],
)
async def test_write_through_a_workspace_symlink_cannot_plant_settings_or_git_metadata(
    ws: Path, target: str
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".claude").mkdir()
    (ws / "cfg").symlink_to(".claude")
    (ws / "plain.json").symlink_to(".claude/settings.json")
    (ws / "hk").symlink_to(".git/hooks")
    [(error, text)] = await _call(
        ws, [("Write", {"file_path": target, "content": "{}"})], mode="bypassPermissions"
    )
    assert error, text
    assert not (ws / ".claude" / "settings.json").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()


async def test_edit_of_git_config_through_a_symlink_asks_in_bypass_mode(ws: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "gc").symlink_to(".git/config")
    before = (ws / ".git" / "config").read_text()
    results = await _call(
        ws,
        [
            ("Read", {"file_path": "gc"}),
            (
                "Edit",
                {"file_path": "gc", "old_string": "[core]", "new_string": "[core]\n\tpager = touch PWN"},
            ),
        ],
        mode="bypassPermissions",
    )
    assert results[1][0], results[1][1]
    assert (ws / ".git" / "config").read_text() == before
