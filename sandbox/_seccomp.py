"""The seccomp filter every bwrap command runs under, written as classic BPF here (no libseccomp).

In the spirit of Docker's default profile, but as a deny list: the calls below
fail with EPERM (``clone3`` with ENOSYS, so libc falls back to ``clone``,
whose flags a filter can read; ``io_setup`` with ENOSYS too: its events count against one
host-wide budget, ``fs.aio-max-nr``, round 33; ``memfd_secret`` too: it splits the kernel's
direct map for good, round 47). Everything else is allowed. Why each is
denied: kernel keyrings (``keyctl``/``add_key``/``request_key``: host root's
keys), other processes' memory and files (``ptrace``, ``process_vm_*``, and what Docker also
gives only with CAP_SYS_PTRACE: ``kcmp``, ``pidfd_getfd``, ``process_madvise``), the mount
table and namespaces (``mount`` and the new mount API, ``open_tree_attr`` included, ``setns``,
``unshare``/``clone`` with ``CLONE_NEWUSER``: a nested user namespace would
hand the command every capability inside it), kernel attack surface rarely
needed by builds (``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``
-- io_uring runs file and socket operations that seccomp cannot see --,
``open_by_handle_at`` -- the classic container escape --), the machine's
state (modules, kexec, swap, reboot, clocks, ``acct``, ``quotactl``,
``syslog``, ``vhangup``, ``iopl``/``ioperm``, and ``modify_ldt``: x86 segment tables only
16-bit and Wine-style code uses, a past source of kernel bugs, refused by Docker too -- round 17) and ``personality`` values
other than the ordinary ones (READ_IMPLIES_EXEC and friends weaken ASLR/NX).
``socket`` makes only unix, inet, inet6 and netlink sockets (`SOCKET_FAMILIES`; others fail
with EAFNOSUPPORT): a network namespace owns those, not vsock (a command under ``network:
none`` shared the host's vsock ports and reached the hypervisor) nor the rarer families whose
modules ``socket`` loads on demand. Within them, only the common protocols (`INET_PROTOCOLS`,
`NETLINK_PROTOCOLS`; others fail with EPROTONOSUPPORT, a kernel without them): the kernel loads
a module for any other protocol number on demand (SCTP, DCCP, L2TP, SMC; the netfilter and
generic netlink protocols, whose family lookup loads TIPC and more), round 14. ``socketpair``,
which creates both sockets of the family it is given before the family refuses the pair, makes
unix pairs only (inet, inet6 and netlink fail with EOPNOTSUPP, as they do anyway, any other
family with EAFNOSUPPORT): it created vsock, XDP and every other family's sockets. ``fcntl(F_SETLEASE)`` fails with EPERM: a lease on a file
the command's uid owns (a non-root caller's own files, read-only in the sandbox, included)
makes every other process's open of it block for the lease-break time or fail.
``ioctl(TIOCSTI)`` and ``ioctl(TIOCLINUX)`` fail with EPERM (typing into a terminal), and so
does ``ioctl(TIOCSETD)`` (a line discipline on a pty of the command's own: n_hdlc, n_gsm and
the rest are kernel code a build never needs, loaded on demand). Setting inode flags fails with
EPERM too (``FS_IOC_SETFLAGS``, ``FS_IOC_FSSETXATTR``, ``file_setattr``): they stay on the
host's files (for a root caller, files root owns on disk), and those a file's owner may set
make every later write to the operator's repository synchronous (``+S``/``+D``), hide files
from backups (``+d``) or make a directory's names case-insensitive (``+F``), round 14; so do
the other ioctls that leave state on a host inode or filesystem: an inode's generation, fs-verity,
fscrypt policies and keys (round 19). Every other ioctl request is allowed only by type (terminals,
sockets, namespaces, pidfds) or by number (reading a file's flags, extents and filesystem; reflink
clones) and fails with ENOTTY otherwise (`IOCTL_TYPES`, `IOCTL_ALLOWED`; round 20). Syscall
numbers the tables do not know yet (`FIRST_UNKNOWN` and up) fail with ENOSYS: a newer kernel's
calls are not let through by a deny list written before them.
Calls that draw on a pool the whole host shares (round 35) are refused too: classic BPF programs
(socket filters, nested seccomp filters: the BPF JIT budget every later sandbox's own filter
needs; `SOCKET_FILTER_OPTIONS`) and huge pages from the hugetlb pool (`MAP_HUGETLB`, `MFD_HUGETLB`).
The host's page cache (round 38): a command evicting a host file's cached pages
(``POSIX_FADV_DONTNEED``, ``MADV_PAGEOUT``) gets 0 and nothing happens, and its non-destructive
probes of what is cached fail (``preadv2`` with ``RWF_NOWAIT``: EOPNOTSUPP; ``cachestat`` and
``mincore``: ENOSYS):
together they told which host files others read, and when (`PAGE_CACHE_ADVICE`).
Changing ``RLIMIT_CORE`` (``setrlimit``, and ``prlimit64`` with a new value) fails with EPERM:
commands start with it at 1 (soft and hard), the one value at which the kernel neither writes a
core file nor runs a ``core_pattern`` pipe handler (as host root) for a crash; at 0, which a hard
limit of 1 would let a command choose, the handler still runs (round 14).
Setting a set-user/group-id bit (``chmod``/``fchmod``/``fchmodat(2)``, and the
mode of ``open``/``openat``/``creat``/``mknod(at)`` when they create) fails with
EPERM: the file would be a set-id program on the host (see `SETID_MODE_CHECKED`).

The program checks the audit architecture first: x86_64 and aarch64 have
their own tables; any other (i386 or x32 on an x86_64 host included, whose
numbers differ) kills the process, so no second syscall table slips past.

`filter_bytes` is the raw ``struct sock_filter[]`` that bwrap takes on
``--seccomp FD`` and the zygote loads with ``prctl(PR_SET_SECCOMP)``.
"""

