"""Red team, round 38 (novel2): a docker command chose its own audit login identity, host root's included.

``/proc/self/loginuid`` is who the host's audit log says logged in (every record carries it, rules
select by it, it survives ``setuid`` and children inherit it). While unset any process may set it
once, without a capability, to any uid its user namespace maps -- a container has none of its own,
so any uid, 0 included. A container's processes inherit it from runc, i.e. from containerd's shim
and the daemon, unset where no login ran (CI, a systemd service): the container's init, the
executor, every command (and a ``docker exec``'d process: runc exec is the shim's child too).
A command as uid 12345 without capabilities wrote ``0``: a LOGIN record, and from then on its
actions were host root's login in the audit log.

Now ``priv`` (sandbox/docker/priv.c) pins it, while unset, in every mode before anything runs under
it: ``boot`` (the container's executor: every command descends from it) and ``exec`` (the
operator's ``docker exec`` shell) to the audit uid the host passes (the caller's own where a login
set it, else the uid the session's commands run as), and each command's child to its own uid
where still unset. Changing a set value needs CAP_AUDIT_CONTROL, which no container process holds.

Real containers (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import DEBIAN, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_UNSET = "4294967295"
#: Read it, try to become host root's login, read it again.
_PROBE = (
    "printf 'before %s\\n' \"$(cat /proc/self/loginuid)\"; "
    '(echo 0 > /proc/self/loginuid && echo "write ok, now $(cat /proc/self/loginuid)") 2>/dev/null '
    "|| echo 'write refused'; "
    "printf 'after %s\\n' \"$(cat /proc/self/loginuid)\""
)


def _host_audit_uid() -> str:
    """The test process's own login uid: what the host should pass on (unset: the command uid)."""
    with open("/proc/self/loginuid") as fh:
        return fh.read().strip()


def _said(out: str) -> dict[str, str]:
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line}


async def test_no_docker_command_sets_its_audit_login_uid(tmp_path: Path) -> None:
    """Failed before: ``before 4294967295``, ``write ok, now 0`` as the leased uid, as a
    per-call ``nobody`` and as a per-call root (3 of 3)."""
    require_docker()
    if not os.path.exists("/proc/self/loginuid"):
        pytest.fail("this kernel has no audit login uid: nothing to test (CI kernels have one)")
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        uid, _ = b.command_ids
        host = _host_audit_uid()
        pinned = str(uid) if host == _UNSET else host
        results = {}
        with anyio.fail_after(120):
            for user in (None, "nobody", "root"):
                rc, out = await run_sh(b, _PROBE, user=user)
                results[user] = (rc, out)
    wrong = {
        user or "the session user": out
        for user, (_rc, out) in results.items()
        if _said(out).get("write") != "refused"
        or _said(out).get("before") != pinned
        or _said(out).get("after") != pinned
    }
    assert not wrong, f"want {pinned}, unchangeable: {wrong}"


async def test_the_operators_docker_exec_shell_is_pinned_too(tmp_path: Path) -> None:
    """``inspect sandbox connect`` runs ``docker exec`` (runc exec: the shim's child, unset):
    failed before (1 of 1, ``write ok``)."""
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as b:
        argv = await b.connection_argv()
        argv = ["-i" if a == "-it" else a for a in argv]
        argv[-1] = _PROBE  # the shell's -c script: the probe instead of an interactive shell
        with anyio.fail_after(120):
            done = await anyio.to_thread.run_sync(
                lambda: subprocess.run(
                    argv, capture_output=True, text=True, timeout=100, stdin=subprocess.DEVNULL
                )
            )
    said = _said(done.stdout)
    assert said.get("write") == "refused", (done.stdout, done.stderr)
    assert said.get("before") not in (None, _UNSET, "0"), (done.stdout, done.stderr)
