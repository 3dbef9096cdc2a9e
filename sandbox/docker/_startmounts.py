"""What the host mounts into a new container before anything of the image runs, in one child.

A root host joins the container's mount namespace (by pidfd) and: mounts a devpts of at most
`PTY_MAX` ptys over ``/dev/pts`` (`_ptys`, round 34); mounts each of the container's own device
nodes read-only over itself (`_devnodes`, round 47: they were binds of the host's nodes, whose locks
and watches every tenant shared); covers the daemon's init binary, the host's file, with an empty
read-only file of the session's (`_initcover`, round 47). One short-lived interpreter does all three
(each costs ~0.1-0.2 s at this machine's load), then each is checked from outside (fail closed).
"""

from __future__ import annotations

from sandbox._devtree import PTY_MAX
from sandbox.docker._detach import run_child
from sandbox.docker._devnodes import DEV_NODES, check_own_nodes
from sandbox.docker._initcover import check_cover, init_mount_points
from sandbox.docker._mountscript import mount_script
from sandbox.docker._pidref import PidRef
from sandbox.docker._ptys import PTS, PTS_OPTIONS, check_ptys
from sandbox.errors import BackendUnavailableError

__all__ = ["start_mounts"]

#: argv: the pidfd's number, ``/dev/pts``, its options, the cover file, the device nodes, ``--``,
#: the init mount points. The cover is cloned before the join (the host's file), each node after it
#: (the container's own) and made read-only, nosuid and noexec but not nodev (it still opens).
_SCRIPT = mount_script("""
pidfd, pts, options, cover = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rest = sys.argv[5:]
cut = rest.index("--")
nodes, inits = rest[:cut], rest[cut + 1:]
covers = [clone(cover) for _ in inits]
join(pidfd)
if libc.mount(b"devpts", pts.encode(), b"devpts", 2 | 8, options.encode()) != 0:  # NOSUID NOEXEC, as runc's
    fail("mount devpts " + pts)
NODE = struct.pack("QQQQ", 1 | 2 | 8, 4, 0, 0)  # set RDONLY NOSUID NOEXEC, clear NODEV
for target in nodes:
    tree = libc.syscall(428, -100, target.encode(), 1 | 0o2000000)  # open_tree CLONE|CLOEXEC
    if tree < 0:
        fail("open_tree " + target)
    if libc.syscall(442, tree, b"", 0x1000, NODE, len(NODE)) != 0:  # mount_setattr EMPTY_PATH
        fail("mount_setattr " + target)
    attach(tree, target)
for tree, target in zip(covers, inits):
    attach(tree, target)
""")


def start_mounts(ref: PidRef, cover: str) -> None:
    """The capped devpts, the container's own device nodes as read-only mounts, and ``cover`` (an
    empty file the caller made) over the daemon's init binary, in the container whose docker-init
    ``ref`` is; then each checked (`BackendUnavailableError`)."""
    pid = ref.alive()
    inits = init_mount_points(ref)
    args = [str(ref.pidfd), PTS, PTS_OPTIONS, cover, *sorted(DEV_NODES), "--", *inits]
    proc = run_child(_SCRIPT, *args, pass_fds=(ref.pidfd,))
    if proc.returncode != 0:
        raise BackendUnavailableError(
            f"could not set up the container's /dev (a devpts with max={PTY_MAX}, its own device nodes "
            f"read-only) and cover the daemon's init binary: {proc.stderr.strip()[-300:]}"
        )
    check_ptys(ref, pid)
    check_own_nodes(ref)
    check_cover(ref, cover, inits)
