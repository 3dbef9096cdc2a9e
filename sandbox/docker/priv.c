/* shellrt-priv: the docker executor's identity switch (built by sandbox/docker/_priv.py).
 *
 *   priv exec EUID EGID AUID -- PROG ARGS...
 *       Run as container root at start: first pin the audit login uid to AUID where unset
 *       (pin_audit_identity), then become EUID:EGID (the executor's own
 *       identity, never a command's) keeping only the capabilities the
 *       executor needs, as ambient capabilities so /bin/sh keeps them, and
 *       no others anywhere (the bounding set is cut to them too). Its
 *       environment is PATH (the host's) and SHELLRT_ISO, the Landlock isolation
 *       a command will get (0 none, 1 ptrace and /proc, 2 and signals, e: the
 *       probe failed; probe_isolation): docker merges the image's ENV
 *       into the container's, and none of it may preset an executor variable
 *       or a command's SHELLRT_E<n> (red team round 8).
 *       Under the set-id part of the command filter (setid_filter), as everything it starts,
 *       without io_setup (host_budget_filter: the host's AIO budget, round 34), socket
 *       filters (the host's BPF JIT budget) and huge pages (the host's hugetlb pool, round 35).
 *   priv boot EUID EGID AUID -- PROG ARGS...
 *       exec as the container's main process: PROG (the image's /bin/sh) runs only once the host
 *       said "G" on stdin, from / (wait_for_go).
 *   priv boot-admin EUID EGID AUID -- PROG ARGS...
 *       boot for a root_can_administer container: it also holds the commands' memory cgroup as
 *       CMDS_FD for everything it starts, whose mount the host then detaches (hold_commands_cgroup).
 *   priv drop UID GID GROUPS -- PROG ARGS...
 *       Run by the executor's runner for each command. It pins the audit login uid to UID where
 *       still unset (pin_audit_identity), starts a new session
 *       (its pid is the session and process group id the kill path uses),
 *       becomes a child subreaper and forks:
 *       - the child empties the bounding, ambient, inheritable, permitted and
 *         effective sets, locks the securebits so uid 0 gains nothing at exec,
 *         becomes UID:GID with the supplementary GROUPS (a comma list, or `-`
 *         for none), restores default signal dispositions and execs. A
 *         command, root or not, holds no capability. Its environment is
 *         exactly the values of this process's SHELLRT_E<n> variables, each
 *         a NAME=VALUE entry (PATH among them is what PROG is looked up in):
 *         passed in the environment, which only the executor's identity may
 *         read, never on the command line, which every process may read. It
 *         runs under bwrap's seccomp deny list (`shellrt_command_filter`,
 *         generated from sandbox/_seccomp.py and prepended by _priv.py: no
 *         keyrings, ptrace, mounts, user namespaces, bpf, io_uring..., no
 *         call sets S_ISUID/S_ISGID), with no seccomp filter of its own
 *         (nest_filter) and with a core-size limit of 1 byte, soft
 *         and hard (no core dump reaches the host's core_pattern handler: 0 would).
 *       - the parent keeps the executor's identity (so no command can signal,
 *         trace or open it), reaps, and once the child has exited kills every
 *         process still left below it: being a subreaper, every descendant of
 *         the command that lost its parent (setsid, double fork, scrubbed
 *         environment, whatever) was handed to it, so "no child left" means
 *         "nothing of the command left". It exits with the child's status
 *         (128+N for signal N). SIGUSR1 (the executor's kill) makes it kill the
 *         child and sweep at once; it holds a pipe's only write end (fd 21, read
 *         end 20) until it exits, which the executor's kill reads to EOF. The
 *         command runs at nice 19 for good, the sweep at -20.
 *       UID, GID or a GROUPS entry equal to the executor's own uid or gid, or one of the ten ids
 *       after its uid (the TMPDIR slots' groups), is refused: no command ever shares the executor's
 *       identity, nor holds a slot group but its own slot's. With SHELLRT_KCWD=1 (the
 *       runner asks for the command's final cwd) the parent traces the child for its exit alone
 *       and writes its cwd there, from /proc/<pid>/cwd, to fd 9 (the runner's file, closed in the
 *       child): see trace_stop. Every
 *       descriptor above 2 but CWD_FD (6: the command's cwd file, opened by
 *       the runner) is closed first: the executor's (its I/O directory) never
 *       reach a command.
 *       The command runs in a Landlock domain of its own (isolate_command, ABI 2+): no other
 *       command of the session, same uid or not, can trace or open /proc/<pid>/{mem,environ,fd,..}
 *       of any of its processes, nor (ABI 6+) signal them, nor it theirs; and a third filter (xproc_build) refuses
 *       the calls the kernel allows by uid alone on another pid (prlimit64, sched_set*, ioprio_set).
 *       With SHELLRT_TMP (the runner's pick of the host's tmpfs slots; none free: the runner refuses
 *       the command) its TMPDIR is a random-named 0700 directory of its own the helper makes there, and its
 *       domain keeps every other slot out of reach (tmp_slot, make_private_tmp, grant_but_slots); it
 *       alone holds the slot's group, the only one that may traverse the slot (slot_group); the
 *       helper unlocks the slot (SHELLRT_TMP_LOCK) if the command left it empty.
 *       The command also runs under a second filter (`shared_uid_filter`): inotify_init(1) and
 *       fanotify_init fail with ENOSYS. The kernel charges a process's inotify instances and
 *       watches (128 instances) and fanotify groups to its uid in the host's user namespace, the
 *       container's own, with no capability exempt; a command as host uid 0 (a per-call "root")
 *       holding them all left host root's systemd, dockerd and shellrt with EMFILE (red team round
 *       22), and a container has no ceiling of its own to write (no user namespace of its own,
 *       /proc/sys read-only).
 *   priv own UID GID GROUPS -- PROG ARGS...
 *       As drop without that second filter: for the session's leased uid only (the host says
 *       so, CP=1 in the request), which nothing else on the host has, so its budgets are its own.
 *   priv admin 0 GID GROUPS -- PROG ARGS...
 *       DockerConfig.root_can_administer only: as drop, for uid 0 only, but
 *       the command keeps admin_caps (CHOWN, DAC_OVERRIDE, FOWNER) as ambient
 *       capabilities, its bounding set cut to them and the ambient set locked. Under the second
 *       filter too (uid 0 is host root's).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stddef.h>
#include <linux/audit.h>
#include <unistd.h>

static const int keep[] = {CAP_SETUID, CAP_SETGID, CAP_KILL,  CAP_SYS_PTRACE,
                           CAP_SETPCAP, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN, CAP_SYS_NICE};
#define NKEEP (sizeof keep / sizeof keep[0])
/* What `admin` leaves a root command: enough to add and remove users and edit the image. */
static const int admin_caps[] = {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER};
#define NADMIN (sizeof admin_caps / sizeof admin_caps[0])
/* The one descriptor above 2 a command inherits: its cwd file, opened by the runner. */
#define CWD_FD 6
/* The runner's file for the command's cwd at its exit (with SHELLRT_KCWD=1 in our environment; see
 * trace_stop): written by the helper, never held by the command. */
#define KCWD_FD 9
/* The helper's "gone" pipe (see the drop path): read end, write end at GONE_FD + 1. */
#define GONE_FD 20
/* Every command's OOM score adjustment: the most, so the OOM killer takes a command's process, not
 * the executor, a runner or a helper (which keep the container's own, lower, score). */
#define COMMAND_OOM "1000"
/* A command's umask: an ordinary login's (bwrap's SANDBOX_UMASK), never the executor's 077 (round 37). */
#define COMMAND_UMASK 022
/* The commands' memory cgroup as the host mounted it (sandbox/docker/_cmdcg.py), its name, and
 * cgroupfs's magic: an empty read-only directory where the host made none. */
#define COMMANDS_CGROUP "/.shellrt-cmds"
#define COMMANDS_CHILD "/shellrt-cmds"
#define CGROUP_MAGIC 0x27e0eb
/* The commands' memory cgroup as `boot` found it, held open for the executor and all it starts
 * (hold_commands_cgroup): under root_can_administer the host then detaches the mount, as it does
 * the I/O directory's (round 54), and commands join it through this descriptor. */
#define CMDS_FD 23
#define MQUEUE_MAGIC 0x19800202
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void die(const char *what) {
    fprintf(stderr, "shellrt-priv: %s: %s\n", what, strerror(errno));
    _exit(126);
}

static void set_caps3(unsigned long long perm, unsigned long long inh) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = (unsigned)perm;
    d[1].effective = d[1].permitted = (unsigned)(perm >> 32);
    d[0].inheritable = (unsigned)inh;
    d[1].inheritable = (unsigned)(inh >> 32);
    if (syscall(SYS_capset, &h, d) != 0) die("capset");
}

static void set_caps(unsigned long long mask) { set_caps3(mask, mask); }

