"""Red team, round 42 (bwrap5): one command reached a later command's cwd report.

A command's shell writes its final cwd to ``$SHELLRT_CWD_FILE`` at exit, a file in the session's
state directory, which every command of the session saw bound writable at its host path. A
non-root caller's state directory is the command's uid's: a command listed it, watched it and
rewrote a later command's report between its shell's exit and the host's read (round 41's Left:
the session then moved to a directory of the attacker's choosing). A root caller's was crossable
only, but writable (1733): a command filled it (the sized reports tmpfs: ENOSPC after 64 files here) and every
later command's report failed, so no ``cd`` moved the session any more.

Now the host makes each report before its command starts, a FIFO whose read end only it holds, in
a directory no command may list or write (bound read-only, mode ``--x`` for the command's uid): a
command can name no report but its own, plant nothing and fill nothing.
"""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.bwrap

#: Lists the directory of its own report, then makes files there until one fails.
_FILL = r"""
import errno, os, sys
where = os.path.dirname(sys.argv[1])
try:
    names = os.listdir(where)
    print("LIST", len(names))
except OSError as exc:
    print("LIST", errno.errorcode[exc.errno])
made = 0
for i in range(400):
    try:
        with open(os.path.join(where, f"planted-{i}"), "w") as f:
            f.write("/\n")
        made += 1
    except OSError as exc:
        print("STOP", errno.errorcode[exc.errno])
        break
print("MADE", made)
"""

#: A background task that rewrites every report it finds in the directory named by argv[1].
_REWRITE = r"""
import os, sys, time
where, evil = sys.argv[1], sys.argv[2]
payload = (evil + "\n/\n").encode()
end = time.monotonic() + 120
try:
    os.listdir(where)
except OSError as exc:
    print("CANNOT", exc.errno, flush=True)
    sys.exit(0)
print("WATCHING", flush=True)
while time.monotonic() < end:
    try:
        names = os.listdir(where)
    except OSError:
        continue
    for name in names:
        if not name.startswith("cwd-"):
            continue
        tmp = os.path.join(where, ".x")
        try:
            with open(tmp, "wb") as f:
                f.write(payload)
            os.rename(tmp, os.path.join(where, name))
        except OSError:
            pass
"""


def _py(program: str, *args: str) -> str:
    code = base64.b64encode(program.encode()).decode()
    return f"echo {code} | base64 -d > /tmp/p.py && python3 /tmp/p.py " + " ".join(f"'{a}'" for a in args)


async def _report_path(sup: object) -> str:
    result = await sup.run('printf "%s\\n" "$SHELLRT_CWD_FILE"', timeout_s=60)  # type: ignore[attr-defined]
    path = result.preview.strip()
    assert path.startswith("/"), result.preview
    return path


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_command_can_neither_list_nor_fill_the_reports(tmp_path: Path, persistent: bool) -> None:
    """Failed before: uid 65534 listed and planted (``LIST 1``, ``MADE 400``), session and per
    command; root planted until the reports tmpfs was full (``MADE 64``, ``ENOSPC``) and the next
    ``cd`` was lost (session and per command): 4 of 4."""
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))

    async def main() -> tuple[str, str]:
        async with supervised(backend, tmp_path / "s") as sup:
            report = await _report_path(sup)
            out = (await sup.run(_py(_FILL, report), timeout_s=120)).preview
            await sup.run("cd sub", timeout_s=60)
            return out, sup.cwd

    out, cwd = anyio.run(main)
    said = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert said.get("LIST") in ("EACCES", "EPERM"), out
    assert said.get("MADE") == "0", out
    assert said.get("STOP") in ("EROFS", "EACCES", "EPERM"), out
    assert Path(cwd) == ws / "sub", (cwd, out)


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_a_background_task_cannot_rewrite_a_later_report(tmp_path: Path, persistent: bool) -> None:
    """Failed before as uid 65534 (round 41's Left: by hand 2 of 5 ``cd`` landed in ``evil``; here 1 to
    6 of 8 in a session, 8 of 8 per command); the task now cannot even list the directory (root: it
    never could)."""
    require_bwrap()
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "evil").mkdir()
    backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))

    async def main() -> list[str]:
        async with supervised(backend, tmp_path / "s") as sup:
            report = await _report_path(sup)
            task = await sup.start_background(_py(_REWRITE, str(Path(report).parent), str(ws / "evil")))
            seen = ""
            while "WATCHING" not in seen and "CANNOT" not in seen:  # whether it can watch, first
                chunk = await sup.tasks.read_new(task.id)
                seen += chunk.text
                if chunk.task.status != "running":
                    break
                await anyio.sleep(0.02)
            landed = []
            for _ in range(8):
                await sup.run("cd sub", timeout_s=60)
                landed.append(sup.cwd)
                sup.set_cwd(str(ws))
            await sup.tasks.stop(task.id)
            return landed

    landed = anyio.run(main)
    assert all(Path(cwd) == ws / "sub" for cwd in landed), " ".join(Path(cwd).name for cwd in landed)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_command_can_neither_list_nor_fill_the_reports",
        "test_a_background_task_cannot_rewrite_a_later_report",
    )


def test_a_killed_owners_reports_are_swept(tmp_path: Path) -> None:
    """The reports directory no one may list (0300) does not keep a killed owner's state directory
    on disk: failed before as uid 65534 (the sweep could not open it, so nothing above it went)."""
    import os

    from sandbox._scratch import remove_tree

    state = tmp_path / "shellrt-bwrap-x"
    reports = state / "reports"
    reports.mkdir(parents=True)
    os.mkfifo(reports / "cwd-1-00")
    (state / "lock").write_text("")
    reports.chmod(0o300)
    remove_tree(state)
    assert not state.exists()


def test_the_sweep_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_a_killed_owners_reports_are_swept")
