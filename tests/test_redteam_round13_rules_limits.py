"""Red team round 13: bwrap sessions had no process cap and no /tmp cap unless asked for.

- A fork bomb (``:(){ :|:& };:``) filled the host's process table: no default pids limit. Now
  `BwrapConfig.default_pids` (4096) caps every session: through the session cgroup where one can be
  made, else RLIMIT_NPROC (a root caller's commands run as the session's own uid, which counts only
  them). Failed before: the bomb's processes went past any bound (here: past 300 with a cap of 96).
- ``fallocate -l 50G /tmp/x`` filled the host's disk (its memory where the host's /tmp is a tmpfs):
  the session's /tmp is a host directory. Now a root caller's is a tmpfs of
  `BwrapConfig.default_tmp_bytes` (1 GiB) or the policy's ``tmp_bytes``; past it a write fails with
  ENOSPC. Failed before: the write succeeded (and a requested ``tmp_bytes`` was refused).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from sandbox.policy import ResourceLimits
from shellrt.supervisor import Supervisor
from tests._bomb_peak import bomb_peak, open_ws, uid_procs
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]
MiB = 1 << 20


@pytest.fixture
def ws() -> Iterator[Path]:
    yield from open_ws("rt13-limits-")


def _need_root_bwrap() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(os.geteuid() == 0, "the caps are tested as root (the sandbox uid and the host tmpfs)")


def _left_behind(uid: int) -> int:
    """Live processes of ``uid`` now (must be none), once the zombies are reaped (within 5 s)."""
    live = uid_procs(uid, zombies=False)
    deadline = time.monotonic() + 5
    while uid_procs(uid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return live + uid_procs(uid)


async def _bomb(backend: object, ws: Path, session: Path) -> tuple[str, float, int, int]:
    """Run a fork bomb; (output, seconds it took, sandbox-uid processes at its peak, and after)."""
    from sandbox import SandboxBackend

    assert isinstance(backend, SandboxBackend)
    await backend.start()
    uid = backend.sandbox_ids[0]  # type: ignore[attr-defined]
    try:
        async with Supervisor(backend, session_dir=session) as sup:
            result, took, peak = await bomb_peak(sup, uid, zombies=True, settle=1)
            assert result.output_path is not None
            out = result.output_path.read_text()
    finally:
        await backend.close()
    return out, took, peak, _left_behind(uid)


@pytest.mark.parametrize("persistent", MODES)
def test_a_fork_bomb_stops_at_the_default_cap(ws: Path, tmp_path: Path, persistent: bool) -> None:
    _need_root_bwrap()
    backend = create_backend(BwrapConfig(persistent=persistent, default_pids=96), SandboxPolicy(workspace=ws))
    out, took, peak, after = anyio.run(_bomb, backend, ws, tmp_path / "s")
    assert peak <= 96 + 8, (peak, out[-500:])  # the cap (+ a few before a fork sees the count)
    assert took < 30, took  # ended by its timeout, not by the host running out
    assert after == 0, after  # nothing left behind


def test_the_rlimit_fallback_caps_a_fork_bomb(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine without the pids controller (simulated: the probe reports it missing) the
    default cap is RLIMIT_NPROC on the session's own uid."""
    _need_root_bwrap()
    import sandbox._cgroup_limits as limits

    monkeypatch.setattr(limits, "cgroup_unavailable_reasons", lambda: {"pids": "no pids controller (test)"})
    backend = create_backend(BwrapConfig(persistent=True, default_pids=96), SandboxPolicy(workspace=ws))
    out, took, peak, after = anyio.run(_bomb, backend, ws, tmp_path / "s")
    assert peak <= 96 + 8, (peak, out[-500:])
    assert took < 30 and after == 0, (took, after)


def test_the_defaults_are_on() -> None:
    config = BwrapConfig()
    assert config.default_pids == 4096 and config.default_tmp_bytes == 1 << 30


async def _run(backend: object, ws: Path, session: Path, command: str) -> tuple[str, Path | None]:
    from sandbox import SandboxBackend

    assert isinstance(backend, SandboxBackend)
    await backend.start()
    try:
        tmp = getattr(backend, "session_tmp", None)
        async with Supervisor(backend, session_dir=session) as sup:
            result = await sup.run(command, timeout_s=60)
            assert result.output_path is not None
            out = result.output_path.read_text()
        if tmp is not None:
            out += f"\nhost-sees: {sorted(os.listdir(tmp))}"
    finally:
        await backend.close()
    return out, tmp