/* exec and boot: the executor runs the image's /bin/sh, which is the image's code, holding
 * CHOWN, FOWNER and DAC_OVERRIDE in the host's user namespace over the bind-mounted workspace: a
 * hostile shell made a set-uid-root program there, on the host (red team round 33). It, and
 * everything it starts, runs under the command filter's set-id rules (`shellrt_setid_filter`,
 * prepended by _priv.py): no call sets S_ISUID or S_ISGID. Commands add the whole list. */
static void setid_filter(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
    struct sock_fprog setid = {
        .len = (unsigned short)(sizeof shellrt_setid_filter / sizeof(struct sock_filter)),
        .filter = (struct sock_filter *)(void *)shellrt_setid_filter,
    };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &setid, 0, 0) != 0) die("seccomp setid");
}

/* boot (the container's main process): nothing of the image runs before the host has set the
 * container up (the workspace's idmap, the bridge firewall, the pins' check): it sends "G" on the
 * channel (our stdin) when done. Read a byte at a time: what follows is the executor's. Then run
 * from / whatever cwd docker gave us: the workspace's, in bind mode its mount from before the
 * idmap, was the image's shell's to write as the executor's uid (round 33; the host now asks docker
 * for /, which docker-init keeps, whose /proc/1/cwd the executor could follow). */
static void wait_for_go(void) {
    char line[4];
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(0, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            fprintf(stderr, "shellrt-priv: the host ended the channel before the start\n");
            _exit(126);
        }
        if (c == '\n') break;
        if (n + 1 >= sizeof line) break;
        line[n++] = c;
    }
    line[n] = 0;
    if (strcmp(line, "G") != 0) {
        fprintf(stderr, "shellrt-priv: the host's first line was not the start\n");
        _exit(126);
    }
    if (chdir("/") != 0) die("chdir /");
}

/* boot-admin, once the host's go says the container is set up: hold the commands' memory cgroup
 * (where the host mounted one) as CMDS_FD, inherited by the shell, its runners and every helper.
 * Not for other containers: a reset mounts a fresh cgroup at the path, and a held one would
 * keep the first task's removed cgroup alive until the container ends. A root
 * command of a root_can_administer session holds CAP_DAC_OVERRIDE, which ignores the mode of the
 * cgroup's files (the executor's uid owns them): through the mount it disabled later commands' OOM
 * killer, raised their limit into the executor's reserve, moved any process (cgroup v1 lets host
 * uid 0) and made child cgroups, the host's own (red team round 54). The host detaches the mount
 * after the hello there; only this descriptor, which no command may follow (/proc/<pid>/fd needs
 * ptrace access), reaches it then. Fail closed: a cgroup that cannot be held stops the start. */
static void hold_commands_cgroup(void) {
    struct statfs fs;
    if (statfs(COMMANDS_CGROUP, &fs) != 0 || fs.f_type != CGROUP_MAGIC) return;
    int fd = open(COMMANDS_CGROUP, O_PATH | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0) die("hold the commands' cgroup");
    if (fd != CMDS_FD) {
        if (dup2(fd, CMDS_FD) != CMDS_FD) die("hold the commands' cgroup");
        close(fd);
    }
}

/* Close every descriptor in [lo, hi]: the executor's own (its I/O directory above all) never
 * reach a command. */
static void close_fds(unsigned lo, unsigned hi) {
    if (syscall(SYS_close_range, lo, hi, 0) == 0) return;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 1048576) max = 1048576;
    for (long fd = lo; fd <= (long)hi && fd < max; fd++) close((int)fd);
}

static int parse_id(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v > 0x7fffffffL) {
        fprintf(stderr, "shellrt-priv: bad id %s\n", s);
        _exit(126);
    }
    return (int)v;
}

/* The audit login uid (/proc/self/loginuid): who the host's audit log says logged in, on every
 * record; children inherit it and it survives setuid. A container's processes inherit it from runc,
 * i.e. from containerd's shim (a `docker exec`'d one too): unset wherever no login ran (CI, a
 * service), and while unset any process may set it once, without a capability, to any uid -- a
 * command as uid 12345 wrote 0, host root's login (red team round 38, novel2). Set here, where
 * unset, before anything runs under this helper; changing a set value needs CAP_AUDIT_CONTROL,
 * which no process here holds. No file (no audit in the kernel): nothing a command could set
 * either. Any other failure stops the start. */
#define AUDIT_UNSET "4294967295"
static void pin_audit_identity(unsigned long auid) {
    int fd = open("/proc/self/loginuid", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return;
        die("open /proc/self/loginuid");
    }
    char now[16] = {0};
    if (pread(fd, now, sizeof now - 1, 0) < 0) die("read loginuid");
    if (strncmp(now, AUDIT_UNSET, sizeof AUDIT_UNSET - 1) == 0) {
        char text[16];
        int len = snprintf(text, sizeof text, "%lu", auid);
        /* EPERM: set after all, to a uid a user namespace (the daemon's userns-remap) does not map,
         * which reads as unset in it; set, no process here changes it (round 38 review5). */
        ssize_t w = write(fd, text, (size_t)len);
        if (w < 0 ? errno != EPERM : w != len) die("pin loginuid");
    }
    close(fd);
}

/* An audit uid the host passes (boot, exec): a uid, never the unset value itself. */
static unsigned long parse_auid(const char *s) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v >= 4294967295UL) {
        fprintf(stderr, "shellrt-priv: bad audit uid %s\n", s);
        _exit(126);
    }
    return v;
}

/* How many TMPDIR slots there may be (sandbox/docker/_tmpslots.py TMP_SLOTS), and so the ids after
 * the executor's own that are their groups (slot k: own + 1 + k; _tmpslots.slot_gid): never a
 * command's. */
#define SLOT_IDS 16
static int reserved_id(unsigned long id, unsigned long own) { return id >= own && id <= own + SLOT_IDS; }

/* GROUPS: `-` (none) or a comma list of at most 256 gids, none of them `forbidden` or a reserved id
 * after `own` (reserved_id). */
static size_t parse_groups(char *s, gid_t *out, size_t cap, gid_t forbidden, uid_t own) {
    size_t n = 0;
    if (strcmp(s, "-") == 0) return 0;
    for (char *tok = strtok(s, ","); tok != NULL; tok = strtok(NULL, ",")) {
        if (n == cap) {
            fprintf(stderr, "shellrt-priv: more than %zu supplementary groups\n", cap);
            _exit(126);
        }
        out[n] = (gid_t)parse_id(tok);
        if (out[n] == forbidden || reserved_id(out[n], own)) {
            fprintf(stderr, "shellrt-priv: group %s is the executor's own or a TMPDIR slot's\n", tok);
            _exit(126);
        }
        n++;
    }
    return n;
}

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "priv.c: only x86_64 and aarch64 (the command filter's architectures)"
#endif
#ifndef __NR_inotify_init
#define __NR_inotify_init (-1) /* aarch64 has only inotify_init1 */
#endif
/* A filter's start: allow every call of another ABI, else load the call's number. */
#define NATIVE_NR_LOADED                                                        \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),   \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),                    \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                               \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* Jump `skip` instructions ahead (to the ENOSYS return) when the number is `nr`. */
#define ENOSYS_IF(nr, skip) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(nr), skip, 0)
/* A command whose uid the host shares (every mode but `own`): no inotify or fanotify instance,
 * whose count the kernel keeps per host uid. Other architectures and x32 numbers: the deny list
 * kills them. */
static const struct sock_filter shared_uid_filter[] = {
    NATIVE_NR_LOADED,
    ENOSYS_IF(__NR_inotify_init1, 3),
    ENOSYS_IF(__NR_inotify_init, 2),
    ENOSYS_IF(__NR_fanotify_init, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
};

#define ARG_LOW(i) ((unsigned)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define ARG_HIGH(i) (ARG_LOW(i) + 4)
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)(k), (t), (f))
#define JSET(k, t, f) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (unsigned)(k), (t), (f))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4U
#endif

/* exec and boot: budgets counted once for the whole host, for the executor and all it starts.
 * The native ABI only: the set-id rules kill every other (i386's int 0x80, x32 numbers).
 * - io_setup reserves events against fs.aio-max-nr; one io_setup(65536) of the executor's shell
 *   (the image's own /bin/sh, under docker's profile and the set-id rules alone) took all of it
 *   (red team round 34). ENOSYS, as a kernel built without AIO says (commands had it already).
 * - A classic BPF program is JIT-compiled into net.core.bpf_jit_limit, one host budget that no
 *   cgroup charges (the container's memory ceiling counts the program's kernel copy, ~2x the
 *   image). Spent, it leaves every process without CAP_BPF/CAP_SYS_ADMIN unable to load any
 *   filter: every priv of every session (its command filter), a non-root caller's bwrap. Socket
 *   filters (SO_ATTACH_FILTER, SO_ATTACH_REUSEPORT_CBPF) get ENOPROTOOPT (red team round 35);
 *   eBPF ones need bpf(), which nothing here may call. Nested seccomp: nest_filter.
 * - Huge pages (MAP_HUGETLB, SHM_HUGETLB, MFD_HUGETLB) come from the host's one hugetlb pool
 *   (vm.nr_hugepages), which no memory cgroup of v1 counts and docker bounds for nobody: ENOMEM,
 *   as an empty pool says (programs fall back to small pages; transparent huge pages stay), and
 *   EINVAL for memfd_create, as a kernel before 4.14 says (round 35). */
