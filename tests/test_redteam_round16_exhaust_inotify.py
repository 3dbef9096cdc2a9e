"""Round 16, exhaustion: a command made the host hold one inotify watch per directory it created.

The protected-file guard watches every directory of the workspace, in the shellrt process, under
the caller's uid, until the kernel refuses one. A command that makes tens of thousands of
directories (``mkdir -p d{1..60000}``: 60,251 watches held here after one command) makes the
host pin that many inodes for the whole session and spend the uid's inotify budget
(``fs.inotify.max_user_watches``, shared by every program of that uid -- root's, when root runs
shellrt): three such sessions and no program of the uid could watch a file any more. A guard now
holds at most `MAX_WATCHES` (and never more than an eighth of the uid's limit), then falls back to
full scans, as it always did when the kernel refused a watch.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor


def _watches_held() -> int:
    """inotify watches held by this process (every inotify descriptor's ``fdinfo``)."""
    held = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                held += sum(1 for line in fh if line.startswith("inotify wd:"))
        except OSError:
            continue
    return held


def test_a_command_making_many_directories_cannot_spend_the_hosts_inotify_watches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_GUARD_MAX_WATCHES", "8192")
    ws = tmp_path / "ws"
    ws.mkdir()
    made = 8_500  # above the cap (8,192), few enough to make and scan in a few seconds
    script = f"import os\nfor i in range({made}): os.mkdir(f'd{{i}}')\nprint('made')"

    async def main() -> tuple[int, int, str]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                await sup.run("true", timeout_s=30)  # the guard's baseline, watching the workspace
                before = _watches_held()
                await sup.run(["python3", "-c", script], timeout_s=30)
                after = _watches_held()
                # The guard still works (full scans now): a planted hook is still caught.
                planted = await sup.run(
                    "mkdir -p .claude/hooks && echo x > .claude/hooks/pre.sh", timeout_s=30
                )
                return before, after, planted.output_path.read_text() + "\n".join(planted.notes)  # type: ignore[attr-defined]
        finally:
            await backend.close()

    before, after, planted = anyio.run(main)
    assert before >= 1
    limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    assert after <= min(8_192, limit // 8), (
        f"{after:,} watches held after the command made {made:,} directories"
    )
    assert not (ws / ".claude" / "hooks" / "pre.sh").exists(), planted


def test_the_watch_cap_is_configurable_and_never_above_an_eighth_of_the_uids_limit() -> None:
    from shellrt.supervisor._inotify import MAX_WATCHES, watch_cap

    eighth = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text()) // 8
    assert watch_cap({}) == min(MAX_WATCHES, eighth)
    assert watch_cap({"SHELLRT_GUARD_MAX_WATCHES": "100"}) == min(100, eighth)
    assert watch_cap({"SHELLRT_GUARD_MAX_WATCHES": "10000000"}) == eighth
    assert watch_cap({"SHELLRT_GUARD_MAX_WATCHES": "many"}) == min(MAX_WATCHES, eighth)
