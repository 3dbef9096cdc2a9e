"""Red team, round 17 (bwrap): the host's /sys named its cgroups, their pids and its interfaces.

``--ro-bind / /`` showed the host's sysfs as the host mounted it: every ``cgroup.procs`` and
``tasks`` under ``/sys/fs/cgroup`` listed the host's pids, the hierarchy named other sessions'
and containers' cgroups, ``/proc/self/cgroup`` the host's path of the command's own, and
``/sys/class/net`` with ``/sys/devices/.../net`` the host's interfaces (a network namespace of the
command's own has none of them). Now /sys is an allow-list (`sandbox._sysview`) and each sandbox
its own cgroup namespace; python, git, node, make and nproc still work. Real bwrap, both modes.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from tests._bwrap_session import require_bwrap, supervised


def _host_cgroup_names() -> set[str]:
    """Names of the host's cgroups this process sits in (not the root)."""
    names: set[str] = set()
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        names |= {part for part in line.split(":", 2)[2].split("/") if part}
    return names


#: Prints ``procs=N``: the pids in cgroup files under /sys that are not in this sandbox's /proc.
_FOREIGN_PIDS = """
import os
found = set()
for top, dirs, files in os.walk("/sys"):
    if top.count("/") >= 6:
        dirs[:] = []
    for name in {"cgroup.procs", "tasks"} & set(files):
        try:
            found |= {int(p) for p in open(os.path.join(top, name)).read().split()}
        except OSError:
            pass
print("procs=%d" % len({p for p in found if p and not os.path.isdir("/proc/%d" % p)}))
"""


def _host_cgroup_dirs() -> set[str]:
    """Names of the host's cgroups below its hierarchies' roots (not mount points)."""
    names: set[str] = set()
    for top, dirs, _files in os.walk("/sys/fs/cgroup"):
        if top.count("/") >= 6:
            dirs[:] = []
        names |= {d for d in dirs if not os.path.ismount(os.path.join(top, d))}
    return names


def _host_interfaces() -> list[str]:
    return sorted(n for n in os.listdir("/sys/class/net") if n != "lo") if os.path.isdir("/sys/class/net") else []


@pytest.mark.parametrize("persistent", [True, False], ids=["session", "per-command"])
def test_sys_names_no_host_cgroup_pid_or_interface(tmp_path: Path, persistent: bool) -> None:
    require_bwrap()
    ifaces = _host_interfaces()
    probe = (
        # pids in any cgroup file that this sandbox's /proc does not know (the host's; v1 lists those
        # outside the reader's pid namespace as 0), read by one process that starts no other
        "python3 -I -S -c " + shlex.quote(_FOREIGN_PIDS) + "; "
        "echo dirs=$(find /sys/fs/cgroup -mindepth 1 -maxdepth 4 -type d -printf '%f,' 2>/dev/null); "
        + "".join(f"echo if-{n}=$(find /sys -maxdepth 6 -name {n} 2>/dev/null | wc -l); " for n in ifaces)
        + "echo own=$(cut -d: -f3 /proc/self/cgroup | sort -u | tr '\\n' ,); "
        "echo nproc=$(nproc); python3 -c 'import os; print(\"py=%d\" % os.cpu_count())'; "
        "git --version >/dev/null && echo git=ok; make -v >/dev/null && echo make=ok; "
        + ("node -e 'console.log(\"node=\" + require(\"os\").cpus().length)'; " if shutil.which("node") else "")
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=persistent), SandboxPolicy(workspace=ws))
        async with supervised(backend, tmp_path / "s") as sup:
            result = await sup.run(probe, timeout_s=60)
            return result.preview

    out = anyio.run(main)
    lines = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert lines.get("procs") == "0", f"host cgroup pid lists visible: {out}"
    shown = {d for d in lines.get("dirs", "").split(",") if d}
    assert not shown & (_host_cgroup_dirs() | _host_cgroup_names()), f"host cgroups named in /sys/fs/cgroup: {out}"
    for name in ifaces:
        assert lines.get(f"if-{name}") == "0", f"host interface {name} named in /sys: {out}"
    own = {p for path in lines.get("own", "").split(",") for p in path.split("/") if p}
    assert not own & _host_cgroup_names(), f"/proc/self/cgroup names host cgroups: {out}"
    assert not own, f"/proc/self/cgroup is not the namespace's root: {out}"
    # What programs need of /sys still works.
    cpus = os.sched_getaffinity(0)
    assert int(lines["nproc"]) >= 1 and int(lines["py"]) >= len(cpus), out
    assert lines.get("git") == "ok" and lines.get("make") == "ok", out
    if shutil.which("node"):
        assert int(lines["node"]) >= 1, out


def test_a_v2_session_cgroup_is_shown_at_the_hierarchy_root_and_nothing_else() -> None:
    """cgroup v2 (one hierarchy at /sys/fs/cgroup): the session's directory is bound there, over
    the empty one; a hierarchy mounted outside /sys is not shown at all (no flag for it)."""
    from sandbox._sysview import sys_args

    args = sys_args([(Path("/sys/fs/cgroup/a/shellrt-1"), Path("/sys/fs/cgroup")), (Path("/cg/x"), Path("/cg"))])
    binds = [(args[i + 1], args[i + 2]) for i, flag in enumerate(args) if flag == "--ro-bind"]
    assert ("/sys/fs/cgroup/a/shellrt-1", "/sys/fs/cgroup") in binds, args
    assert not any("/cg" in (src + dest) and not src.startswith("/sys") for src, dest in binds), args
    dirs = [args[i + 1] for i, flag in enumerate(args) if flag == "--dir"]
    assert "/sys/fs/cgroup" not in dirs and "/sys/fs" in dirs, args
    assert args[:4] == ["--perms", "0555", "--tmpfs", "/sys"] and args[-2:] == ["--remount-ro", "/sys"], args