static const struct sock_filter host_budget_filter[] = {
    NATIVE_NR_LOADED,                          /* 0-3 */
    JEQ(__NR_io_setup, 16, 0),                 /* 4: -> 21 ENOSYS */
    JEQ(__NR_setsockopt, 0, 5),                /* 5: else -> 11 */
    LOAD(ARG_LOW(1)),                          /* 6: level (an int) */
    JEQ(SOL_SOCKET, 0, 12),                    /* 7: else -> 20 */
    LOAD(ARG_LOW(2)),                          /* 8: optname (an int) */
    JEQ(SO_ATTACH_FILTER, 12, 0),              /* 9: -> 22 ENOPROTOOPT */
    JEQ(SO_ATTACH_REUSEPORT_CBPF, 11, 9),      /* 10: -> 22, else -> 20 */
    JEQ(__NR_mmap, 0, 2),                      /* 11: else -> 14 */
    LOAD(ARG_LOW(3)),                          /* 12: flags (an int) */
    JSET(MAP_HUGETLB, 9, 6),                   /* 13: -> 23 ENOMEM, else -> 20 */
    JEQ(__NR_shmget, 0, 2),                    /* 14: else -> 17 */
    LOAD(ARG_LOW(2)),                          /* 15: shmflg (an int) */
    JSET(SHM_HUGETLB, 6, 3),                   /* 16: -> 23 ENOMEM, else -> 20 */
    JEQ(__NR_memfd_create, 0, 2),              /* 17: else -> 20 */
    LOAD(ARG_LOW(1)),                          /* 18: flags (an unsigned int) */
    JSET(MFD_HUGETLB, 4, 0),                   /* 19: -> 24 EINVAL */
    RET(SECCOMP_RET_ALLOW),                    /* 20 */
    RET(SECCOMP_RET_ERRNO | ENOSYS),           /* 21 */
    RET(SECCOMP_RET_ERRNO | ENOPROTOOPT),      /* 22 */
    RET(SECCOMP_RET_ERRNO | ENOMEM),           /* 23 */
    RET(SECCOMP_RET_ERRNO | EINVAL),           /* 24 */
};

/* drop (every command, last of its filters): no seccomp filter of its own. Each is JIT-compiled
 * into the same host budget (up to 32,768 instructions a process, for every process a command
 * forks). EINVAL, as a kernel built without seccomp filters says; strict mode and the operations
 * that load no program (SECCOMP_GET_ACTION_AVAIL, ...) stay. Not for the executor's shell: priv
 * drop, its child, loads the command's filters (round 35's Left). */
static const struct sock_filter nest_filter[] = {
    NATIVE_NR_LOADED,                          /* 0-3 */
    JEQ(__NR_seccomp, 0, 2),                   /* 4 */
    LOAD(ARG_LOW(0)),                          /* 5: operation (an unsigned int) */
    JEQ(SECCOMP_SET_MODE_FILTER, 6, 5),        /* 6 */
    JEQ(__NR_prctl, 0, 4),                     /* 7 */
    LOAD(ARG_LOW(0)),                          /* 8: option (an int) */
    JEQ(PR_SET_SECCOMP, 0, 2),                 /* 9 */
    LOAD(ARG_LOW(1)),                          /* 10: mode (another high half is EINVAL anyway) */
    JEQ(SECCOMP_MODE_FILTER, 1, 0),            /* 11 */
    RET(SECCOMP_RET_ALLOW),                    /* 12 */
    RET(SECCOMP_RET_ERRNO | EINVAL),           /* 13 */
};

static void load_host_budget_filter(void) {
    struct sock_fprog budget = {
        .len = (unsigned short)(sizeof host_budget_filter / sizeof host_budget_filter[0]),
        .filter = (struct sock_filter *)host_budget_filter,
    };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &budget, 0, 0) != 0) die("seccomp budget");
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* The state, parent and session of process <name> from /proc/<name>/stat; 0 when unreadable. */
static int read_stat(const char *name, char *state, int *ppid, int *sid) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'); /* the name may hold anything; fields follow the last ')' */
    int pgrp;
    return rp != NULL && sscanf(rp + 1, " %c %d %d %d", state, ppid, &pgrp, sid) == 4;
}

/* One process as listed: its pid, parent and session, whether it is ours (to be killed: 1, not: 0). */
struct proc_row {
    pid_t pid, ppid;
    int sid, ours;
};
#define UNDECIDED (-1)

static int by_pid(const void *a, const void *b) {
    pid_t x = ((const struct proc_row *)a)->pid, y = ((const struct proc_row *)b)->pid;
    return (x > y) - (x < y);
}

/* The pidfds of the processes a pass signalled, to wait for their exit (at most cap). */
struct held {
    int *fds;
    size_t n, cap;
};

static void hold(struct held *h, int pfd) {
    if (h->n < h->cap) h->fds[h->n++] = pfd;
    else close(pfd);
}

/* The command's process while we trace it for its exit (trace_stop), else 0. */
static pid_t traced_child;

/* SIGKILL, in one pass over /proc, every process left of the command: our children (a
 * subreaper's children include every orphaned descendant), every member of our session, and every
 * descendant of either, at any depth: the tree is read whole first (a process's parent may be
 * listed after it), then killed at once. Killing only children and session members reached a bomb
 * whose processes each call setsid one generation per pass (an orphan comes to us only once its
 * parent died) while the deeper ones refilled the pids limit: the sweep never ended (red team
 * round 22). A child's pid is ours until we reap it; a deeper process can be reaped by its own
 * parent and its pid reused meanwhile, so it is signalled through a pidfd opened before its parent
 * and session were read again. Each signalled one's pidfd goes to h. Returns how many were signalled. */
static int kill_leftovers(pid_t self, struct held *h) {
    size_t cap = 4096, n = 0;
    struct proc_row *rows = malloc(cap * sizeof *rows);
    DIR *proc = opendir("/proc");
    if (rows == NULL || proc == NULL) {
        free(rows);
        if (proc != NULL) closedir(proc);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(proc)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        char state;
        int ppid, sid;
        if (pid == self || !read_stat(e->d_name, &state, &ppid, &sid) || state == 'Z') continue;
        if (n == cap) {
            struct proc_row *more = realloc(rows, 2 * cap * sizeof *rows);
            if (more == NULL) break; /* the rest next pass */
            rows = more;
            cap *= 2;
        }
        rows[n++] = (struct proc_row){pid, (pid_t)ppid, sid, ppid == self || sid == self ? 1 : UNDECIDED};
    }
    closedir(proc);
    /* Descendants of ours are ours: each row walks up its parents (found by binary search in the
     * rows sorted by pid) to one already decided, and the walk's rows take its answer. */
    qsort(rows, n, sizeof *rows, by_pid);
    size_t *path = malloc((n + 1) * sizeof *path);
    for (size_t i = 0; path != NULL && i < n; i++) {
        size_t len = 0, at = i;
        int answer = 0;
        for (;;) {
            if (rows[at].ours != UNDECIDED) {
                answer = rows[at].ours;
                break;
            }
            path[len++] = at;
            struct proc_row key = {.pid = rows[at].ppid};
            struct proc_row *up = bsearch(&key, rows, n, sizeof *rows, by_pid);
            if (up == NULL || len > n) break; /* not listed (outside the container, or gone): not ours */
            at = (size_t)(up - rows);
        }
        for (size_t k = 0; k < len; k++) rows[path[k]].ours = answer;
    }
    free(path);
    int killed = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].ours != 1) continue;
        if (rows[i].ppid == self) {
            if (kill(rows[i].pid, SIGKILL) == 0) killed++;
            /* Our traced command stops at its exit even when killed, until we see it (supervise's
             * waitpid): waiting for it here took the poll's whole 5 s (round 27). */
            if (rows[i].pid == traced_child) continue;
            int cfd = (int)syscall(SYS_pidfd_open, rows[i].pid, 0); /* ours until we reap it */
            if (cfd >= 0) hold(h, cfd);
            continue;
        }
        int pfd = (int)syscall(SYS_pidfd_open, rows[i].pid, 0);
        if (pfd < 0) continue; /* gone, or no pidfds: its parent's death hands it to us next pass */
        char name[24], state;
        int ppid, sid;
        snprintf(name, sizeof name, "%d", (int)rows[i].pid);
        /* Still the process listed: the same parent (or us, its parent having died) or our session. */
        if (read_stat(name, &state, &ppid, &sid) && (ppid == rows[i].ppid || ppid == self || sid == self) &&
            syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0) {
            killed++;
            hold(h, pfd);
        } else {
            close(pfd);
        }
    }
    free(rows);
    return killed;
}