from __future__ import annotations

import errno
import struct

__all__ = [
    "CLONE_NEWUSER",
    "CORE_LIMIT",
    "DENIED",
    "ENOSYS_CALLS",
    "FIRST_UNKNOWN",
    "INET_PROTOCOLS",
    "IOCTL_ALLOWED",
    "IOCTL_TYPES",
    "MACHINES",
    "MAP_HUGETLB",
    "MFD_HUGETLB",
    "NETLINK_PROTOCOLS",
    "PAGE_CACHE_ADVICE",
    "RLIMIT_CORE",
    "RWF_NOWAIT",
    "SAFE_PERSONALITIES",
    "SETID_MODE_CHECKED",
    "SOCKET_FAMILIES",
    "SOCKET_FILTER_OPTIONS",
    "S_ISID",
    "filter_bytes",
]

#: name -> (x86_64 number, aarch64 number or None where the call does not exist there).
DENIED: dict[str, tuple[int, int | None]] = {
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "ptrace": (101, 117),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_tree_attr": (467, 467),
    "file_setattr": (469, 469),
    "setns": (308, 268),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "lookup_dcookie": (212, 18),
    "syslog": (103, 116),
    "vhangup": (153, 58),
    "iopl": (172, None),
    "ioperm": (173, None),
    "modify_ldt": (154, None),
    "uselib": (134, None),
    "_sysctl": (156, None),
}
#: Refused with ENOSYS: libc then uses the older call, whose arguments the filter can check. And
#: ``io_setup`` (Linux native AIO, round 33): every context reserves its events against
#: ``fs.aio-max-nr``, one counter for the whole host that no namespace, cgroup or uid divides; one
#: ``io_setup(65536)`` took it all and every host process's ``io_setup`` failed with EAGAIN. ENOSYS
#: is a kernel built without AIO: libaio users fall back to threads (the other ``io_*`` calls
#: need a context, so they fail with EINVAL).
#: And ``cachestat`` (round 38): a count of a file's cached pages (`PAGE_CACHE_ADVICE`); ENOSYS is a
#: kernel before 6.5, which ``fincore``-like tools expect. And ``mincore`` (round 38 review): the
#: same count page by page, under the same rule (a file the caller owns or may write by its mode:
#: a 0666 host file, a non-root caller's every file; a read-only mount does not count); ENOSYS is
#: what those tools report (a program probing its own memory with it gets ENOSYS too: a hint lost).
#: And ``memfd_secret`` (round 47): each of its pages is taken out of the kernel's direct map,
#: splitting the 1 GiB or 2 MiB page that covered it for the host's whole uptime (8 files of 4 MiB
#: took DirectMap1G from 24 to 12 GiB), and the host cannot hibernate while one is in use; ENOSYS
#: is a kernel without secret memory, which its users (OpenSSL's secure heap) take for "use
#: ordinary memory".
ENOSYS_CALLS: dict[str, tuple[int, int | None]] = {
    "clone3": (435, 435),
    "openat2": (437, 437),
    "io_setup": (206, 0),
    "cachestat": (451, 451),
    "mincore": (27, 232),
    "memfd_secret": (447, 447),
}
#: Allowed only without CLONE_NEWUSER in their flags (first argument).
_NEWUSER_CHECKED: dict[str, tuple[int, int | None]] = {"clone": (56, 220), "unshare": (272, 97)}
CLONE_NEWUSER = 0x10000000
#: Calls whose file mode may carry S_ISUID/S_ISGID: name -> (x86_64 number, aarch64 number or
#: None, index of the flags argument that must hold O_CREAT/O_TMPFILE for the mode to count (None:
#: the mode always counts), index of the mode argument). A command's files land on the host (the
#: workspace; for a root caller through an idmapped mount, owned by root on disk): a set-id bit there
#: is a set-id program any local user can run, and ``nosuid`` on the sandbox's mount does not bind
#: the host's own mount. ``openat2`` takes its mode in a struct the filter cannot read: ENOSYS (libc's
#: ``open`` never uses it).
SETID_MODE_CHECKED: dict[str, tuple[int, int | None, int | None, int]] = {
    "chmod": (90, None, None, 1),
    "fchmod": (91, 52, None, 1),
    "fchmodat": (268, 53, None, 2),
    "fchmodat2": (452, 452, None, 2),
    "creat": (85, None, None, 1),
    "open": (2, None, 1, 2),
    "openat": (257, 56, 2, 3),
    "mknod": (133, None, None, 1),
    "mknodat": (259, 33, None, 2),
}
S_ISID = 0o6000
#: O_CREAT | __O_TMPFILE (the same values on x86_64 and aarch64).
_O_CREATES = 0o100 | 0o20000000
_PERSONALITY = (135, 92)
#: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: what a network namespace owns and commands use.
SOCKET_FAMILIES = (1, 2, 10, 16)
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = SOCKET_FAMILIES
#: socket's protocol (third argument) for inet and inet6: the default (0), ICMP, TCP, UDP,
#: ICMPv6, MPTCP (built in or absent, never a module). Any other number fails with
#: EPROTONOSUPPORT: ``socket`` loads the protocol's module on demand (``net-pf-2-proto-132``:
#: SCTP; DCCP, L2TP, UDP-Lite, SMC...), without any capability, and raw sockets (any protocol)
#: need CAP_NET_RAW, which no command has.
INET_PROTOCOLS = (0, 1, 6, 17, 58, 262)
#: socket's protocol for netlink: ROUTE (getifaddrs, ip), SOCK_DIAG (ss), SELINUX, AUDIT (tools
#: that log to it tolerate its absence). Not GENERIC (a family lookup by name loads its module:
#: TIPC, L2TP, GTP...), NETFILTER, XFRM, CONNECTOR and the rest, nor KOBJECT_UEVENT (red team round
#: 41, bwrap4): the kernel sends every host device's events to each network namespace the host's
#: user namespace owns -- a root caller's session namespace, and the host's under ``network: host``
#: -- so a udev monitor in a sandbox heard other tenants' loop devices, disks and hot plugs.
NETLINK_PROTOCOLS = (0, 4, 7, 9)
_SOCKET = (41, 198)
#: socketpair: only AF_UNIX makes pairs, but the kernel creates the two sockets first (loading
#: the family's or protocol's module) and only then asks the family: every other family fails.
_SOCKETPAIR = (53, 199)
#: fcntl's command (second argument) F_SETLEASE: refused.
_FCNTL = (72, 25)
_F_SETLEASE = 1024
#: ioctl's request (second argument, an unsigned int): TIOCSTI (push input into a terminal) and
#: TIOCLINUX (a virtual console's selection and paste), refused. No host terminal reaches a
#: command (fds 0-2 are /dev/null and pipes, every command is a session leader without one):
#: this keeps it so if one ever does. And TIOCSETD: a line discipline other than the default on
#: a pty the command opens itself; each is kernel code loaded on demand
#: (``dev.tty.ldisc_autoload``, 1 by default) with a record of local root exploits (n_hdlc's
#: CVE-2017-2636, n_gsm's CVE-2023-6546); terminals work with the default one.
_IOCTL = (16, 29)
_TTY_IOCTLS = (0x5412, 0x541C, 0x5423)
#: FS_IOC_SETFLAGS (``chattr``) and FS_IOC_FSSETXATTR (``xfs_io chattr``), refused: an inode's
#: flags outlive the session on the host's files; reading them (``lsattr``) still works.
_ATTR_IOCTLS = (0x40086602, 0x401C5820)
#: Other ioctls that change what a host filesystem keeps of an inode or of itself, refused (round
#: 19): FS_IOC_SETVERSION (the inode's generation, which NFS and ``open_by_handle_at`` handles
#: carry: it stayed on a root-owned workspace file), fs-verity's FS_IOC_ENABLE_VERITY (the file's
#: data read-only for ever) and fscrypt's FS_IOC_SET_ENCRYPTION_POLICY, FS_IOC_ADD_ENCRYPTION_KEY
#: and FS_IOC_REMOVE_ENCRYPTION_KEY(_ALL_USERS): on a filesystem with the ``encrypt`` feature a
#: command could encrypt a workspace directory with a key it chose, left in the filesystem's
#: keyring after the session, and remove it later: the operator's files written there unreadable.
#: Reading the policy, key status and verity digest still works.
_STATE_IOCTLS = (0x40087602, 0x40806685, 0x800C6613, 0xC0506617, 0xC0406618, 0xC0406619)
#: Every other ioctl is decided by an allow-list (round 20): the deny lists above knew only the
#: requests someone had tried, and each filesystem has its own (btrfs subvolumes and snapshots a
#: command could leave in the workspace, f2fs pin and compression flags, XFS's, ext4's extent
#: moves). Measured with strace inside and outside the sandbox, git, python and pip, node and
#: npm, make and gcc, tar, cp, find, df and the rest of coreutils, and less, vi, top, stty and
#: tput on a pty use terminal requests, FIONBIO and FICLONE (``cp``'s reflink try) only.
#: Allowed: whole request types that reach only the command's own terminals, sockets,
#: namespaces, pidfds, /dev/random and seccomp listeners (`IOCTL_TYPES`; the type is bits 8-15
#: of the request), and single requests that read a file or its filesystem or clone data between
#: two files the command can write (`IOCTL_ALLOWED`). Everything else fails with ENOTTY, what a
#: file answers a request it does not know: programs that probe (``cp``'s reflink, a block
#: device's size on an image file) fall back as they do on a filesystem without the feature.
IOCTL_TYPES = (
    0x54,  # 'T': termios and ptys, FIONREAD/FIONBIO/FIOCLEX & co, timerfd (the _TTY_IOCTLS: EPERM)
    0x89,  # socket requests (SIOC*), in the sandbox's own network namespace; setting needs caps
    0xB7,  # nsfs: NS_GET_USERNS and the rest (what a namespace fd names; setns is refused)
    0xFF,  # pidfd: PIDFD_GET_INFO, its namespaces (setns is refused)
    0x52,  # 'R': /dev/random (RNDGETENTCNT; the others need CAP_SYS_ADMIN)
    0x21,  # '!': a seccomp listener of the command's own filter
)
IOCTL_ALLOWED = (
    0x00000002,  # FIGETBSZ (filefrag)
    0x80086601,  # FS_IOC_GETFLAGS (lsattr, bsdtar)
    0xC020660B,  # FS_IOC_FIEMAP (filefrag, sparse copies)
    0x80087601,  # FS_IOC_GETVERSION (lsattr -v)
    0x801C581F,  # FS_IOC_FSGETXATTR (lsattr -p)
    0x40049409,  # FICLONE (cp --reflink)
    0x4020940D,  # FICLONERANGE
    0xC0189436,  # FIDEDUPERANGE
    0x81009431,  # FS_IOC_GETFSLABEL
    0x80111500,  # FS_IOC_GETFSUUID
    0x80811501,  # FS_IOC_GETFSSYSFSPATH
    0x400C6615,  # FS_IOC_GET_ENCRYPTION_POLICY
    0x40106614,  # FS_IOC_GET_ENCRYPTION_PWSALT
    0xC0096616,  # FS_IOC_GET_ENCRYPTION_POLICY_EX
    0xC080661A,  # FS_IOC_GET_ENCRYPTION_KEY_STATUS
    0x8010661B,  # FS_IOC_GET_ENCRYPTION_NONCE
    0xC0046686,  # FS_IOC_MEASURE_VERITY
    0xC0286687,  # FS_IOC_READ_VERITY_METADATA
)
#: setrlimit (resource: first argument) and prlimit64 (resource: second, new value: third).
_SETRLIMIT = (160, 164)
_PRLIMIT64 = (302, 261)
#: RLIMIT_CORE: commands get 1:1 (`CORE_LIMIT`) and may not change it. The kernel ignores the core
#: limit for a ``core_pattern`` pipe except at exactly 1 (fs/coredump.c: its mark of a recursive
#: crash): at 0 the host's handler (apport, systemd-coredump; run as root in the host's
#: namespaces) still runs for every crash; at 1 it does not, and no core file is written
#: (1 byte is below any core's minimum).
RLIMIT_CORE = 4
CORE_LIMIT = 1
#: Syscall numbers from here on (the first one the tables do not know: after ``file_setattr``,
#: Linux 6.17) fail with ENOSYS. A deny list lets every call newer than itself through, with
#: whatever the kernel attached to it; libc treats ENOSYS as "old kernel" and falls back.
FIRST_UNKNOWN = 470
#: Classic BPF a command could load, refused (round 35): every program is JIT-compiled and its
#: image charged to ``net.core.bpf_jit_limit``, one budget for the whole host that no namespace,
#: cgroup or uid divides; once a process without CAP_BPF in the host's user namespace has spent it,
#: no such process can load one, not even a seccomp filter: every later sandbox fails to start (it
#: fails closed) and browsers' sandboxes with it. ``setsockopt(SOL_SOCKET, SO_ATTACH_FILTER or
#: SO_ATTACH_REUSEPORT_CBPF)`` on a command's own sockets (one program per socket, up to
#: `RLIMIT_NOFILE` of them per process) fails with EPERM, what a locked filter says; the eBPF ones
#: need a ``bpf()`` program fd (``bpf`` is refused).
_SETSOCKOPT = (54, 208)
_SOL_SOCKET = 1
SOCKET_FILTER_OPTIONS = (26, 51)
#: A nested seccomp filter (``seccomp(SECCOMP_SET_MODE_FILTER)``, ``prctl(PR_SET_SECCOMP,
#: SECCOMP_MODE_FILTER)``; up to 32,768 instructions per process, in any number of processes) fails
#: with EINVAL, what a kernel without ``CONFIG_SECCOMP_FILTER`` says: man-db, sshd and Firefox fall
#: back to running without one. Strict mode and the queries (``SECCOMP_GET_*``, ``PR_GET_SECCOMP``)
#: still work. Only in a `program` that is ``final`` (bwrap's commands: nothing of the sandbox's
#: own loads a filter after it; docker's helper loads two more after its copy).
_SECCOMP_CALL = (317, 277)
_SECCOMP_SET_MODE_FILTER = 1
_PRCTL = (157, 167)
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
#: Huge pages from the hugetlb pool (``vm.nr_hugepages`` and ``nr_overcommit_hugepages``): one
#: pool for the host, outside every memory cgroup, which DPDK, databases and VMs reserve for
#: themselves. ``mmap(MAP_HUGETLB)`` and ``memfd_create(MFD_HUGETLB)`` need no privilege; both
#: fail with ENOMEM, what an empty pool says (programs fall back to ordinary pages; transparent
#: huge pages are not from the pool and still work). ``shmget(SHM_HUGETLB)`` needs CAP_IPC_LOCK.
_MMAP = (9, 222)
MAP_HUGETLB = 0x40000
#: The host's page cache (round 38): one per host, shared by every namespace, so a command that can
#: only read a host file could still empty its cached pages for every process (``fadvise64``'s
#: ``POSIX_FADV_DONTNEED``, no permission needed beyond a read fd; ``madvise``'s ``MADV_PAGEOUT``,
#: files its uid owns: a non-root caller's) and then ask, without touching them, which pages came
#: back (``preadv2`` with ``RWF_NOWAIT``: EAGAIN unless cached; ``cachestat``): which host files the
#: operator, host root or another session read, and when (the page-cache side channel, Gruss et
#: al. 2019), a covert channel between sessions, and, looped, every host program reading from
#: disk again. name -> (x86_64 number, aarch64 number, index of the advice argument, the advice):
#: answered 0 (``SECCOMP_RET_ERRNO`` with errno 0): advice is a hint, a kernel may ignore it, and
#: ``dd oflag=nocache``, rsync and databases carry on.
PAGE_CACHE_ADVICE: dict[str, tuple[int, int, int, int]] = {
    "fadvise64": (221, 223, 3, 4),  # POSIX_FADV_DONTNEED
    "madvise": (28, 233, 2, 21),  # MADV_PAGEOUT (MADV_DONTNEED, 4, drops the caller's mapping only)
}
#: ``preadv2``'s flags (sixth argument): RWF_NOWAIT fails with EOPNOTSUPP, what a file without
#: non-blocking reads says (callers then read blocking; an overlay's files already said so).
_PREADV2 = (327, 286)
RWF_NOWAIT = 0x8
_CACHESTAT = (451, 451)  # as in ENOSYS_CALLS
_MEMFD_CREATE = (319, 279)
MFD_HUGETLB = 4
#: PER_LINUX, PER_LINUX32, UNAME26 (and with PER_LINUX32), and 0xffffffff (query): Docker's list.
SAFE_PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)

