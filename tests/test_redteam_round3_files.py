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
import json
import os
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from shellrt.permissions.globs import compile_matcher, glob_regex

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


# --- globs from hostile places never backtrack ------------------------------------------------------

_EVIL_DSTAR = "**/" * 14 + "x"  # ten of these took 40 s with the regex engine
_EVIL_STARS = "*a" * 12 + "*b"  # four took 5 s on a 200-character name


@pytest.fixture
def deep(ws: Path) -> Path:
    deep = ws.joinpath(*(["d"] * 40))
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("needle\n")
    return deep


@pytest.mark.parametrize("pattern", [_EVIL_DSTAR, _EVIL_STARS])
async def test_a_glob_pattern_cannot_hang_the_glob_tool(ws: Path, deep: Path, pattern: str) -> None:
    with anyio.fail_after(60):
        [(error, text)] = await _call(ws, [("Glob", {"pattern": pattern})], mode="dontAsk")
    assert not error, text


@pytest.mark.parametrize("pattern", [_EVIL_DSTAR, _EVIL_STARS])
async def test_a_hostile_gitignore_cannot_hang_the_python_walker(
    ws: Path, deep: Path, pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    (ws / ".gitignore").write_text(pattern + "\n")
    with anyio.fail_after(60):
        [(error, text)] = await _call(ws, [("Grep", {"pattern": "needle"})], mode="dontAsk")
    assert not error and "Found 1 file" in text, text


@pytest.mark.parametrize("pattern", [_EVIL_DSTAR, _EVIL_STARS])
async def test_an_untrusted_deny_rule_cannot_hang_every_permission_check(
    ws: Path, deep: Path, pattern: str
) -> None:
    """Deny rules of an untrusted workspace still apply (they only tighten): so they must be cheap."""
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": [f"Read({pattern})"]}}))
    rel = deep.relative_to(ws) / ("a" * 200)
    with anyio.fail_after(60):
        results = await _call(
            ws, [("Read", {"file_path": str(rel)}), ("Bash", {"command": f"cat {rel}"})], mode="dontAsk"
        )
    assert all("needle" in text for _, text in results), results


def test_the_matcher_agrees_with_the_regex_translation_on_generated_globs() -> None:
    """The NFA matcher replaced the regex; on small inputs (where backtracking is cheap) both agree."""
    tokens = [
        "a",
        "b",
        "/",
        "*",
        "**",
        "?",
        "[ab]",
        "[!a]",
        "{a,b}",
        "{a,}",
        "{,b/a}",
        "\\*",
        "**/",
        "/**",
        "[",
    ]
    rnd = random.Random(3)
    for _ in range(5000):
        glob = "".join(rnd.choice(tokens) for _ in range(rnd.randint(1, 5)))
        path = "".join(rnd.choice("ab/*c") for _ in range(rnd.randint(0, 7)))
        try:
            expected = re.compile(r"(?s)\A" + glob_regex(glob) + r"\Z").match(path) is not None
        except re.error:
            continue
        assert compile_matcher(glob).fullmatch(path) is expected, (glob, path)


def _search_children() -> list[int]:
    """Live (not zombie) search processes this test process started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = (Path("/proc") / entry / "stat").read_text()
            cmdline = (Path("/proc") / entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"_grep_python import serve" in cmdline:
            found.append(int(entry))
    return found


async def test_a_grep_regex_cannot_hang_the_python_search(ws: Path) -> None:
    """Cancelled mid-search (the caller's deadline): the search process is killed with the call."""
    (ws / "f.txt").write_text("a" * 40 + "\n")
    started = anyio.current_time()
    with anyio.move_on_after(1):
        await _call(
            ws, [("Grep", {"pattern": "(a+)+b", "path": "f.txt", "output_mode": "content"})], mode="dontAsk"
        )
    # Ended with the call's 1 s deadline, not with the regex (2^40 steps: never). 11 s, not 1.5: a
    # loaded lane's waits for a core count in a wall time (>= 10x the idle 1.05 s).
    assert anyio.current_time() - started < 11
    assert _search_children() == []


@pytest.mark.parametrize("where", ["f.txt", "."])
async def test_a_catastrophic_grep_pattern_stops_at_the_deadline_with_a_clear_error(
    ws: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr("shellrt.tools._search.PYTHON_SEARCH_TIMEOUT_S", 1.0)
    monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    (ws / "f.txt").write_text("a" * 40 + "\n")
    started = anyio.current_time()
    with anyio.fail_after(30):
        [(error, text)] = await _call(
            ws, [("Grep", {"pattern": "(a+)+b", "path": where, "output_mode": "content"})], mode="dontAsk"
        )
    assert error and "took too long" in text and "simplify it" in text, text
    assert anyio.current_time() - started < 15
    assert _search_children() == []


async def test_the_search_process_finds_what_the_python_search_finds(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_NO_RIPGREP", "1")
    name = os.fsdecode(b"caf\xe9.txt")  # not UTF-8: the name crosses the pipe intact
    (ws / name).write_text("one needle\nother\nneedle two\n")
    (ws / "g.txt").write_text("nothing\n")
    results = await _call(
        ws,
        [
            ("Grep", {"pattern": "needle", "output_mode": "content", "-n": True}),
            ("Grep", {"pattern": "needle", "path": name, "output_mode": "count"}),
            ("Grep", {"pattern": "(unclosed", "path": "g.txt"}),
        ],
        mode="dontAsk",
    )
    assert not results[0][0] and "1:one needle" in results[0][1] and "3:needle two" in results[0][1], results
    assert not results[1][0] and "2" in results[1][1], results
    assert results[2][0] and "Invalid regular expression" in results[2][1], results