/* Until every pidfd in fds[0..n) is readable (its process has exited), or 5 s without news. */
static void wait_exited(int *fds, size_t n) {
    struct pollfd *pf = calloc(n, sizeof *pf);
    if (pf == NULL) return;
    for (size_t i = 0; i < n; i++) pf[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    size_t left = n;
    while (left > 0) {
        int r = poll(pf, (nfds_t)n, 5000);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (size_t i = 0; i < n; i++)
            if (pf[i].fd >= 0 && pf[i].revents != 0) {
                pf[i].fd = -1; /* poll skips negative descriptors */
                left--;
            }
    }
    free(pf);
}

/* How many pidfds a pass may hold: the hard limit allows (raising the soft one needs no
 * capability), at most 65,536. */
static size_t pidfd_budget(void) {
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) return 16;
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
    if (getrlimit(RLIMIT_NOFILE, &nofile) != 0 || nofile.rlim_cur < 48) return 16;
    return nofile.rlim_cur > 65536 + 32 ? 65536 : (size_t)nofile.rlim_cur - 32;
}

/* Nice -20 (CAP_SYS_NICE, the executor's) before a sweep: the command's processes run at 19. */
static void raise_for_sweep(void) { setpriority(PRIO_PROCESS, 0, -20); }

/* One pass (kill_leftovers), then wait until everything it signalled has exited (its pidfd
 * readable): a pass per generation that escaped the last one, not a pass per reaped process (a
 * pass reads every process's stat). Returns how many were signalled. */
static size_t sweep_pass(pid_t self, struct held *h) {
    h->n = 0;
    kill_leftovers(self, h);
    size_t n = h->n;
    wait_exited(h->fds, n);
    for (size_t i = 0; i < n; i++) close(h->fds[i]);
    return n;
}

/* The command, once forked; whether the executor asked us to end it (SIGUSR1, its kill path). */
static volatile pid_t the_child;
static volatile sig_atomic_t kill_asked;

/* SIGUSR1 from the executor (only its uid may signal us): kill the command now; supervise() then
 * sweeps whatever it left as after any exit. The executor's own sweep, in dash, read each stat
 * file one byte per read(2) and outlasted the host's grace against a 2,048-process bomb (red team
 * round 22); this one is the same C pass the exit path uses. kill() is async-signal-safe. */
static void on_kill_asked(int sig) {
    (void)sig;
    kill_asked = 1;
    if (the_child > 0) kill(the_child, SIGKILL);
}

/* Installed before setsid(): once the executor sees us as a session leader, SIGUSR1 is ours to
 * handle (the executor ignores it and we inherited that). No SA_RESTART: waitpid returns. */
static void catch_kill_request(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_kill_asked;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) die("sigaction");
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
}

/* Landlock (linux/landlock.h; defined here: build hosts' headers may predate ABI 6). */
#define SYS_landlock_create_ruleset_nr 444
#define SYS_landlock_add_rule_nr 445
#define SYS_landlock_restrict_self_nr 446
#define LANDLOCK_VERSION_FLAG 1U       /* LANDLOCK_CREATE_RULESET_VERSION */
#define LANDLOCK_PATH_BENEATH 1        /* LANDLOCK_RULE_PATH_BENEATH */
#define LANDLOCK_REFER (1ULL << 13)    /* LANDLOCK_ACCESS_FS_REFER, ABI 2 (Linux 5.19) */
#define LANDLOCK_SIGNAL_SCOPE 2ULL     /* LANDLOCK_SCOPE_SIGNAL, ABI 6 (Linux 6.12) */
#define LANDLOCK_ABSTRACT_SCOPE 1ULL   /* LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, ABI 6 */
struct shellrt_ruleset_attr {
    unsigned long long handled_access_fs, handled_access_net, scoped;
};
struct shellrt_path_beneath {
    unsigned long long allowed_access;
    int parent_fd;
} __attribute__((packed));

/* Put the command (about to exec, no_new_privs set) in a Landlock domain of its own: every command
 * of a session shares a uid and the container's pid namespace, and a background task opened a
 * later command's /proc/<pid>/mem read-write, read its environ, followed its fd, cwd and root links
 * and signalled it (red team round 28). In a domain the kernel refuses ptrace access (which those
 * /proc entries, pidfd_getfd and process_vm_* check) to any process outside it and its nested
 * domains, and with ABI 6's scopes every signal too, and every connect or send to an abstract unix
 * socket bound outside the domain (a background task squatted a name a later command connected to
 * and answered as it: red team round 28, docker3; the netns, so the names, are the session's): a
 * command reaches its own descendants only, never another command, a helper or the executor; the
 * network "proxied" is TCP (127.0.0.1), path sockets are left to file permissions. A domain must handle something: REFER
 * (ABI 2), granted beneath "/" (every path, mounts included), so renames and links behave as
 * before; on ABI 1 handling any file right refuses every cross-directory rename, so there (or
 * with Landlock off) nothing is done: the round-27 level, one trust domain per session. Returns the
 * level made (ISO_*), which the executor learnt at start (probe_isolation) and told the host. */
#define ISO_NONE 0    /* no domain: one trust domain per session */
#define ISO_PROC 1    /* ptrace and /proc closed between commands (ABI 2-5) */
#define ISO_SIGNALS 2 /* and signals and abstract unix sockets (ABI 6+) */

/* Every command's TMPDIR is a tmpfs slot of its own below TMP_SLOTS (sandbox/docker/_tmpslots.py,
 * made by the host; the runner picks a free one: SHELLRT_TMP): a background task that filled the
 * shared /tmp broke a later command's bash here-documents over 64 KiB, and a file it planted there
 * under a predictable name was the next command's (red team round 29). The command's domain then
 * handles the file rights below: granted beneath every entry of "/" but TMP_SLOTS and beneath its
 * own slot, so no other command (same uid or not, root included: Landlock is no DAC check) reads,
 * writes, creates, removes or truncates in a slot not its own; READ_DIR and REFER stay granted
 * beneath "/" (`ls /` works; names in another slot can be listed, not opened). */
#define TMP_SLOTS "/.shellrt-tmp"
/* The name of the cwd file the runner makes in a slot's root (executor.sh, CWDF=@s). */
#define SLOT_CWD ".shellrt-cwd"
#define LL_FILE_RIGHTS ((1ULL << 1) | (1ULL << 2))  /* WRITE_FILE, READ_FILE */
#define LL_READ_DIR (1ULL << 3)
#define LL_DIR_RIGHTS (LL_FILE_RIGHTS | LL_READ_DIR | (0x1ffULL << 4)) /* REMOVE_DIR .. MAKE_SYM */
#define LL_TRUNCATE (1ULL << 14) /* ABI 3 */

/* The slot number of `v` (TMP_SLOTS/<k>, k below SLOT_IDS in decimal, no leading zero), else -1. */
static int slot_number(const char *v) {
    size_t n = strlen(TMP_SLOTS);
    if (strncmp(v, TMP_SLOTS "/", n + 1) != 0) return -1;
    const char *d = v + n + 1;
    if (d[0] < '0' || d[0] > '9') return -1;
    if (d[1] == '\0') return d[0] - '0';
    if (d[0] == '0' || d[1] < '0' || d[1] > '9' || d[2] != '\0') return -1;
    int k = (d[0] - '0') * 10 + (d[1] - '0');
    return k < SLOT_IDS ? k : -1;
}

/* SHELLRT_TMP as the runner set it: a slot's path (TMP_SLOTS/<k>), NULL when absent (a `sandbox
 * connect` shell, the start probe: no slot, none closed). Anything else is refused (fail closed):
 * a command never runs without its own TMPDIR (the runner refuses it when every slot is held: round
 * 30; `-`, which gave it the shared /tmp, is refused here too). */
static const char *tmp_slot(void) {
    const char *v = getenv("SHELLRT_TMP");
    if (v == NULL) return NULL;
    if (slot_number(v) >= 0) return v;
    fprintf(stderr, "shellrt-priv: bad SHELLRT_TMP (no TMPDIR slot)\n");
    _exit(126);
}

/* The slot's own group, which only the command holding it gets (a supplementary group): the slot's
 * root is the executor's and that group's, mode 0710, so no other command, same uid or per-call
 * root (no capability), can traverse it. Its directory's name was no secret (a server's command
 * line, /proc/net/unix) and Landlock does not check a connect to a path socket: another command
 * connected to an agent served there (red team round 30). Owner, group and mode are set again here
 * (the executor owns the slot; a root_can_administer root, CAP_FOWNER, could have changed them),
 * on the mount's root as opened (a tmpfs, no link followed). */