_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_AARCH64 = 0xC00000B7
_X32_SYSCALL_BIT = 0x40000000

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_ALU_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16  # seccomp_data.args[0], low 32 bits (both architectures are little-endian)

_Insn = tuple[int, int, int, int]


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of ``seccomp_data.args[index]``."""
    return _OFF_ARG0_LOW + 8 * index


def _ret(value: int) -> _Insn:
    return (_RET_K, 0, 0, value)


def _load(offset: int) -> _Insn:
    return (_LD_W_ABS, 0, 0, offset)


def _table(arch: int, setid_only: bool = False, final: bool = False) -> list[_Insn]:
    """The rules for one architecture (0: x86_64, 1: aarch64), the syscall number already loaded.

    x32 calls on x86_64 (same audit arch, numbers with bit 30 set) are killed; numbers from
    `FIRST_UNKNOWN` fail with ENOSYS (not in ``setid_only``: docker's own profile decides those).
    """
    return _dispatch(
        _rules(arch, setid_only, final),
        kill_from=_X32_SYSCALL_BIT if arch == 0 else None,
        enosys_from=None if setid_only else FIRST_UNKNOWN,
    )


#: An instruction whose jumps may name a shared return (``("ret", value)``) instead of an offset.
_Target = int | tuple[str, int]
_Sym = tuple[int, _Target, _Target, int]
#: (first syscall number of a range, its return value or its block of instructions).
_Segment = tuple[int, "int | list[_Sym]"]
#: Jump targets: the shared returns at the end of a table.
_EPERM: _Target = ("ret", _RET_ERRNO | errno.EPERM)
_EAFNOSUPPORT: _Target = ("ret", _RET_ERRNO | errno.EAFNOSUPPORT)
_EPROTONOSUPPORT: _Target = ("ret", _RET_ERRNO | errno.EPROTONOSUPPORT)
_EOPNOTSUPP: _Target = ("ret", _RET_ERRNO | errno.EOPNOTSUPP)
_EINVAL: _Target = ("ret", _RET_ERRNO | errno.EINVAL)
_ENOMEM: _Target = ("ret", _RET_ERRNO | errno.ENOMEM)
_NOOP: _Target = ("ret", _RET_ERRNO | 0)  # the call returns 0, the kernel never runs it
_ALLOW: _Target = ("ret", _RET_ALLOW)


def _dispatch(
    rules: list[tuple[int, list[_Sym]]], *, kill_from: int | None = None, enosys_from: int | None = None
) -> list[_Insn]:
    """Jump to the block of the loaded syscall number, or allow it: a binary search on the number.

    A few compares per call instead of one per rule: the kernel runs the filter on
    every call the command makes and, when a process loads it, checks, converts and
    compiles it and evaluates it for every syscall number (its cache of always-allowed
    calls), so both its length and its length per call matter. Neighbouring numbers
    with the same plain return (``mount`` .. ``reboot``, the new mount API) are one
    range, and every plain return is one shared instruction at the end that the
    search jumps to. ``rules`` sorted by number; each block ends in a return.
    ``enosys_from``: numbers from there on (below ``kill_from``) fail with ENOSYS;
    ``kill_from``: numbers from there on are killed.
    """
    return _resolve(_search(_segments(rules, kill_from, enosys_from)))


def _segments(
    rules: list[tuple[int, list[_Sym]]], kill_from: int | None, enosys_from: int | None = None
) -> list[_Segment]:
    """The number line from 0 as consecutive ranges, each with its plain return value or its block."""
    segments: list[_Segment] = []

    def push(first: int, action: int | list[_Sym]) -> None:
        if not (segments and isinstance(action, int) and segments[-1][1] == action):
            segments.append((first, action))

    following = 0
    for nr, block in rules:
        if nr > following:
            push(following, _RET_ALLOW)
        plain = len(block) == 1 and block[0][0] == _RET_K
        push(nr, block[0][3] if plain else block)  # a plain return: shared
        following = nr + 1
    push(following, _RET_ALLOW)
    if enosys_from is not None:
        assert following <= enosys_from, "a rule for a syscall number past FIRST_UNKNOWN"
        push(enosys_from, _RET_ERRNO | errno.ENOSYS)
    if kill_from is not None:
        push(kill_from, _RET_KILL_PROCESS)
    return segments


def _search(segments: list[_Segment]) -> list[_Sym]:
    """Binary search over ``segments`` (the loaded number is within them)."""
    if len(segments) == 1:
        action = segments[0][1]
        return [_ret(action)] if isinstance(action, int) else list(action)
    mid = len(segments) // 2
    parts: list[tuple[list[_Sym], tuple[str, int] | None]] = []
    for part in (segments[mid:], segments[:mid]):
        action = part[0][1]
        if len(part) == 1 and isinstance(action, int):
            parts.append(([], ("ret", action)))  # no code: the jump goes to the shared return
        else:
            parts.append((_search(part), None))
    (high, high_ret), (low, low_ret) = parts
    jump_high: _Target = high_ret if high_ret is not None else 0
    jump_low: _Target = low_ret if low_ret is not None else len(high)
    return [(_JGE_K, jump_high, jump_low, segments[mid][0]), *high, *low]


def _resolve(code: list[_Sym]) -> list[_Insn]:
    """``code`` with its shared returns appended and every jump to one turned into an offset.

    The returns go in the order of their first jump: the earliest jump (the x32 kill, right at
    the start of the x86_64 table) has the shortest way, as a jump's offset must fit in 8 bits."""
    first: dict[int, int] = {}
    for i, (_c, jt, jf, _k) in enumerate(code):
        for t in (jt, jf):
            if isinstance(t, tuple):
                first.setdefault(t[1], i)
    values = sorted(first, key=lambda value: (first[value], value))
    at = {value: len(code) + i for i, value in enumerate(values)}
    out: list[_Insn] = []
    for i, (op, jt, jf, k) in enumerate(code):
        jumps = [at[t[1]] - i - 1 if isinstance(t, tuple) else t for t in (jt, jf)]
        out.append((op, jumps[0], jumps[1], k))
    return [*out, *(_ret(value) for value in values)]


def _rules(arch: int, setid_only: bool, final: bool = False) -> list[tuple[int, list[_Sym]]]:
    """(syscall number, its block) for one architecture, by number; a block never falls
    through: it ends in a return or jumps to a shared one (`_EPERM`, `_ALLOW`)."""
    rules: dict[int, list[_Sym]] = {}

    def add(nr: int | None, block: list[_Sym]) -> None:
        if nr is not None:
            assert rules.setdefault(nr, block) == block, f"two different rules for syscall {nr}"

    if not setid_only:
        for table, result in ((DENIED, errno.EPERM), (ENOSYS_CALLS, errno.ENOSYS)):
            for numbers in table.values():
                add(numbers[arch], [_ret(_RET_ERRNO | result)])
        for numbers in _NEWUSER_CHECKED.values():
            add(numbers[arch], [_load(_OFF_ARG0_LOW), (_JSET_K, _EPERM, _ALLOW, CLONE_NEWUSER)])
        personality: list[_Sym] = [_load(_OFF_ARG0_LOW)]
        for value in SAFE_PERSONALITIES[:-1]:
            personality.append((_JEQ_K, _ALLOW, 0, value))
        personality.append((_JEQ_K, _ALLOW, _EPERM, SAFE_PERSONALITIES[-1]))
        add(_PERSONALITY[arch], personality)
        add(_SOCKET[arch], _socket_block())
        add(_SOCKETPAIR[arch], _socketpair_block())
        add(_FCNTL[arch], [_load(_arg_low(1)), (_JEQ_K, _EPERM, _ALLOW, _F_SETLEASE)])
        add(_IOCTL[arch], _ioctl_block())
        add(_SETRLIMIT[arch], [_load(_OFF_ARG0_LOW), (_JEQ_K, _EPERM, _ALLOW, RLIMIT_CORE)])
        add(
            _PRLIMIT64[arch],
            [  # a new value (a non-NULL pointer: either half) for RLIMIT_CORE: refused
                _load(_arg_low(1)),
                (_JEQ_K, 0, _ALLOW, RLIMIT_CORE),
                _load(_arg_low(2)),
                (_JEQ_K, 0, _EPERM, 0),
                _load(_arg_low(2) + 4),
                (_JEQ_K, _ALLOW, _EPERM, 0),
            ],
        )
        for nr, block in _pool_rules(arch, final):
            add(nr, block)
    # The page cache's rules in the set-id filter too (round 38, novel2): docker's executor, the
    # image's own shell, runs under that one alone, beside Docker's default profile that allows them.
    for nr, block in _cache_rules(arch):
        add(nr, block)
    for nr, block in _setid_rules(arch):
        add(nr, block)
    return sorted(rules.items())


def _ioctl_block() -> list[_Sym]:
    """``ioctl``, on the low 32 bits of the request (what the kernel reads): a request of an
    allowed type (`IOCTL_TYPES`) is allowed but the terminal ones refused (`_TTY_IOCTLS`: EPERM);
    then a binary search over single requests: allowed (`IOCTL_ALLOWED`), refused with EPERM
    (the inode state of `_ATTR_IOCTLS` and `_STATE_IOCTLS`, as before) or ENOTTY."""
    block: list[_Sym] = [_load(_arg_low(1))]
    block += [(_JEQ_K, _EPERM, 0, request) for request in _TTY_IOCTLS]
    block.append((_ALU_AND_K, 0, 0, 0xFF00))
    block += [(_JEQ_K, _ALLOW, 0, kind << 8) for kind in IOCTL_TYPES]
    block.append(_load(_arg_low(1)))
    decided = sorted(
        [(r, _RET_ALLOW) for r in IOCTL_ALLOWED]
        + [(r, _RET_ERRNO | errno.EPERM) for r in (*_ATTR_IOCTLS, *_STATE_IOCTLS)]
    )
    segments: list[_Segment] = []
    following = 0
    for request, action in decided:
        if request > following:
            segments.append((following, _RET_ERRNO | errno.ENOTTY))
        segments.append((request, action))
        following = request + 1
    segments.append((following, _RET_ERRNO | errno.ENOTTY))
    return block + _search(segments)


def _protocols(allowed: tuple[int, ...]) -> list[_Sym]:
    """Allow socket's protocol (third argument) if it is one of ``allowed``, else EPROTONOSUPPORT."""
    block: list[_Sym] = [_load(_arg_low(2))]
    block += [(_JEQ_K, _ALLOW, 0, protocol) for protocol in allowed[:-1]]
    return [*block, (_JEQ_K, _ALLOW, _EPROTONOSUPPORT, allowed[-1])]


def _socket_block() -> list[_Sym]:
    """``socket``: unix sockets; inet and inet6 ones of `INET_PROTOCOLS`, netlink ones of
    `NETLINK_PROTOCOLS` (else EPROTONOSUPPORT); any other family fails with EAFNOSUPPORT."""
    inet = _protocols(INET_PROTOCOLS)
    return [
        _load(_OFF_ARG0_LOW),
        (_JEQ_K, _ALLOW, 0, _AF_UNIX),
        (_JEQ_K, 1, 0, _AF_INET),  # to the inet block
        (_JEQ_K, 0, len(inet), _AF_INET6),  # to the inet block, or past it (the family still loaded)
        *inet,
        (_JEQ_K, 0, _EAFNOSUPPORT, _AF_NETLINK),
        *_protocols(NETLINK_PROTOCOLS),
    ]


def _socketpair_block() -> list[_Sym]:
    """``socketpair``: unix pairs; EOPNOTSUPP for the other allowed families (what their
    ``socketpair`` says, after creating two sockets), EAFNOSUPPORT for any other family."""
    block: list[_Sym] = [_load(_OFF_ARG0_LOW), (_JEQ_K, _ALLOW, 0, _AF_UNIX)]
    block += [(_JEQ_K, _EOPNOTSUPP, 0, family) for family in SOCKET_FAMILIES[1:-1]]
    return [*block, (_JEQ_K, _EOPNOTSUPP, _EAFNOSUPPORT, SOCKET_FAMILIES[-1])]


def _pool_rules(arch: int, final: bool) -> list[tuple[int, list[_Sym]]]:
    """The calls that draw on a host-wide pool no namespace divides (round 35): classic BPF
    programs (the JIT budget) and huge pages (the hugetlb pool). (number, block). A nested seccomp
    filter only when ``final`` (no filter of the sandbox's own comes after this one)."""
    nested: list[tuple[int, list[_Sym]]] = [
        (_SECCOMP_CALL[arch], [_load(_OFF_ARG0_LOW), (_JEQ_K, _EINVAL, _ALLOW, _SECCOMP_SET_MODE_FILTER)]),
        (
            _PRCTL[arch],
            [
                _load(_OFF_ARG0_LOW),
                (_JEQ_K, 0, _ALLOW, _PR_SET_SECCOMP),
                _load(_arg_low(1)),
                (_JEQ_K, _EINVAL, _ALLOW, _SECCOMP_MODE_FILTER),
            ],
        ),
    ]
    return [
        *(nested if final else []),
        (
            _SETSOCKOPT[arch],
            [
                _load(_arg_low(1)),
                (_JEQ_K, 0, _ALLOW, _SOL_SOCKET),
                _load(_arg_low(2)),
                *[(_JEQ_K, _EPERM, 0, option) for option in SOCKET_FILTER_OPTIONS[:-1]],
                (_JEQ_K, _EPERM, _ALLOW, SOCKET_FILTER_OPTIONS[-1]),
            ],
        ),
        (_MMAP[arch], [_load(_arg_low(3)), (_JSET_K, _ENOMEM, _ALLOW, MAP_HUGETLB)]),
        (_MEMFD_CREATE[arch], [_load(_arg_low(1)), (_JSET_K, _ENOMEM, _ALLOW, MFD_HUGETLB)]),
    ]


def _cache_rules(arch: int) -> list[tuple[int, list[_Sym]]]:
    """The host's page cache (round 38): eviction advice a no-op (`PAGE_CACHE_ADVICE`), ``preadv2``'s
    RWF_NOWAIT refused, ``cachestat`` ENOSYS. (number, block); in the set-id-only filter too."""
    rules: list[tuple[int, list[_Sym]]] = [
        (numbers[arch], [_load(_arg_low(index)), (_JEQ_K, _NOOP, _ALLOW, advice)])
        for *numbers, index, advice in PAGE_CACHE_ADVICE.values()
    ]
    rules.append((_PREADV2[arch], [_load(_arg_low(5)), (_JSET_K, _EOPNOTSUPP, _ALLOW, RWF_NOWAIT)]))
    rules.append((_CACHESTAT[arch], [_ret(_RET_ERRNO | errno.ENOSYS)]))  # in ENOSYS_CALLS too
    return rules


def _setid_rules(arch: int) -> list[tuple[int, list[_Sym]]]:
    """EPERM for a call that would set S_ISUID/S_ISGID (`SETID_MODE_CHECKED`): (number, block)."""
    rules: list[tuple[int, list[_Sym]]] = [(437, [_ret(_RET_ERRNO | errno.ENOSYS)])]  # openat2:
    # its mode is in a struct no filter can read
    for nr_x86, nr_arm, flags_arg, mode_arg in SETID_MODE_CHECKED.values():
        nr = (nr_x86, nr_arm)[arch]
        if nr is None:
            continue
        block: list[_Sym] = []
        if flags_arg is not None:  # the mode counts only when the call creates a file
            block += [_load(_arg_low(flags_arg)), (_JSET_K, 0, _ALLOW, _O_CREATES)]
        block += [_load(_arg_low(mode_arg)), (_JSET_K, _EPERM, _ALLOW, S_ISID)]
        rules.append((nr, block))
    return rules


#: ``os.uname().machine`` -> the table index of `_table`.
MACHINES = {"x86_64": 0, "aarch64": 1}
_AUDIT_ARCHES = (_AUDIT_ARCH_X86_64, _AUDIT_ARCH_AARCH64)


def program(setid_only: bool = False, *, machine: str | None = None, final: bool = False) -> list[_Insn]:
    """The whole filter: the architecture check, then the matching table.

    ``setid_only``: just the set-id rules and the page cache's (round 38), for sandboxes that
    already have a filter of their own (docker's default profile) and lack only these (the docker
    executor's helper loads it: the image's shell runs under it).
    ``machine``: only that architecture's table (`MACHINES`), every other one killed -- what
    a process on this machine can use (no call ever arrives with another's audit arch);
    half the program for the kernel to check and compile each time it is loaded.
    ``final``: no filter of the sandbox's own is loaded after this one (bwrap's commands), so a
    nested seccomp filter is refused (round 35); docker's helper loads more after it.
    """
    if machine is not None:
        table = _table(MACHINES[machine], setid_only, final)
        head = [_load(_OFF_ARCH), (_JEQ_K, 1, 0, _AUDIT_ARCHES[MACHINES[machine]]), _ret(_RET_KILL_PROCESS)]
        prog = [*head, _load(_OFF_NR), *table]
    else:
        # The shorter table first: the jump over it to the other must fit in 8 bits.
        (first, first_arch), (second, second_arch) = sorted(
            ((_table(index, setid_only, final), _AUDIT_ARCHES[index]) for index in (0, 1)),
            key=lambda table: len(table[0]),
        )
        head = [
            _load(_OFF_ARCH),
            (_JEQ_K, 2, 0, first_arch),
            (_JEQ_K, 1 + len(first) + 1, 0, second_arch),
            _ret(_RET_KILL_PROCESS),
        ]
        # Each table starts by loading the syscall number.
        prog = [*head, _load(_OFF_NR), *first, _load(_OFF_NR), *second]
    for code, jt, jf, _k in prog:
        assert code not in (_JEQ_K, _JGE_K, _JSET_K) or (jt < 256 and jf < 256), (
            "a BPF jump must fit in 8 bits"
        )
    return prog


def filter_bytes(setid_only: bool = False, *, machine: str | None = None, final: bool = False) -> bytes:
    """``struct sock_filter[]`` (u16 code, u8 jt, u8 jf, u32 k, native order) of `program`."""
    return b"".join(struct.pack("=HBBI", *insn) for insn in program(setid_only, machine=machine, final=final))
