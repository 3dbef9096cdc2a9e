"""Red team round 45, docker6: shellrt's explicit masked paths narrowed a newer daemon's own.

``HostConfig.MaskedPaths`` replaces the daemon's whole default. Round 42 asked for a fixed list
(docker 20.10's, ``/proc/key-users`` and two moby additions copied from reading), so on moby 28
(``daemon/pkg/oci/defaults.go``) a container lost the per-CPU
``/sys/devices/system/cpu/cpu<N>/thermal_throttle`` masks (GHSA-6fw5-f8r9-fgfm, thermal interrupt
counts: a side channel across tenants) that the daemon gives every container, and any mask a later
daemon adds. Now the daemon is asked for its default (a container created, never started, with
none) and the request is that list, shellrt's floor and this host's per-CPU thermal directories;
the create check refuses a container that lacks any path asked.

The per-CPU rule runs on a sysfs tree made here (this host, a VM, has no thermal_throttle); the
daemon's own list comes from the real daemon.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh

pytestmark = [pytest.mark.anyio]

_NEWER = "/sys/devices/system/cpu/cpu0/thermal_throttle"


def _fake_sys(root: Path) -> Path:
    """A sysfs tree of 4 possible CPUs, cpu0 and cpu2 with thermal counters (an x86 host's)."""
    cpu = root / "devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "possible").write_text("0-3\n")
    for n in range(4):
        (cpu / f"cpu{n}").mkdir()
    for n in (0, 2):
        (cpu / f"cpu{n}" / "thermal_throttle").mkdir()
        (cpu / f"cpu{n}" / "thermal_throttle" / "core_throttle_count").write_text("7\n")
    return root


def test_the_request_keeps_the_daemons_masks_and_the_hosts_thermal_counters(tmp_path: Path) -> None:
    import sandbox.docker._masks as masks  # new in round 45: absent before (the failing count)

    sys_root = _fake_sys(tmp_path / "sys")
    newer_default = [*masks.FLOOR[:10], "/proc/some-new-mask"]
    asked = masks.masked_paths_for(newer_default, str(sys_root))
    for path in (
        "/proc/some-new-mask",
        "/proc/key-users",
        "/proc/interrupts",
        "/sys/devices/system/cpu/cpu0/thermal_throttle",
        "/sys/devices/system/cpu/cpu2/thermal_throttle",
    ):
        assert path in asked, (path, asked)
    assert "/sys/devices/system/cpu/cpu1/thermal_throttle" not in asked
    assert len(asked) == len(set(asked))


def test_a_container_that_lost_a_mask_the_request_named_is_refused() -> None:
    from sandbox.docker._kept import dropped_settings
    from sandbox.docker._masks import FLOOR

    asked = {"MaskedPaths": [*FLOOR, _NEWER]}
    kept = {"MaskedPaths": list(FLOOR)}  # what a daemon (or proxy) that dropped one keeps
    problems = dropped_settings(asked, kept, [])
    assert any(_NEWER in p for p in problems), problems


@pytest.mark.docker
async def test_every_session_masks_at_least_the_daemons_own_list(tmp_path: Path) -> None:
    require_docker()
    probe = subprocess.run(["docker", "create", BUSYBOX, "true"], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    cid = probe.stdout.strip()
    try:
        shown = subprocess.run(
            ["docker", "inspect", "-f", "{{json .HostConfig.MaskedPaths}}", cid],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        default = json.loads(shown.stdout)
    finally:
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60)
    assert default, "the daemon showed no default masks"
    from sandbox.docker._masks import FLOOR, host_cpu_masks

    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        session_cid = backend.container_id
        assert session_cid
        shown = subprocess.run(
            ["docker", "inspect", "-f", "{{json .HostConfig.MaskedPaths}}", session_cid],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        kept = set(json.loads(shown.stdout))
        missing = [p for p in [*default, *FLOOR, *host_cpu_masks()] if p not in kept]
        assert not missing, missing
        # And masked paths the host has read as nothing.
        assert Path("/proc/interrupts").read_text(), "the host shows no interrupts"
        rc, out = await run_sh(backend, "cat /proc/interrupts /proc/timer_list /proc/keys 2>/dev/null | wc -c")
        assert rc == 0 and out.strip() == "0", out