#define TMPFS_MAGIC_NR 0x01021994
static gid_t slot_group(const char *slot, uid_t own) {
    gid_t g = (gid_t)(own + 1 + (unsigned)slot_number(slot));
    int fd = open(slot, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct statfs fs;
    if (fd < 0 || fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC_NR) die("TMPDIR slot");
    if (fchown(fd, own, g) != 0 || fchmod(fd, 0710) != 0) die("TMPDIR slot owner");
    close(fd);
    return g;
}

/* /dev/shm and /dev/mqueue are 01733 and the executor's: no command lists another's shared memory,
 * semaphores (red team round 30) or POSIX message queues (round 31), whose random names were their
 * only protection. The host mounts /dev/shm so; /dev/mqueue is runc's (1777, root's), and a
 * root_can_administer root (CAP_FOWNER, CAP_CHOWN) made either 1777 again: every command's helper
 * sets both (opened without following a link, checked to be of their file system) before the
 * command runs. Absent: nothing to keep. */
static void keep_unlisted(const char *dir, long magic, uid_t own) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return;
    struct statfs fs;
    struct stat st;
    if (fd < 0 || fstatfs(fd, &fs) != 0 || (long)fs.f_type != magic || fstat(fd, &st) != 0) die(dir);
    if ((st.st_uid != own || st.st_gid != (gid_t)own) && fchown(fd, own, (gid_t)own) != 0) die("unlisted owner");
    if ((st.st_mode & 07777) != 01733 && fchmod(fd, 01733) != 0) die("unlisted mode");
    close(fd);
}

static void landlock_grant(int rs, int fd, unsigned long long rights) {
    struct shellrt_path_beneath rule = {rights, fd};
    if (syscall(SYS_landlock_add_rule_nr, rs, LANDLOCK_PATH_BENEATH, &rule, 0) != 0) die("landlock rule");
}

/* The rules that keep every slot but the command's own (`slot`) out of its reach: the
 * handled rights beneath each entry of "/" but TMP_SLOTS (a file gets the file rights), and
 * beneath its slot. An entry made in "/" after the command started is not reachable by it. */
static void grant_but_slots(int rs, const char *slot, unsigned long long dir_rights, unsigned long long file_rights) {
    DIR *top = opendir("/");
    if (top == NULL) die("landlock /");
    struct dirent *e;
    while ((e = readdir(top)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, TMP_SLOTS + 1) == 0) continue;
        int fd = openat(dirfd(top), n, O_PATH | O_CLOEXEC);
        if (fd < 0) continue; /* a dangling link: nothing to reach */
        struct stat st;
        if (fstat(fd, &st) != 0) die("landlock entry");
        landlock_grant(rs, fd, S_ISDIR(st.st_mode) ? dir_rights : file_rights);
        close(fd);
    }
    closedir(top);
    /* POSIX message queues: mq_open creates its file in the IPC namespace's own mqueue mount, which
     * no path of "/" leads to, so a domain handling file rights refused every mq_open (EACCES; a
     * regression of this round, caught by test_session_uid_docker). A rule on /dev/mqueue's root
     * (the same inode) grants it; the queues stay shared within the session, like SysV IPC. */
    int mq = open("/dev/mqueue", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (mq >= 0) {
        struct statfs fs;
        if (fstatfs(mq, &fs) == 0 && fs.f_type == MQUEUE_MAGIC) landlock_grant(rs, mq, dir_rights);
        close(mq);
    }
    /* Reopened through /proc/self/fd/N (`> /dev/stderr`, the cwd file as `/proc/self/fd/6`): under
     * root_can_administer the streams and the cwd file are in the detached I/O directory, which no
     * path of "/" reaches. A pipe or socket is no path at all (refused here, not needed). */
    static const int inherited[] = {0, 1, 2, CWD_FD};
    for (unsigned i = 0; i < sizeof inherited / sizeof inherited[0]; i++) {
        struct stat st;
        if (fstat(inherited[i], &st) != 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) continue;
        struct shellrt_path_beneath rule = {file_rights, inherited[i]};
        (void)syscall(SYS_landlock_add_rule_nr, rs, LANDLOCK_PATH_BENEATH, &rule, 0);
    }
    int own = open(slot, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (own < 0) die("landlock TMPDIR");
    landlock_grant(rs, own, dir_rights);
    close(own);
}

/* The command's own directory in its slot, made by the helper (this identity owns the slot, mode
 * 0711: no command lists or creates there) under a random name, owned by the command's uid, 0700:
 * other commands cannot list the slot to find it. Names were listable, and a later command found
 * and connected to a unix socket an earlier one served in its TMPDIR (an agent's; red team round
 * 29): Landlock does not check a connect to a path socket (ABI 7). NULL passes through. */
static char private_tmp[64];
static const char *make_private_tmp(const char *slot, uid_t uid, gid_t gid) {
    if (slot == NULL) return NULL;
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) die("getrandom");
    int n = snprintf(private_tmp, sizeof private_tmp, "%s/", slot);
    for (unsigned i = 0; i < sizeof r; i++) n += snprintf(private_tmp + n, sizeof private_tmp - (size_t)n, "%02x", r[i]);
    if (mkdir(private_tmp, 0700) != 0) die("TMPDIR");
    if (chown(private_tmp, uid, gid) != 0 || chmod(private_tmp, 0700) != 0) die("TMPDIR owner");
    return private_tmp;
}

/* The helper, once the command's whole tree is gone (supervise): unlock the command's TMPDIR slot
 * (SHELLRT_TMP_LOCK, the runner's lock file, which this identity made) when the command left it
 * empty, the common case: no fork. A slot with anything in it stays locked for the runner's wipe
 * (executor.sh _free). The runner's cwd file (SLOT_CWD, made and truncated by the runner for each
 * holder: red team round 32) is no leftover of the command; anything else of that name (only a
 * root_can_administer root could make one, and it gets no such file) is. */
static void free_slot(void) {
    const char *slot = tmp_slot(), *lock = getenv("SHELLRT_TMP_LOCK");
    if (slot == NULL || lock == NULL || strstr(lock, "/slot.") == NULL) return;
    if (private_tmp[0] != '\0') (void)rmdir(private_tmp); /* only when empty */
    DIR *d = opendir(slot);
    if (d == NULL) return;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                (e->d_type == DT_REG && strcmp(e->d_name, SLOT_CWD) == 0);
    closedir(d);
    if (empty) (void)unlink(lock);
}

static int isolate_command(const char *slot) {
    long abi = syscall(SYS_landlock_create_ruleset_nr, NULL, 0, LANDLOCK_VERSION_FLAG);
    if (abi < 2) return ISO_NONE;
    /* Older kernels take the larger struct when its extra fields are 0. */
    unsigned long long scoped = abi >= 6 ? LANDLOCK_SIGNAL_SCOPE | LANDLOCK_ABSTRACT_SCOPE : 0;
    unsigned long long trunc = abi >= 3 ? LL_TRUNCATE : 0;
    unsigned long long handled = LANDLOCK_REFER | (slot != NULL ? LL_DIR_RIGHTS | trunc : 0);
    struct shellrt_ruleset_attr attr = {handled, 0, scoped};
    int rs = (int)syscall(SYS_landlock_create_ruleset_nr, &attr, sizeof attr, 0);
    if (rs < 0) die("landlock ruleset");
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) die("landlock /");
    landlock_grant(rs, root, LANDLOCK_REFER | (slot != NULL ? LL_READ_DIR : 0));
    close(root);
    if (slot != NULL) grant_but_slots(rs, slot, LL_DIR_RIGHTS | trunc, LL_FILE_RIGHTS | trunc);
    if (syscall(SYS_landlock_restrict_self_nr, rs, 0) != 0) die("landlock");
    close(rs);
    return abi >= 6 ? ISO_SIGNALS : ISO_PROC;
}

/* Which isolation every command of this container will get, found once at the executor's start
 * (red team round 28, docker2): isolate_command returned silently on a kernel, a Landlock setting
 * or a daemon seccomp profile that allowed none, and the host never knew. A child does exactly
 * what a command's helper does (no_new_privs, isolate_command) and, at ISO_SIGNALS, checks that
 * both scopes hold: signal 0 to us, allowed before, must be refused after, and so must a connect to
 * an abstract name the child bound before (docker3). Its exit status is the
 * level; anything else (a failed call, a scope that did not hold) is -1, which the host treats
 * as "unknown" (a refusal under require_command_isolation). One fork, a few calls: ~1 ms. */
static int probe_isolation(void) {
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(120);
        if (kill(getppid(), 0) != 0) _exit(121);
        /* An abstract name bound outside the domain (autobind: the kernel picks a free one). */
        struct sockaddr_un name = {.sun_family = AF_UNIX};
        socklen_t len = sizeof name;
        int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (srv < 0 || bind(srv, (struct sockaddr *)&name, sizeof(sa_family_t)) != 0 || listen(srv, 1) != 0 ||
            getsockname(srv, (struct sockaddr *)&name, &len) != 0)
            _exit(123);
        int level = isolate_command(NULL);
        if (level == ISO_SIGNALS && (kill(getppid(), 0) == 0 || errno != EPERM)) _exit(122);
        int cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (cli < 0) _exit(123);
        int reached = connect(cli, (struct sockaddr *)&name, len) == 0;
        if (level == ISO_SIGNALS && (reached || errno != EPERM)) _exit(124);
        _exit(level);
    }
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) > ISO_SIGNALS) return -1;
    return WEXITSTATUS(status);
}

