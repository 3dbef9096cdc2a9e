"""Red team round 16 (trusted): the file tools wrote where the host process imports its code from.

Round 16 (bwrap) binds the places the host's Python loads code from read-only for *commands* when
they lie in a writable root (`sandbox/_hostcode.py`: a project ``.venv`` shellrt itself runs from).
The file tools run on the host, governed by rules only: under ``acceptEdits`` (or an
``Edit(./**)`` allow rule) Write and Edit put a ``.pth`` (run at every start of that
interpreter), a module, or a changed dependency there unasked, directly or through a symlink --
and the host ran it at its next import, as the caller (root included). Such a write is now a
safety check (asks in every mode; with no one to ask, refused), as ``.git/hooks`` is. Hard
links cannot carry a write there: the tools replace a name (temp file and rename), never the
inode another name shares (asserted below). Real sessions, local and bwrap.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests._calls import session_results
from tests.conftest import require


def _run(ws: Path, backend: str, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return session_results(ws, backend, calls, mode=mode, session_dir=ws.parent / "session")


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_file_tools_do_not_write_the_hosts_code_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    if backend == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trusted.json"))
    tmp_path.chmod(0o755)  # a root caller's bwrap commands run as another uid
    ws = tmp_path / "ws"
    site = ws / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "dep.py").write_text("VALUE = 1\n")
    (ws / "lib").symlink_to(site)  # a symlink into it: judged by where it leads
    os.link(site / "dep.py", ws / "dep_link.py")  # a hard link to one of its files
    monkeypatch.syspath_prepend(str(site))  # as the host interpreter of the project's .venv has it

    results = _run(
        ws,
        backend,
        "acceptEdits",
        [
            ("Write", {"file_path": str(site / "r16.pth"), "content": "import os\n"}),
            ("Read", {"file_path": str(site / "dep.py")}),
            ("Edit", {"file_path": str(site / "dep.py"), "old_string": "VALUE = 1", "new_string": "VALUE = 2"}),
            ("Write", {"file_path": str(ws / "lib" / "sitecustomize.py"), "content": "import os\n"}),
            ("Read", {"file_path": str(ws / "dep_link.py")}),
            ("Write", {"file_path": str(ws / "dep_link.py"), "content": "VALUE = 3\n"}),
            ("Write", {"file_path": str(ws / "notes.txt"), "content": "mine\n"}),
        ],
    )
    for i in (0, 2, 3):
        shown = json.dumps(results[i])
        assert results[i]["is_error"] and "host's Python" in shown, (i, shown)
    assert sorted(p.name for p in site.iterdir()) == ["dep.py"]
    assert (site / "dep.py").read_text() == "VALUE = 1\n"
    # A write through the hard link replaces the link's own name; the venv's file is untouched.
    assert not results[5]["is_error"], results[5]
    assert (ws / "dep_link.py").read_text() == "VALUE = 3\n"
    # The rest of the workspace is the model's to edit, unasked.
    assert not results[6]["is_error"] and (ws / "notes.txt").read_text() == "mine\n", results[6]


def test_a_workspace_on_the_hosts_path_may_not_shadow_its_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``PYTHONPATH`` at the workspace (or ``python -m`` from it): the whole root cannot be
    read-only, but a module the host imports, a ``.pth`` or ``sitecustomize`` there asks."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.syspath_prepend(str(ws))
    results = _run(
        ws,
        "local",
        "bypassPermissions",
        [
            ("Write", {"file_path": str(ws / "anyio.py"), "content": "raise SystemExit\n"}),
            ("Write", {"file_path": str(ws / "pydantic" / "__init__.py"), "content": "x = 1\n"}),
            ("Write", {"file_path": str(ws / "sitecustomize.py"), "content": "x = 1\n"}),
            ("Write", {"file_path": str(ws / "project_notes_r16.py"), "content": "x = 1\n"}),
        ],
    )
    for i in (0, 1, 2):
        assert results[i]["is_error"] and "host's Python" in json.dumps(results[i]), (i, results[i])
    assert sorted(p.name for p in ws.iterdir()) == ["project_notes_r16.py"], results[3]


@pytest.mark.docker
def test_docker_bind_mode_keeps_the_hosts_code_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Docker's bind mode mounts the host directory itself: the venv shellrt runs from, inside
    it, was the container's to write (a ``.pth`` the host ran at its next start, as the caller)."""
    from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

    require_docker()
    from sandbox.docker import DockerBackend  # the docker SDK: only once the daemon is there
    tmp_path.chmod(0o755)
    ws = tmp_path / "ws"
    site = ws / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "dep.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(site))
    rel = site.relative_to(ws)

    async def main() -> tuple[int | None, str]:
        async with DockerBackend(config(BUSYBOX, workspace_mode="bind"), policy(ws)) as backend:
            return await run_sh(
                backend,
                f"echo 'import os' > {rel}/r16.pth; echo 'VALUE = 2' > {rel}/dep.py; "
                f"mv {rel} {rel}.old; echo mine > notes.txt; cat notes.txt",
            )

    code, out = anyio.run(main)
    assert site.is_dir() and not (site.parent / "site-packages.old").exists(), out
    assert sorted(p.name for p in site.iterdir()) == ["dep.py"], out
    assert (site / "dep.py").read_text() == "VALUE = 1\n", out
    assert out.rstrip().endswith("mine") and (ws / "notes.txt").read_text() == "mine\n", out