@pytest.mark.parametrize("persistent", MODES)
def test_writing_past_the_tmp_cap_fails_with_enospc(ws: Path, tmp_path: Path, persistent: bool) -> None:
    _need_root_bwrap()
    policy = SandboxPolicy(workspace=ws, limits=ResourceLimits(tmp_bytes=16 * MiB))
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    command = (
        "head -c 8M /dev/zero > /tmp/ok && echo small-ok; "
        "fallocate -l 64M /tmp/big 2>&1; head -c 32M /dev/zero > /tmp/big2 2>&1; echo rc=$?"
    )
    out, tmp = anyio.run(_run, backend, ws, tmp_path / "s", command)
    assert "small-ok" in out and "No space left on device" in out and "rc=1" in out, out
    assert "'ok'" in out, out  # the host (file tools) sees the same /tmp
    assert tmp is not None and not os.path.ismount(tmp) and not tmp.exists()  # unmounted and gone at close


def test_the_default_tmp_cap_applies_and_normal_commands_run(ws: Path, tmp_path: Path) -> None:
    _need_root_bwrap()
    backend = create_backend(BwrapConfig(), SandboxPolicy(workspace=ws))
    command = (
        "stat -f -c 'tmpfs-blocks=%b bsize=%S' /tmp; seq 64 | xargs -P 16 -n 1 sh -c 'echo $0 > /tmp/n.$0'; "
        "ls /tmp | grep -c '^n\\.'; python3 -c 'import os; print(len(os.sched_getaffinity(0)) > 0)'"
    )
    out, _ = anyio.run(_run, backend, ws, tmp_path / "s", command)
    line = next(x for x in out.splitlines() if x.startswith("tmpfs-blocks="))
    blocks, bsize = (int(w.split("=")[1]) for w in line.split())
    assert blocks * bsize == 1 << 30, out
    assert "\n64\n" in out and "True" in out, out


FILL = (
    "for d in secrets /run /proc/acpi; do head -c 4M /dev/zero > $d/fill 2>/dev/null && echo wrote-$d; done; "
    'awk \'{for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "tmpfs" && $6 ~ /^rw/) '
    'print "rwtmpfs", $5, $(i+3); break }}\' /proc/self/mountinfo; echo done'
)


@pytest.mark.parametrize("persistent", MODES)
def test_no_unsized_tmpfs_for_a_command_to_fill(ws: Path, tmp_path: Path, persistent: bool) -> None:
    """A read-denied directory was an empty tmpfs of half the host's RAM, and so were the /run and
    /proc masks: one bwrap per command makes them as the sandbox uid, which then wrote into them past
    every cap. Now masks are read-only and every tmpfs without a size gets 1 MiB. Failed before:
    ``wrote-secrets``, ``wrote-/run`` (per command), and rw tmpfs mounts with no ``size=``."""
    _need_root_bwrap()
    from tests._rt11_rules import deny_policy

    (ws / "secrets").mkdir()
    policy = deny_policy(ws, "Read(./secrets/**)")
    out, _ = anyio.run(
        _run, create_backend(BwrapConfig(persistent=persistent), policy), ws, tmp_path / "s", FILL
    )
    assert "wrote-" not in out, out
    # The top mount of each place (the zygote's own /dev/shm lies below each command's sized one),
    # and none that a later one covers: another session's sized /tmp under the host's /tmp comes in
    # with the read-only root and lies below this sandbox's own /tmp (unreachable by any path).
    listed = [line.split()[1:3] for line in out.splitlines() if line.startswith("rwtmpfs")]
    tops = {
        point: options
        for i, (point, options) in enumerate(listed)
        if not any(later != point and point.startswith(later.rstrip("/") + "/") for later, _ in listed[i + 1 :])
    }
    assert tops, out
    for options in tops.values():
        found = [o for o in options.split(",") if o.startswith("size=")]
        assert found and int(found[0][5:-1]) * 1024 <= 1 << 30, (options, out)


def test_a_killed_owners_tmp_mount_is_swept(ws: Path, tmp_path: Path) -> None:
    """SIGKILL leaves the sized /tmp mounted; the next root session's start unmounts and removes it."""
    _need_root_bwrap()
    import signal
    import subprocess
    import sys

    script = (
        "import anyio, sys, time\n"
        "from pathlib import Path\n"
        "from sandbox import BwrapConfig, SandboxPolicy\n"
        "from sandbox.factory import create_backend\n"
        "async def main():\n"
        "    b = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=Path(sys.argv[1])))\n"
        "    await b.start()\n"
        "    print(b.session_tmp, flush=True)\n"
        "    time.sleep(60)\n"
        "anyio.run(main)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(ws)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    left = Path(child.stdout.readline().strip())
    assert os.path.ismount(left)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert os.path.ismount(left)  # nobody unmounted it
    backend = create_backend(BwrapConfig(persistent=False), SandboxPolicy(workspace=ws))
    anyio.run(backend.start)
    try:
        assert not os.path.ismount(left) and not left.parent.exists()
    finally:
        anyio.run(backend.close)