/* The level the executor announced (SHELLRT_ISO in its environment, set by exec mode: never the
 * image's, which executor_environment drops); 0 when absent (a `sandbox connect` shell). */
static int announced_isolation(void) {
    const char *v = getenv("SHELLRT_ISO");
    if (v == NULL || v[0] < '0' || v[0] > '0' + ISO_SIGNALS || v[1] != '\0') return ISO_NONE;
    return v[0] - '0';
}

/* Calls on another process that the kernel allows on a matching uid alone (no ptrace check, no
 * Landlock hook): a command set a later command's RLIMIT_NOFILE to 64, its CPU affinity, its
 * scheduling policy (SCHED_IDLE) and its I/O class (idle) by pid (red team round 28). Refused with
 * EPERM: prlimit64 with a new value, sched_setaffinity, sched_setscheduler, sched_setparam and
 * sched_setattr for any pid but 0 (the caller), ioprio_set for anything but the caller or its own
 * process group (who 0, not IOPRIO_WHO_USER: every process of the uid). Reading stays open.
 * (setpriority needs nothing: a command's nice is 19 for good, the most there is.) Built at run
 * time: the jumps to its two ends are counted here, not by hand. */
#define XPROC_MAX 40
/* Jump targets by name (fixed in xproc_build): 0 is the next instruction. */
enum { XP_NEXT, XP_ALLOW, XP_DENY, XP_SCHED, XP_PRLIMIT, XP_IOPRIO, XP_LABELS };
#define XP_MARK 0xf0 /* label l is written as XP_MARK + l until fixed */
static struct sock_filter xproc[XPROC_MAX];
static unsigned xproc_n, xproc_at[XP_LABELS];

static void xproc_stmt(unsigned short code, unsigned k) { xproc[xproc_n++] = (struct sock_filter)BPF_STMT(code, k); }
static void xproc_load(unsigned off) { xproc_stmt(BPF_LD | BPF_W | BPF_ABS, off); }
static unsigned char xproc_to(int label) { return label == XP_NEXT ? 0 : (unsigned char)(XP_MARK + label); }
static void xproc_jeq(unsigned k, int t, int f) {
    xproc[xproc_n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, xproc_to(t), xproc_to(f));
}
static void xproc_label(int label) { xproc_at[label] = xproc_n; }
static unsigned char xproc_fix(unsigned char t, unsigned at) {
    return t >= XP_MARK ? (unsigned char)(xproc_at[t - XP_MARK] - at - 1) : t;
}
static struct sock_fprog xproc_build(void) {
    static const int by_pid[] = {__NR_sched_setaffinity, __NR_sched_setscheduler, __NR_sched_setparam,
                                 __NR_sched_setattr};
    xproc_n = 0;
    xproc_load(offsetof(struct seccomp_data, arch));
    xproc_jeq(NATIVE_ARCH, XP_NEXT, XP_ALLOW);
    xproc_load(offsetof(struct seccomp_data, nr));
    for (unsigned i = 0; i < sizeof by_pid / sizeof by_pid[0]; i++) xproc_jeq((unsigned)by_pid[i], XP_SCHED, XP_NEXT);
    xproc_jeq(__NR_prlimit64, XP_PRLIMIT, XP_NEXT);
    xproc_jeq(__NR_ioprio_set, XP_IOPRIO, XP_ALLOW);
    xproc_label(XP_SCHED); /* sched_set*(pid, ...): pid 0 only */
    xproc_load(ARG_LOW(0));
    xproc_jeq(0, XP_ALLOW, XP_DENY);
    xproc_label(XP_PRLIMIT); /* prlimit64(pid, resource, new, old): pid 0, or new NULL */
    xproc_load(ARG_LOW(0));
    xproc_jeq(0, XP_ALLOW, XP_NEXT);
    xproc_load(ARG_LOW(2));
    xproc_jeq(0, XP_NEXT, XP_DENY);
    xproc_load(ARG_HIGH(2));
    xproc_jeq(0, XP_ALLOW, XP_DENY);
    xproc_label(XP_IOPRIO); /* ioprio_set(which, who, prio): who 0, which not IOPRIO_WHO_USER (3) */
    xproc_load(ARG_LOW(1));
    xproc_jeq(0, XP_NEXT, XP_DENY);
    xproc_load(ARG_LOW(0));
    xproc_jeq(3, XP_DENY, XP_ALLOW);
    xproc_label(XP_ALLOW);
    xproc_stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    xproc_label(XP_DENY);
    xproc_stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
    for (unsigned i = 0; i < xproc_n; i++) {
        if (BPF_CLASS(xproc[i].code) != BPF_JMP) continue;
        xproc[i].jt = xproc_fix(xproc[i].jt, i);
        xproc[i].jf = xproc_fix(xproc[i].jf, i);
    }
    return (struct sock_fprog){.len = (unsigned short)xproc_n, .filter = xproc};
}

/* The command's cwd as the kernel had it when it exited, once read (see trace_stop). */
static char exit_cwd[4096];
static ssize_t exit_cwd_len = -1;

/* Whether the runner asked for the command's final cwd: SHELLRT_KCWD=1 and its file open as
 * KCWD_FD. */
static int kcwd_requested(void) {
    const char *v = getenv("SHELLRT_KCWD");
    return v != NULL && strcmp(v, "1") == 0 && fcntl(KCWD_FD, F_GETFD) >= 0;
}

/* The command's cwd is reported from the kernel, not from what it wrote: every process of its uid
 * (a background task of an earlier command) can read its environment and write the file it names,
 * and wrote a directory the command never entered into a later command's report (red team round
 * 27). So the helper traces the command's own process (the child, never its children) for one
 * event, its exit (PTRACE_O_TRACEEXIT: stopped in do_exit before its files and cwd are released),
 * and reads /proc/<child>/cwd there: a pid of our unreaped child, no reuse. Seized before the
 * child runs anything (it waits for EOF on a pipe); the command's seccomp filter keeps it from
 * tracing, so nothing of it can take the tracer's place. Signals pass through unchanged. */
static void trace_stop(pid_t child, int st) {
    int event = (unsigned)st >> 16, sig = WSTOPSIG(st);
    if (event == PTRACE_EVENT_EXIT) {
        char path[40];
        snprintf(path, sizeof path, "/proc/%d/cwd", (int)child);
        ssize_t n = readlink(path, exit_cwd, sizeof exit_cwd - 1);
        exit_cwd_len = -1;
        if (n > 0 && exit_cwd[0] == '/' && memchr(exit_cwd, '\n', (size_t)n) == NULL) {
            exit_cwd[n] = '\0';
            /* Removed since it was entered: no path names it any more. */
            if (!(n >= 10 && strcmp(exit_cwd + n - 10, " (deleted)") == 0)) exit_cwd_len = n;
        }
        ptrace(PTRACE_CONT, child, 0, 0);
    } else if (event == PTRACE_EVENT_STOP) {
        /* A group stop (SIGSTOP, job control): stay stopped until SIGCONT, as untraced. */
        if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) ptrace(PTRACE_LISTEN, child, 0, 0);
        else ptrace(PTRACE_CONT, child, 0, 0);
    } else {
        ptrace(PTRACE_CONT, child, 0, (void *)(long)sig); /* a signal for the command: delivered */
    }
}

/* Whether the runner asked how the command ended: SHELLRT_KST=1 and its file open as KCWD_FD. */
static int kst_requested(void) {
    const char *v = getenv("SHELLRT_KST");
    return v != NULL && strcmp(v, "1") == 0 && fcntl(KCWD_FD, F_GETFD) >= 0;
}

/* To the runner's file, after its first line (it reads from there): how the command ended, "s" (killed by a
 * signal) or "x" (it exited), when asked (SHELLRT_KST), then its exit cwd when traced and known.
 * The runner's $? is 128+N for both a death by signal N and `exit 128+N`: only we see which (a
 * command's `exit 137` was reported as SIGKILL, and as an OOM kill while another was; round 38). */
static void report_end(int status, int traced) {
    char buf[sizeof exit_cwd + 3];
    size_t n = 0;
    if (kst_requested()) {
        buf[n++] = WIFSIGNALED(status) ? 's' : 'x';
        buf[n++] = '\n';
    }
    if (traced && exit_cwd_len > 0) {
        memcpy(buf + n, exit_cwd, (size_t)exit_cwd_len);
        n += (size_t)exit_cwd_len;
        buf[n++] = '\n';
    }
    if (n == 0) return;
    /* After what the file holds (the runner's lock: its command's id), never over it: the runner
     * reads the id line, then ours. The file is this runner's alone (round 38 review5). */
    struct stat sb;
    if (fstat(KCWD_FD, &sb) != 0) return;
    if (pwrite(KCWD_FD, buf, n, sb.st_size) != (ssize_t)n) (void)ftruncate(KCWD_FD, sb.st_size);
}

/* The parent's part of `drop`: wait for the command, then end everything it left, then exit with
 * its status. Orphans handed to us while it runs are reaped as they die (no zombies pile up).
 * ``traced``: we trace the child for its exit (trace_stop). */
static int supervise(pid_t child, int traced) {
    the_child = child;
    if (traced) traced_child = child;
    if (kill_asked) kill(child, SIGKILL); /* asked before we knew the child */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2; fd++) {
        /* The command's streams are its own: holding them would keep EOF from the host. */
        if (null >= 0) dup2(null, fd);
        else close(fd);
    }
    int status = 0, st;
    pid_t self = getpid();
    struct held h = {NULL, 0, pidfd_budget()};
    h.fds = malloc(h.cap * sizeof(int));
    if (h.fds == NULL) h.cap = 0;
    for (int swept = 0;;) {
        if (kill_asked && !swept) {
            /* The executor's kill: the whole tree now, the command with it. Waiting for the
             * command's own exit first gave it 1/2,048 of the CPU to die in, among its bomb's
             * spinning processes (4 s, red team round 23). */
            swept = 1;
            raise_for_sweep();
            sweep_pass(self, &h);
        }
        pid_t w = waitpid(-1, &st, 0);
        if (w == child && traced && WIFSTOPPED(st)) {
            trace_stop(child, st);
            continue;
        }
        if (w == child) {
            status = st;
            traced_child = 0; /* reaped: its pid may be another's now */
            break;
        }
        if (w < 0 && errno != EINTR) return 126; /* ECHILD: cannot happen while the child lives */
    }
    for (;;) {
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
        }
        if (w < 0 && errno == ECHILD) break; /* no descendant left at all */
        raise_for_sweep();
        if (sweep_pass(self, &h) > 0) continue;
        /* Nothing signalled (unreadable, or no pidfds): reap one that dies, then look again. */
        if (waitpid(-1, &st, 0) < 0 && errno == ECHILD) break;
    }
    free(h.fds);
    report_end(status, traced);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

extern char **environ;

/* The command's environment: the values of the SHELLRT_E<digits>= entries of ours, nothing else;
 * with `tmpdir`, TMPDIR is it (whatever the host sent: a session's copy of an earlier command's). */
static char **command_environment(const char *tmpdir) {
    size_t n = 0;
    for (char **e = environ; *e != NULL; e++) n++;
    char **out = calloc(n + 2, sizeof *out);
    if (out == NULL) die("calloc");
    size_t k = 0;
    for (char **e = environ; *e != NULL; e++) {
        const char *p = *e;
        if (strncmp(p, "SHELLRT_E", 9) != 0) continue;
        p += 9;
        if (*p < '0' || *p > '9') continue;
        while (*p >= '0' && *p <= '9') p++;
        if (*p != '=') continue;
        if (tmpdir != NULL && strncmp(p + 1, "TMPDIR=", 7) == 0) continue;
        out[k++] = (char *)p + 1;
    }
    if (tmpdir != NULL) {
        static char entry[64];
        if (snprintf(entry, sizeof entry, "TMPDIR=%s", tmpdir) >= (int)sizeof entry) die("TMPDIR");
        out[k++] = entry;
    }
    return out;
}

/* The executor's environment: our PATH= entry (the host sets it on the container) and SHELLRT_ISO,
 * the commands' isolation level found at start (probe_isolation; the hello's field), nothing else. */
static char **executor_environment(int isolation) {
    static char *out[3];
    static char iso[] = "SHELLRT_ISO=e"; /* e: the probe failed (probe_isolation) */
    if (isolation >= 0) iso[sizeof iso - 2] = (char)('0' + isolation);
    char *path = NULL;
    for (char **e = environ; *e != NULL; e++)
        if (strncmp(*e, "PATH=", 5) == 0) path = *e;
    int n = 0;
    if (path != NULL) out[n++] = path;
    out[n] = iso;
    return out;
}

/* Raise this process's oom_score_adj (raising needs no capability; lowering below the floor the
 * container started with, the executor's own score, needs CAP_SYS_RESOURCE, which no process in
 * the container holds). */
static void set_oom(const char *value) {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0) die("oom_score_adj");
    ssize_t n = write(fd, value, strlen(value));
    if (n != (ssize_t)strlen(value)) die("oom_score_adj");
    close(fd);
}

/* Move this process (a command about to drop its identity) into the commands' memory cgroup when
 * the host made one: its memory and an OOM kill among it stay there, away from the executor's
 * reserve, whatever score the command gives itself (red team round 25). Checked in
 * /proc/self/cgroup afterwards: a command never runs outside a cgroup that exists. */
static void join_commands_cgroup(void) {
    struct statfs fs;
    int fd;
    if (statfs(COMMANDS_CGROUP, &fs) == 0 && fs.f_type == CGROUP_MAGIC) {
        /* Mounted (a reset mounts a fresh one there: the path, never an older one held below). */
        fd = open(COMMANDS_CGROUP "/cgroup.procs", O_WRONLY | O_CLOEXEC);
    } else if (fstatfs(CMDS_FD, &fs) == 0 && fs.f_type == CGROUP_MAGIC) {
        /* Detached (root_can_administer): the one boot held (hold_commands_cgroup). */
        fd = openat(CMDS_FD, "cgroup.procs", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    } else {
        return;
    }
    if (fd < 0) die("commands cgroup");
    if (write(fd, "0", 1) != 1) die("commands cgroup");
    close(fd);
    char buf[4096];
    int in = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (in < 0) die("/proc/self/cgroup");
    ssize_t n = read(in, buf, sizeof buf - 1);
    close(in);
    if (n <= 0) die("/proc/self/cgroup");
    buf[n] = 0;
    for (char *line = buf; line != NULL && *line;) {
        char *next = strchr(line, '\n');
        if (next != NULL) *next++ = 0;
        char *ctl = strchr(line, ':');
        char *path = ctl != NULL ? strchr(ctl + 1, ':') : NULL;
        if (path != NULL) {
            *path++ = 0;
            size_t len = strlen(path), tail = strlen(COMMANDS_CHILD);
            int memory = strcmp(ctl + 1, "memory") == 0 || strstr(ctl + 1, "memory,") != NULL ||
                         (strlen(ctl + 1) > 7 && strcmp(ctl + 1 + strlen(ctl + 1) - 7, ",memory") == 0);
            if (memory) {
                if (len >= tail && strcmp(path + len - tail, COMMANDS_CHILD) == 0) return;
                break;
            }
        }
        line = next;
    }
    fprintf(stderr, "shellrt-priv: not in the commands' memory cgroup after joining it\n");
    _exit(126);
}

int main(int argc, char **argv) {
    int admin = argc >= 2 && strcmp(argv[1], "admin") == 0;
    int own = argc >= 2 && strcmp(argv[1], "own") == 0; /* the session's leased uid: no shared_uid_filter */
    int drop = admin || own || (argc >= 2 && strcmp(argv[1], "drop") == 0);
    int sep = 5;
    if (argc < sep + 2 || strcmp(argv[sep], "--") != 0) {
        fprintf(stderr, "usage: priv exec|boot|boot-admin UID GID AUID -- PROG ARGS... | priv drop|own|admin UID GID GROUPS -- PROG ARGS...\n");
        return 126;
    }
    uid_t uid = (uid_t)parse_id(argv[2]);
    gid_t gid = (gid_t)parse_id(argv[3]);
    unsigned long long mask = 0;
    for (unsigned i = 0; i < NKEEP; i++) mask |= 1ULL << keep[i];
    int last = CAP_LAST_CAP;
    int boot_admin = strcmp(argv[1], "boot-admin") == 0; /* root_can_administer: hold_commands_cgroup */
    int boot = boot_admin || strcmp(argv[1], "boot") == 0;
    if (boot || strcmp(argv[1], "exec") == 0) {
        pin_audit_identity(parse_auid(argv[4]));
        for (int c = 0; c <= last + 8; c++)
            if (!(mask & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL) die("bounding");
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) die("keepcaps");
        if (setgroups(0, NULL) != 0) die("setgroups");
        if (setresgid(gid, gid, gid) != 0) die("setresgid");
        if (setresuid(uid, uid, uid) != 0) die("setresuid");
        set_caps(mask);
        for (unsigned i = 0; i < NKEEP; i++)
            if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep[i], 0, 0) != 0) die("ambient");
        environ = executor_environment(probe_isolation());
        setid_filter();
        load_host_budget_filter();
        if (boot) wait_for_go();
        if (boot_admin) hold_commands_cgroup();
    } else if (drop) {
        /* Never the executor's own identity: a command under it could signal and trace it. */
        uid_t own_uid = getuid();
        gid_t own_gid = getgid();
        if (uid == own_uid || gid == own_gid || gid == (gid_t)own_uid || reserved_id(uid, own_uid) ||
            reserved_id(gid, own_uid)) {
            fprintf(stderr, "shellrt-priv: uid %u / gid %u is the executor's own or a TMPDIR slot's\n", uid, gid);
            return 126;
        }
        if (admin && uid != 0) {
            fprintf(stderr, "shellrt-priv: admin is for uid 0 only, not %u\n", uid);
            return 126;
        }
        pin_audit_identity(uid); /* set by boot or exec already: a no-op then */
        unsigned long long admin_mask = 0;
        if (admin)
            for (unsigned i = 0; i < NADMIN; i++) admin_mask |= 1ULL << admin_caps[i];
        static gid_t groups[257]; /* 256 and the TMPDIR slot's group */
        size_t ngroups = parse_groups(argv[4], groups, 256, own_gid, own_uid);
        /* Its own session and process group (the kill path finds the tree by them). */
        /* (Already the leader of a session of its own: a `docker exec -t` connection's shell.) */
        catch_kill_request();
        /* GONE_FD: the read end of a pipe whose only write end (GONE_FD + 1) this helper holds
         * until it exits. The executor's kill opens /proc/<us>/fd/GONE_FD and reads: EOF once we
         * are gone, a wait that needs no fork and burns no CPU (a dash loop polling our stat
         * file took a share of the CPU our sweep needed). The command never gets either end.
         * One page (pipe pages are counted per host uid, this one shared by every session's
         * executor); without it (pipe refused) the executor polls instead. */
        int gone[2];
        if (pipe2(gone, O_CLOEXEC) == 0) {
            fcntl(gone[0], F_SETPIPE_SZ, 4096);
            if (dup3(gone[0], GONE_FD, O_CLOEXEC) < 0 || dup3(gone[1], GONE_FD + 1, O_CLOEXEC) < 0) die("dup3");
            if (gone[0] != GONE_FD && gone[0] != GONE_FD + 1) close(gone[0]);
            if (gone[1] != GONE_FD && gone[1] != GONE_FD + 1) close(gone[1]);
        }
        if (setsid() < 0 && getsid(0) != getpid()) die("setsid");
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("subreaper");
        /* The command's final cwd, from the kernel (trace_stop): the child waits for EOF here
         * until it is traced. */
        const char *slot = tmp_slot();
        if (slot != NULL) groups[ngroups++] = slot_group(slot, own_uid);
        keep_unlisted("/dev/shm", TMPFS_MAGIC_NR, own_uid);
        keep_unlisted("/dev/mqueue", MQUEUE_MAGIC, own_uid);
        const char *tmpdir = make_private_tmp(slot, uid, gid);
        int kcwd = kcwd_requested();
        int seized[2] = {-1, -1};
        if (kcwd && pipe2(seized, O_CLOEXEC) != 0) kcwd = 0; /* no pipe (file-max): no report, the command runs */
        pid_t child = fork();
        if (child < 0) die("fork");
        if (child > 0) {
            /* ps shows the command once, as itself, not a second time as this helper. */
            for (int i = sep + 1; i < argc; i++) memset(argv[i], 0, strlen(argv[i]));
            /* Not traced (ptrace refused): no cwd is reported, none forged either. */
            int traced = kcwd && ptrace(PTRACE_SEIZE, child, 0, PTRACE_O_TRACEEXIT) == 0;
            if (kcwd) {
                close(seized[0]);
                close(seized[1]);
            }
            int rc = supervise(child, traced);
            free_slot();
            return rc;
        }
        if (kcwd) {
            char byte;
            close(seized[1]);
            while (read(seized[0], &byte, 1) < 0 && errno == EINTR) {
            }
            close(seized[0]);
        }
        /* No core dumps: 1 byte, soft and hard (a core_pattern pipe handler on the host runs
         * whatever the limit is, except at exactly 1: fs/coredump.c; red team round 14). With no
         * capability left the command cannot raise the hard limit, and the seccomp filter
         * refuses lowering it to 0. */
        struct rlimit nocore = {1, 1};
        if (setrlimit(RLIMIT_CORE, &nocore) != 0) die("rlimit core");
        /* Nice 19, for good (RLIMIT_NICE 0, hard, and no CAP_SYS_NICE: never lower again), while
         * the helper sweeps at nice -20 (raise_for_sweep): within the container's own cpu cgroup
         * it then outweighs a 2,048-process bomb about 3 to 1. At equal weight the sweep had
         * 1/2,049 of the container's CPU and the kill outlasted the host's grace (red team round
         * 23). Against other containers and the host the cgroup's own weight counts, not this.
         * (SCHED_IDLE would weigh 3, but then every waking task of the host preempts the command,
         * whatever its cgroup.) */
        struct rlimit nonice = {0, 0};
        if (setrlimit(RLIMIT_NICE, &nonice) != 0) die("rlimit nice");
        if (setpriority(PRIO_PROCESS, 0, 19) != 0) die("setpriority");
        /* Memory held by no process (a full tmpfs /tmp or /dev/shm, SysV segments) is charged to
         * the container: at its ceiling the OOM killer took the largest process, the executor, and
         * the session's container was replaced (red team round 24). At 1000 any process of a
         * command outscores the executor; it can lower itself to the executor's score, no further. */
        set_oom(COMMAND_OOM);
        join_commands_cgroup();
        close_fds(3, CWD_FD - 1);
        close_fds(CWD_FD + 1, ~0U);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die("ambient");
        /* The executor's bounding set holds only `keep` (cut in exec mode): drop those (admin:
         * all but admin_caps). */
        for (unsigned i = 0; i < NKEEP; i++)
            if (!(admin_mask & (1ULL << keep[i])) && prctl(PR_CAPBSET_DROP, keep[i], 0, 0, 0) != 0)
                die("bounding");
        int bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                   SECBIT_KEEP_CAPS_LOCKED;
        int no_raise = SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        if (prctl(PR_SET_SECUREBITS, bits | (admin ? 0 : no_raise), 0, 0, 0) != 0) die("securebits");
        if (setgroups(ngroups, groups) != 0) die("setgroups");
        if (setresgid(gid, gid, gid) != 0) die("setresgid");
        if (setresuid(uid, uid, uid) != 0) die("setresuid");
        if (admin) {
            /* uid 0 gains nothing at exec (NOROOT): admin_caps pass as ambient capabilities,
             * raised while SETPCAP is still held to lock the ambient set afterwards. */
            set_caps3(admin_mask | (1ULL << CAP_SETPCAP), admin_mask);
            for (unsigned i = 0; i < NADMIN; i++)
                if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, admin_caps[i], 0, 0) != 0) die("ambient");
            if (prctl(PR_SET_SECUREBITS, bits | no_raise, 0, 0, 0) != 0) die("securebits");
        }
        set_caps(admin_mask);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
        /* Never less than the host was told: fail closed. */
        int want = announced_isolation();
        if (isolate_command(tmpdir) < want) {
            fprintf(stderr, "shellrt-priv: Landlock isolation below the level announced at start (%d)\n", want);
            _exit(126);
        }
        struct sock_fprog deny = {
            .len = (unsigned short)(sizeof shellrt_command_filter / sizeof(struct sock_filter)),
            .filter = (struct sock_filter *)(void *)shellrt_command_filter,
        };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &deny, 0, 0) != 0) die("seccomp");
        struct sock_fprog shared = {
            .len = (unsigned short)(sizeof shared_uid_filter / sizeof shared_uid_filter[0]),
            .filter = (struct sock_filter *)shared_uid_filter,
        };
        if (!own && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &shared, 0, 0) != 0) die("seccomp shared");
        struct sock_fprog others = xproc_build();
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &others, 0, 0) != 0) die("seccomp others");
        struct sock_fprog nest = {
            .len = (unsigned short)(sizeof nest_filter / sizeof nest_filter[0]),
            .filter = (struct sock_filter *)nest_filter,
        };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &nest, 0, 0) != 0) die("seccomp nest");
        /* The executor ignores the signals docker-init forwards; commands start with defaults. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++)
            if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL); /* 32, 33: EINVAL, harmless */
        /* An ordinary login's umask, as bwrap and local give: the executor's 077 (its locks and
         * cwd reports) made every file a command wrote 0600, a bind-mounted workspace's too (red
         * team round 37). Only now: the helper's own files above are made at 077. */
        umask(COMMAND_UMASK);
        environ = command_environment(tmpdir);
    } else {
        fprintf(stderr, "shellrt-priv: unknown mode %s\n", argv[1]);
        return 126;
    }
    execvp(argv[sep + 1], argv + sep + 1);
    fprintf(stderr, "shellrt-priv: exec %s failed: %s\n", argv[sep + 1], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
