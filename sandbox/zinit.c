/* shellrt-init: one bwrap session command's init, in C (built by sandbox/_zinit.py).
 *
 * Started once per zygote (sandbox/_zygote_main.py), with posix_spawn -- a vfork: no copy of
 * the zygote's Python -- from a sealed memfd the host passed it, as a fork server: it reads its
 * configuration once, then for each of the zygote's requests clones one init and answers with
 * its pid. Cloning this small process instead of the zygote's Python is the point
 * (docs/performance.md: that clone, its copy-on-write faults and the init's Python were most
 * of a session command's CPU). Each init does, in the same order, what the Python init did:
 *
 *   server: clone(CLONE_PARENT | NEWNS | NEWPID | NEWIPC) -- the init is the zygote's own child,
 *     as before, and dies with it (PDEATHSIG); the server dies with the zygote too.
 *   init (pid 1 of the new pid namespace): PDEATHSIG=KILL; every fd but its own closed;
 *     setsid; its own /proc with Docker's read-only and masked entries (the mount calls the
 *     zygote worked out); not dumpable; core limit 0/0; bounding set emptied; setgroups,
 *     setresgid, setresuid (root caller: the sandbox uid); no capabilities; ambient cleared;
 *     no_new_privs; a Landlock domain of its own (abstract sockets, signals); the session's
 *     seccomp filter; a short scheduling slice (latency only);
 *     then it waits for its command on its own socket, starts it with posix_spawnp (vfork),
 *     reaps, kills and reaps whatever is left of the namespace, and only then writes the
 *     command's status line ("s <wait status>\n") and b"r" on its report pipe.
 *
 * The server's descriptors: 0-2 the zygote's own stdio; 3 the configuration (a memfd: see
 * `read_config`; read once, then closed); 4 its SOCK_SEQPACKET socket to the zygote. A request
 * there is one byte, with the init's socket, its report pipe and, for a pooled init, the
 * command's status fd attached; the answer is the init's pid (or -errno), a native int. The
 * request on the init's socket (see sandbox/_zinit.py `encode_request`): the cwd, the argument
 * count, the arguments and the environment entries, each NUL-terminated, with the command's
 * stdin, stdout and stderr (and its status fd when not pooled) attached.
 *
 * A set-up failure is said on the command's stderr once it arrives; the command never runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

#define FD_CONFIG 3
#define FD_SERVER 4
/* An init's own: its socket, its report pipe, a pooled init's status fd. */
#define FD_CTL 5
#define FD_REPORT 6
#define FD_STATUS 7
/* A command that could not start: the wait status of `exit 1`. */
#define FAILED (1 << 8)
#define MAX_MOUNTS 512
#define MAX_CAPS 64
#define MAX_ARGS 65536

extern char **environ;

/* The configuration, one NUL-terminated field after another (sandbox/_zygote_main.py
 * `Zygote._c_config`): uid, gid (-1: not switched), slice mode (0 none, 1 the short slice
 * with SCHED_RESET_ON_FORK, 2 without it, the command's slice reset after its exec), the
 * caller's nice, the slice in ns, SHELL's fallback ("" none), the EAGAIN text, the Landlock scopes
 * of each command's domain (0: none; the zygote checked the kernel's ABI), the number of
 * bounding-set capabilities then each, the number of mount calls then for each source, target,
 * fstype, flags, data ("" for none), then the seccomp program in hex. */
struct mount_call {
    const char *source, *target, *fstype, *data;
    unsigned long flags;
    const char *end; /* a group head's: the target of the first inner group end after it (read_config) */
};
/* Marks on a mount call's flags (never the kernel's: its MS_ flags end at bit 31), set by the
 * zygote for the lock view (`_zygote_main.lock_view`), whose calls were planned at the session's
 * start while host mounts below come and go: IF_PRESENT, a move whose source or target is gone
 * (ENOENT), or whose source is there but no longer a mount (EINVAL, `not_a_mount`), has nothing to
 * keep on top: skipped; GROUP_HEAD, an overlay the kernel refuses now
 * (EINVAL, ENOENT: a host mount made below since) is not made and its calls up to GROUP_END are
 * skipped (nothing is put over the directory, so nothing is hidden). Any other failure: closed. */
#define CALL_IF_PRESENT (1UL << 40)
#define CALL_GROUP_HEAD (1UL << 41)
#define CALL_GROUP_END (1UL << 42)
/* Round 38: UMOUNT, umount2(target, MNT_DETACH) instead of a mount (a shared overlay taken off
 * its assembly point); OUTER, on a shared overlay's head and end: refused, every directory of it
 * is skipped (each directory's own calls in it are an inner group). */
#define CALL_UMOUNT (1UL << 43)
#define CALL_OUTER (1UL << 44)
/* REST: bind from the shared overlay (source) each entry of the directory target it does not cover
 * yet (`cover_rest`); data: that directory's subdirectories at the plan, "/" between them. */
#define CALL_REST (1UL << 45)
#define CALL_MARKS (CALL_IF_PRESENT | CALL_GROUP_HEAD | CALL_GROUP_END | CALL_UMOUNT | CALL_OUTER | CALL_REST)
/* Round 38 (lead): whether a lock-view move's source is there but no longer a mount point (the
 * host unmounted it and made the name again, or unlinked a masked file and made a new one: the mount
 * is gone from every namespace, so nothing is left to keep on top). statx's MOUNT_ROOT attribute,
 * through the raw system call (the struct's head is all that is read); a kernel that cannot say
 * (no statx, no MOUNT_ROOT in the mask: < 5.8) answers "a mount": the move's EINVAL fails closed. */
struct statx_head {
    uint32_t mask, blksize;
    uint64_t attributes;
    uint32_t nlink, uid, gid;
    uint16_t mode, spare0;
    uint64_t ino, size, blocks, attributes_mask;
    unsigned char rest[200];
};
#define STATX_MOUNT_ROOT_ATTR 0x00002000ULL
static int not_a_mount_at(int dirfd, const char *path, int flags) {
    struct statx_head st;
    memset(&st, 0, sizeof st);
    if (!path || syscall(SYS_statx, dirfd, path, flags, 0, &st) < 0) return 0;
    if (!(st.attributes_mask & STATX_MOUNT_ROOT_ATTR)) return 0;
    return !(st.attributes & STATX_MOUNT_ROOT_ATTR);
}
static int not_a_mount(const char *path) { return not_a_mount_at(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW); }
static struct {
    long uid, gid;
    int slice_mode, nice;
    unsigned long long slice_ns;
    const char *shell_fallback, *eagain;
    unsigned long long scopes;
    int ncaps, caps[MAX_CAPS];
    int nmounts;
    struct mount_call mounts[MAX_MOUNTS];
    struct sock_filter filter[4096];
    unsigned short nfilter;
} cfg;
static char cfg_text[1 << 18];

/* Why the set-up failed (said to the command that would have run), or "" when it did not. */
static char failure[512];

/* Where a request is received: 1 MiB as the Python init had; bss, so only what a message fills
 * is ever touched. */
static char inbox[1 << 22]; /* a command with its environment: up to 4 MiB (ARG_MAX is 2 MiB of it) */

struct sched_attr_v1 {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

static void write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

static void say(int fd, const char *a, const char *b) {
    char line[4096];
    int n = snprintf(line, sizeof line, "shellrt: %s%s\n", a, b);
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    if (n > 0) write_all(fd, line, (size_t)n);
}

static void report(int status, int wait_status) {
    char line[32];
    int n = snprintf(line, sizeof line, "s %d\n", wait_status);
    write_all(status, line, (size_t)n);
    close(status);
}

/* First failure only, as the Python init's exception: "[Errno N] what: strerror". */
static int fail(const char *what) {
    int err = errno;
    if (failure[0] == '\0') snprintf(failure, sizeof failure, "[Errno %d] %s: %s", err, what, strerror(err));
    return -1;
}

static const char *next_field(char **at, const char *end) {
    if (*at >= end) return NULL;
    char *field = *at;
    size_t len = strnlen(field, (size_t)(end - field));
    if (field + len >= end) return NULL;
    *at = field + len + 1;
    return field;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Parse fd 3 into `cfg`; -1 on any malformed field (fail closed: the command never runs). */
static int read_config(void) {
    ssize_t size = pread(FD_CONFIG, cfg_text, sizeof cfg_text, 0);
    close(FD_CONFIG);
    if (size <= 0 || size == (ssize_t)sizeof cfg_text) {
        errno = EINVAL;
        return fail("read the init's configuration");
    }
    char *at = cfg_text, *end = cfg_text + size;
    const char *f[9];
    for (int i = 0; i < 9; i++)
        if ((f[i] = next_field(&at, end)) == NULL) goto bad;
    cfg.uid = strtol(f[0], NULL, 10);
    cfg.gid = strtol(f[1], NULL, 10);
    cfg.slice_mode = atoi(f[2]);
    cfg.nice = atoi(f[3]);
    cfg.slice_ns = strtoull(f[4], NULL, 10);
    cfg.shell_fallback = f[5];
    cfg.eagain = f[6];
    cfg.scopes = strtoull(f[7], NULL, 10);
    if (cfg.scopes > 3) goto bad;
    cfg.ncaps = atoi(f[8]);
    if (cfg.ncaps < 0 || cfg.ncaps > MAX_CAPS) goto bad;
    for (int i = 0; i < cfg.ncaps; i++) {
        const char *c = next_field(&at, end);
        if (c == NULL) goto bad;
        cfg.caps[i] = atoi(c);
    }
    const char *n = next_field(&at, end);
    if (n == NULL) goto bad;
    cfg.nmounts = atoi(n);
    if (cfg.nmounts < 0 || cfg.nmounts > MAX_MOUNTS) goto bad;
    for (int i = 0; i < cfg.nmounts; i++) {
        const char *m[5];
        for (int j = 0; j < 5; j++)
            if ((m[j] = next_field(&at, end)) == NULL) goto bad;
        struct mount_call *call = &cfg.mounts[i];
        call->source = m[0][0] ? m[0] : NULL;
        call->target = m[1];
        call->fstype = m[2][0] ? m[2] : NULL;
        call->flags = strtoul(m[3], NULL, 10);
        call->data = m[4][0] ? m[4] : NULL;
    }
    /* Each group head's end, worked out once here (the server's, before any init), not by every
     * init scanning forward from each head (`_zygote_main._group_plans` alike; round 50). */
    const char *group_end = NULL;
    for (int i = cfg.nmounts - 1; i >= 0; i--) {
        struct mount_call *call = &cfg.mounts[i];
        call->end = (call->flags & CALL_GROUP_HEAD) ? group_end : NULL;
        if ((call->flags & CALL_GROUP_END) && !(call->flags & CALL_OUTER)) group_end = call->target;
    }
    const char *hex = next_field(&at, end);
    if (hex == NULL) goto bad;
    size_t len = strlen(hex);
    if (len == 0 || len % 16 != 0 || len / 16 > sizeof cfg.filter / sizeof cfg.filter[0]) goto bad;
    unsigned char *out = (unsigned char *)cfg.filter;
    for (size_t i = 0; i < len; i += 2) {
        int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
        if (hi < 0 || lo < 0) goto bad;
        out[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    cfg.nfilter = (unsigned short)(len / 16);
    return 0;
bad:
    errno = EINVAL;
    return fail("parse the init's configuration");
}

/* Landlock (linux/landlock.h; defined here: build hosts' headers may predate ABI 6). */
#define SYS_landlock_create_ruleset_nr 444
#define SYS_landlock_restrict_self_nr 446

/* The init, and so its command, in a Landlock domain of its own scoped for signals and abstract
 * unix sockets (`cfg.scopes`: red team round 29, bwrapabs; the Python init's `_own_domain`): the
 * session's commands share its network namespace. After no_new_privs, before seccomp. A kernel
 * without ABI 6 (scopes 0): nothing (docs/security.md); with it, any failure fails the set-up. */
static int own_domain(void) {
    if (cfg.scopes == 0) return 0;
    struct { uint64_t handled_fs, handled_net, scoped; } attr = {0, 0, cfg.scopes};
    int rs = (int)syscall(SYS_landlock_create_ruleset_nr, &attr, sizeof attr, 0);
    if (rs < 0) return fail("landlock_create_ruleset");
    int done = (int)syscall(SYS_landlock_restrict_self_nr, rs, 0);
    close(rs);
    return done < 0 ? fail("landlock_restrict_self") : 0;
}

/* The init gives up everything before it is handed its command, which inherits that (the
 * Python init's `_lower`, same order). */
static int lower(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return fail("prctl(DUMPABLE)");
    /* 1, not 0: the kernel runs a core_pattern pipe handler at any limit but 1 (sandbox._seccomp's
     * CORE_LIMIT; the filter keeps the command from changing it). */
    struct rlimit no_core = {1, 1};
    if (setrlimit(RLIMIT_CORE, &no_core) < 0) return fail("setrlimit(RLIMIT_CORE)");
    for (int i = 0; i < cfg.ncaps; i++)
        if (prctl(PR_CAPBSET_DROP, cfg.caps[i], 0, 0, 0) < 0) return fail("prctl(CAPBSET_DROP)");
    if (cfg.uid >= 0 && cfg.gid >= 0) {
        if (setgroups(0, NULL) < 0) return fail("setgroups");
        if (setresgid((gid_t)cfg.gid, (gid_t)cfg.gid, (gid_t)cfg.gid) < 0) return fail("setresgid");
        if (setresuid((uid_t)cfg.uid, (uid_t)cfg.uid, (uid_t)cfg.uid) < 0) return fail("setresuid");
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) return fail("prctl(DUMPABLE)");
    }
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    if (syscall(SYS_capset, &head, none) < 0) return fail("capset");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) return fail("prctl(AMBIENT)");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return fail("prctl(NO_NEW_PRIVS)");
    if (own_domain() < 0) return -1;
    struct sock_fprog prog = {cfg.nfilter, cfg.filter};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) return fail("seccomp");
    return 0;
}

/* Whether `name` is one of the "/"-separated names in `list` (NULL: none). */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *at = list; at != NULL && *at;) {
        const char *stop = strchrnul(at, '/');
        if ((size_t)(stop - at) == n && memcmp(at, name, n) == 0) return 1;
        at = *stop ? stop + 1 : stop;
    }
    return 0;
}

/* Round 38 (the Python init's `_cover_rest`): with the shared overlay of `dir`'s mount at `hold`,
 * each regular file directly in `dir` (/container_info.json) and each subdirectory made since the
 * plan (not in `known`: nothing is mounted below one, the zygote's namespace is private) bound
 * from the overlay over itself, unless it is a mount point already (covered, or a mask) or a directory
 * with one below it (renamed since the plan: a mask there stays on top). Without
 * it a command's lock on such a file was on the host's inode. A name gone meanwhile: skipped; a
 * kernel that cannot say what a mount point is: nothing more (as before); else closed. */
/* A mount table read whole, in a buffer that grows as it needs (round 51: a fixed 64 KiB one did
 * not hold a host's with a few dozen containers, and every lock-view group was skipped). */
struct table {
    char *buf;
    size_t size;
};
#define TABLE_MAX (16u << 20)
/* This namespace's mount table, read whole into `t` (NULL when it cannot be, or is longer than
 * TABLE_MAX: callers assume a mount is there). */
static const char *mount_table(struct table *t) {
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t have = 0;
    ssize_t n = 1;
    while (n > 0) {
        if (have + 1 >= t->size) { /* full: twice the room, then read on */
            size_t size = t->size ? t->size * 2 : 1u << 16;
            char *grown = size <= TABLE_MAX ? realloc(t->buf, size) : NULL;
            if (grown == NULL) break;
            t->buf = grown;
            t->size = size;
        }
        n = read(fd, t->buf + have, t->size - 1 - have);
        if (n > 0) have += (size_t)n;
    }
    close(fd);
    if (n != 0) return NULL; /* a read failed, or too long to read whole */
    t->buf[have] = '\0';
    return t->buf;
}

/* A mountinfo field (`f`, `len` bytes) with the kernel's octal escapes (space, tab, newline and
 * backslash are written `\ooo`) undone into `out` (`_zygote_main._unescape` alike); its length, or
 * -1 when it does not fit. Round 51: compared escaped with a plain name, a directory whose name has
 * a space never matched, and a mount below it was not seen. */
#define OCTAL(c) ((c) >= '0' && (c) <= '7')
static ssize_t unescaped(const char *f, size_t len, char *out, size_t size) {
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
        if (n + 1 >= size) return -1;
        if (f[i] == '\\' && len - i >= 4 && OCTAL(f[i + 1]) && OCTAL(f[i + 2]) && OCTAL(f[i + 3])) {
            out[n] = (char)(((f[i + 1] - '0') << 6) | ((f[i + 2] - '0') << 3) | (f[i + 3] - '0'));
            i += 4;
        } else {
            out[n] = f[i++];
        }
    }
    out[n] = '\0';
    return (ssize_t)n;
}

/* Round 50 (`_zygote_main._unplanned_below` alike): 1 when a mount lies below `dir` (as named now:
 * a rename since the plan shows the new name) that none of the group's moves (its calls from
 * `first` to its end) is or holds, or when that cannot be told: an overlay over `dir` would hide
 * it (a mask renamed since the plan, readable at its new name below the overlay). Each name is
 * compared with its escapes undone (round 51). `moved` (not NULL): only the group's moves that
 * moved a mount (`moved[j]`): what is left at such a name is a lower layer of a stack whose top was
 * moved (round 53), and what is below it is mounted in that lower layer (round 54: a host mount
 * inside a stacked one failed every command); the moved top covers both in the overlay, as it does
 * on the host. The name found is kept in `unplanned_name` for the refusal. */
static char unplanned_name[PATH_MAX + 1];
static int unplanned_below(const char *table, const char *dir, int first, const unsigned char *moved) {
    size_t n = strlen(dir);
    while (n > 0 && dir[n - 1] == '/') n--; /* "/" holds every mount, as in the Python init */
    unplanned_name[0] = '\0';
    if (table == NULL) return 1;
    static char name[PATH_MAX + 1];
    for (const char *line = table; *line;) {
        const char *eol = strchr(line, '\n'), *f = line;
        if (eol == NULL) eol = line + strlen(line);
        for (int k = 0; k < 4 && f != NULL && f < eol; k++)
            if ((f = memchr(f, ' ', (size_t)(eol - f))) != NULL) f++;
        if (f != NULL && f < eol) {
            const char *fe = memchr(f, ' ', (size_t)(eol - f));
            ssize_t got = unescaped(f, (size_t)((fe ? fe : eol) - f), name, sizeof name);
            if (got < 0) return 1; /* too long to compare: assumed unplanned */
            size_t len = (size_t)got;
            if (len > n && strncmp(name, dir, n) == 0 && name[n] == '/') {
                int planned = 0;
                for (int j = first; j < cfg.nmounts && !planned; j++) {
                    const struct mount_call *m = &cfg.mounts[j];
                    if ((m->flags & CALL_GROUP_END) && !(m->flags & CALL_OUTER)) break;
                    if (!(m->flags & CALL_IF_PRESENT) || m->source == NULL || (moved && !moved[j])) continue;
                    size_t sl = strlen(m->source);
                    planned = len >= sl && strncmp(name, m->source, sl) == 0 && (len == sl || name[sl] == '/');
                }
                if (!planned) { /* said to the command: no control character of a host's name */
                    for (size_t k = 0; k <= len; k++)
                        unplanned_name[k] = k < len && ((unsigned char)name[k] < 0x20 || name[k] == 0x7f) ? '?' : name[k];
                    return 1;
                }
            }
        }
        line = *eol ? eol + 1 : eol;
    }
    return 0;
}

/* Whether a mount point lies below the directory `path` (as named now, escapes undone), or that
 * cannot be told. */
static int mounts_below(const char *path) {
    static struct table buf;
    return unplanned_below(mount_table(&buf), path, cfg.nmounts, NULL); /* no moves: any mount; or unknown */
}

static int open_nofollow(int dirfd, const char *path, int beneath, int directory);
/* Anchored (round 50, `_zygote_main._cover_rest` alike): the directory, each entry and its copy in
 * the overlay opened through no link, checked by those fds and bound fd to fd. Checked by name and
 * then bound by path (mount(2) follows links), a name swapped for a link in between bound a
 * writable root over itself, without the masks below it. */
static int cover_rest(const char *hold, const char *dir, const char *known) {
    int dirfd = open_nofollow(AT_FDCWD, dir, 0, 1);
    if (dirfd < 0) return 0; /* the mount's directory went away (or is a link now): nothing to cover */
    int holdfd = open_nofollow(AT_FDCWD, hold, 0, 1);
    int reading = holdfd < 0 ? -1 : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = reading < 0 ? NULL : fdopendir(reading);
    if (d == NULL) {
        if (reading >= 0) close(reading);
        if (holdfd >= 0) close(holdfd);
        close(dirfd);
        return fail("open the lock view's directory");
    }
    const char *base = strcmp(dir, "/") == 0 ? "" : dir;
    char dst[PATH_MAX], from[40], to[40];
    struct dirent *e;
    int done = 0;
    while (done == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        /* Round 55: a subdirectory of the plan, said so by the directory entry, is never bound
         * (below, its fd's type would skip it too): not opened and statx'ed first. ~20 of the
         * ~25 entries of "/" are, three system calls each, in every init. A name swapped for a
         * file after this read is as uncovered as one swapped a moment after the statx below. */
        if (e->d_type == DT_DIR && listed(known, e->d_name)) continue;
        if (snprintf(dst, sizeof dst, "%s/%s", base, e->d_name) >= (int)sizeof dst) continue;
        int to_fd = open_nofollow(dirfd, e->d_name, 1, 0), from_fd = -1;
        struct statx stx;
        struct stat st;
        if (to_fd < 0) continue; /* gone, or a link (never followed) */
        if (statx(to_fd, "", AT_EMPTY_PATH, STATX_TYPE, &stx) < 0) goto next;
        if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) {
            close(to_fd);
            break;
        }
        if (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) goto next;
        int is_dir = S_ISDIR(stx.stx_mode);
        if ((is_dir && listed(known, e->d_name)) || !(is_dir || S_ISREG(stx.stx_mode))) goto next;
        /* A mount below (a directory renamed since the plan): never hidden. */
        if (is_dir && mounts_below(dst)) goto next;
        from_fd = open_nofollow(holdfd, e->d_name, 1, 0);
        if (from_fd < 0 || fstat(from_fd, &st) < 0 || (st.st_mode & S_IFMT) != (stx.stx_mode & S_IFMT)) goto next;
        snprintf(from, sizeof from, "/proc/self/fd/%d", from_fd);
        snprintf(to, sizeof to, "/proc/self/fd/%d", to_fd);
        if (mount(from, to, NULL, MS_BIND, NULL) < 0 && errno != ENOENT) {
            char what[300];
            snprintf(what, sizeof what, "mount %.280s", dst);
            done = fail(what);
        }
    next:
        if (from_fd >= 0) close(from_fd);
        close(to_fd);
    }
    closedir(d);
    close(holdfd);
    close(dirfd);
    return done;
}

/* A directory's group that failed only because the directory went away after its head (the host
 * removed it meanwhile: its overlay was made, the move over it finds no name): its assembly point
 * (the source, with what was moved into it) is detached so the next group finds it empty; nothing
 * is left to cover at that name. `_zygote_main._gone_at_group_end` alike. */
static int gone_at_group_end(const struct mount_call *c) {
    if (!(c->flags & CALL_GROUP_END) || (c->flags & CALL_OUTER) || errno != ENOENT || c->source == NULL) return 0;
    if (umount2(c->source, MNT_DETACH) == 0) return 1;
    errno = ENOENT; /* the move's own failure is the one said */
    return 0;
}

/* Red team round 49 (`_zygote_main._OwnGroup` alike): a directory's own overlay, anchored. The
 * directory is opened once, at its group's head, through no symbolic link (openat2
 * RESOLVE_NO_SYMLINKS), and every later call of the group names it and what lies below it by that
 * fd: the overlay's lower layer, each mount moved into it (found below both anchors, through no
 * link), the move over it. Named by path, a name the host (or another session's command, in a
 * directory it can write) swapped for a link since the plan put the overlay over the link's target
 * (a writable root: read-only, its masked files readable below a copy of it). */
struct own_group {
    const char *path;
    size_t len;
    int fd, assembly;
    const char *at;
};
#define RESOLVE_NOLINKS_ 0x06ULL /* RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS */
#define RESOLVE_BENEATH_ 0x08ULL
/* Without openat2 (Linux < 5.6; round 50): the same answer one name at a time, each opened
 * O_NOFOLLOW (a link on the way: ENOTDIR, the last name a link: ELOOP), ".." refused (never above
 * where it starts). Round 49 skipped every group there: no lock view at all. */
static int walk_nofollow(int dirfd, const char *path, int directory) {
    char buf[PATH_MAX];
    if (strlen(path) >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(buf, path);
    int fd = path[0] == '/' ? open("/", O_PATH | O_DIRECTORY | O_CLOEXEC) : fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    char *save = NULL, *part = strtok_r(buf, "/", &save);
    while (fd >= 0 && part != NULL) {
        char *rest = strtok_r(NULL, "/", &save);
        int next = -1;
        if (strcmp(part, "..") == 0)
            errno = EXDEV;
        else
            next = openat(fd, part, O_PATH | O_NOFOLLOW | O_CLOEXEC | (rest != NULL || directory ? O_DIRECTORY : 0));
        int err = errno;
        close(fd);
        errno = err;
        fd = next;
        part = rest;
    }
    struct stat st;
    if (fd >= 0 && !directory && (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))) {
        close(fd);
        errno = ELOOP;
        return -1;
    }
    return fd;
}
/* `directory`: O_DIRECTORY too (a group's anchor, round 50: a FIFO or a file swapped in for it
 * failed every later init with ENOTDIR; now it skips the group, as a link does). */
static int open_nofollow(int dirfd, const char *path, int beneath, int directory) {
    struct { uint64_t flags, mode, resolve; } how = {O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0), 0, RESOLVE_NOLINKS_ | (beneath ? RESOLVE_BENEATH_ : 0)};
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    return fd < 0 && errno == ENOSYS ? walk_nofollow(dirfd, path, directory) : fd;
}
static void own_close(struct own_group *g) {
    if (g->fd >= 0) close(g->fd);
    if (g->assembly >= 0) close(g->assembly);
    g->fd = g->assembly = -1;
    g->path = NULL;
}
/* A directory's group head, from its anchor: its own overlay made at h, or (a shared overlay's
 * directory, `end` its name: the group's last move's target) its part of the shared overlay bound at
 * s. 1 made (`g` set), 0 not such a head (replayed as it is), -1 failed (errno: ENOENT when the
 * directory is gone or a link now: the group is skipped). */
static int own_head(const struct mount_call *c, const char *end, struct own_group *g, const char *table, int first) {
    static char path[PATH_MAX], lower[PATH_MAX + 64];
    const char *colon = NULL;
    size_t len;
    if (c->flags & CALL_OUTER) return 0;
    if (c->fstype != NULL && strcmp(c->fstype, "overlay") == 0 && c->data != NULL && strncmp(c->data, "lowerdir=", 9) == 0) {
        colon = strrchr(c->data + 9, ':');
        len = colon ? (size_t)(colon - (c->data + 9)) : 0;
        if (colon == NULL || len == 0 || len >= sizeof path) return 0;
        memcpy(path, c->data + 9, len);
        path[len] = '\0';
    } else if (c->fstype == NULL && (c->flags & MS_BIND) && end != NULL && c->source != NULL) {
        len = strlen(end);
        if (len == 0 || len >= sizeof path) return 0;
        memcpy(path, end, len + 1);
    } else {
        return 0;
    }
    int fd = open_nofollow(AT_FDCWD, path, 0, 1);
    if (fd < 0 || unplanned_below(table, path, first, NULL)) { /* it would hide a mount the plan does not move */
        if (fd >= 0) close(fd);
        errno = ENOENT;
        return -1;
    }
    int done;
    if (colon == NULL) { /* the shared overlay's part, found through no link */
        int src = open_nofollow(AT_FDCWD, c->source, 0, 1);
        if (src < 0) {
            close(fd);
            errno = ENOENT;
            return -1;
        }
        char from[40];
        snprintf(from, sizeof from, "/proc/self/fd/%d", src);
        done = mount(from, c->target, NULL, c->flags & ~CALL_MARKS, NULL);
        int err = errno;
        close(src);
        errno = err;
    } else {
        snprintf(lower, sizeof lower, "lowerdir=/proc/self/fd/%d%s", fd, colon);
        done = mount(c->source, c->target, c->fstype, c->flags & ~CALL_MARKS, lower);
    }
    if (done < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    *g = (struct own_group){path, len, fd, -1, c->target}; /* the assembly opened when a mount is moved in */
    return 1;
}
/* A mount below the group's directory moved to the same place in its overlay: 0, or -1 (errno;
 * ENOENT: gone, or no longer reached through no link). */
static int own_move(struct own_group *g, const struct mount_call *c) {
    char from[40], to[40];
    if (c->source == NULL || strncmp(c->source, g->path, g->len) != 0 || c->source[g->len] != '/') {
        errno = EINVAL;
        return -1;
    }
    const char *rel = c->source + g->len + 1;
    if (g->assembly < 0 && (g->assembly = open_nofollow(AT_FDCWD, g->at, 0, 0)) < 0) {
        errno = EIO; /* our own place: the init fails (closed) */
        return -1;
    }
    int src = open_nofollow(g->fd, rel, 1, 0);
    if (src < 0) {
        errno = ENOENT;
        return -1;
    }
    int dst = open_nofollow(g->assembly, rel, 1, 0);
    if (dst < 0) {
        close(src);
        errno = ENOENT;
        return -1;
    }
    snprintf(from, sizeof from, "/proc/self/fd/%d", src);
    snprintf(to, sizeof to, "/proc/self/fd/%d", dst);
    int done = mount(from, to, NULL, MS_MOVE, NULL);
    int err = errno;
    if (done < 0 && err == EINVAL && not_a_mount_at(src, "", AT_EMPTY_PATH)) err = ENOENT;
    close(src);
    close(dst);
    errno = err;
    return done;
}

static int set_up(void) {
    if (setsid() < 0) return fail("setsid");
    int skipping = 0; /* 1: an inner group's calls, 2: an outer group's */
    struct own_group own = {NULL, 0, -1, -1, NULL};
    char anchor[40];
    static struct table points;
    const char *table = NULL; /* read at the first group head */
    int missed = 0, read_table = 0; /* missed: a planned move of the current group found nothing */
    static unsigned char moved_ok[MAX_MOUNTS]; /* the current group's moves that moved a mount */
    int group_first = 0;                       /* its first call after the head */
    for (int i = 0; i < cfg.nmounts; i++) {
        struct mount_call *c = &cfg.mounts[i];
        if (skipping) {
            if ((c->flags & CALL_GROUP_END) && (skipping == 2) == ((c->flags & CALL_OUTER) != 0)) skipping = 0;
            continue;
        }
        if (c->flags & CALL_REST) {
            if (cover_rest(c->source, c->target, c->data) < 0) return -1;
            continue;
        }
        if (c->flags & CALL_GROUP_HEAD) {
            if (!read_table) {
                table = mount_table(&points);
                read_table = 1;
            }
            int head = own_head(c, c->end, &own, table, i + 1);
            if (head == 1) {
                group_first = i + 1;
                continue;
            }
            if (head == -1 && (errno == EINVAL || errno == ENOENT)) {
                skipping = 1;
                continue;
            }
            if (head < 0) {
                char what[300];
                snprintf(what, sizeof what, "mount %s", c->target);
                return fail(what);
            }
        }
        struct mount_call moved = *c;
        int done, onto = -1;
        if (own.path != NULL && (c->flags & CALL_GROUP_END)) {
            /* over the anchor itself (the plan's own calls name it); any other name through no link */
            onto = strcmp(c->target, own.path) == 0 ? own.fd : open_nofollow(AT_FDCWD, c->target, 0, 0);
            snprintf(anchor, sizeof anchor, "/proc/self/fd/%d", onto);
            moved.target = anchor;
        }
        if (own.path != NULL && (c->flags & CALL_GROUP_END) && missed) {
            /* a mount renamed below the directory since the head's check: closed (the next init's
             * check skips the group) */
            static struct table now;
            char self[40], cur[PATH_MAX];
            snprintf(self, sizeof self, "/proc/self/fd/%d", own.fd);
            ssize_t got = readlink(self, cur, sizeof cur - 1);
            missed = 0;
            if (got <= 0 || (cur[got] = '\0', unplanned_below(mount_table(&now), cur, group_first, moved_ok))) {
                errno = EBUSY;
                char what[300];
                snprintf(what, sizeof what, "a mount below %.100s moved since the plan (%.150s)", c->target,
                         got > 0 && unplanned_name[0] ? unplanned_name : "unknown");
                return fail(what);
            }
        }
        if (own.path != NULL && (c->flags & CALL_IF_PRESENT)) {
            done = own_move(&own, c);
            moved_ok[i] = done == 0;
            if (done < 0 && errno == ENOENT) missed = 1;
        } else if (own.path != NULL && (c->flags & CALL_GROUP_END) && onto < 0) {
            errno = ENOENT; /* gone, or a link now */
            done = -1;
        } else {
            done = (c->flags & CALL_UMOUNT) ? umount2(c->target, MNT_DETACH)
                                            : mount(moved.source, moved.target, moved.fstype, moved.flags & ~CALL_MARKS, moved.data);
        }
        if (onto >= 0 && onto != own.fd) {
            int kept = errno;
            close(onto);
            errno = kept;
        }
        int err = errno;
        if (own.path != NULL && (c->flags & CALL_GROUP_END)) own_close(&own);
        errno = err;
        if (done < 0) {
            if ((c->flags & CALL_GROUP_HEAD) && (errno == EINVAL || errno == ENOENT)) {
                skipping = (c->flags & CALL_OUTER) ? 2 : 1;
                continue;
            }
            if ((c->flags & CALL_IF_PRESENT) && (errno == ENOENT || (errno == EINVAL && not_a_mount(c->source))))
                continue;
            if (gone_at_group_end(c)) continue;
            char what[300];
            snprintf(what, sizeof what, "mount %s", c->target);
            return fail(what);
        }
    }
    if (own.path != NULL) own_close(&own);
    return lower();
}

static void set_slice(pid_t pid, uint64_t flags, uint64_t slice) {
    struct sched_attr_v1 attr = {48, SCHED_OTHER, flags, cfg.nice, 0, slice, 0, 0};
    syscall(SYS_sched_setattr, pid, &attr, 0); /* best effort: latency only */
}

/* Receive the request and its fds (close-on-exec: the command must not inherit its status fd,
 * or it could forge its own exit status). Returns the message size, 0 at EOF, -1 on error;
 * -2 when it was larger than `inbox`. */
static ssize_t receive(int sock, char *into, size_t room, int *fds, int *nfds) {
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(16 * sizeof(int))];
    } control;
    struct iovec iov = {into, room};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    ssize_t size;
    do size = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (size < 0 && errno == EINTR);
    *nfds = 0;
    if (size < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n && *nfds < 16; i++) memcpy(&fds[(*nfds)++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (msg.msg_flags & MSG_TRUNC) return -2;
    return size;
}

static int has_children(void) {
    siginfo_t info;
    return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* Why a cwd that a symlink (or a file) now stands on the way to is refused. */
#define SWAPPED "a symbolic link or a file is on its way (name it by its physical path, `pwd -P`; " \
    "or it changed after it was checked); the command was not run: run it again, or cd elsewhere first"

/* chdir(path) (absolute) one component at a time from "/", never through a symbolic link
 * (O_NOFOLLOW at each step; O_PATH: nothing is read), then fchdir: the command starts in
 * exactly the directory at the path the host judged, or not at all. A chdir by name followed
 * a link that a command of the session swapped in after the host's check (red team round 25,
 * second wave). "." and ".." are refused (EINVAL): the host sends normalised paths. */
static int enter_physical(const char *path) {
    if (path[0] != '/') {
        errno = EINVAL;
        return -1;
    }
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    char part[NAME_MAX + 1];
    const char *at = path;
    while (*at) {
        while (*at == '/') at++;
        if (!*at) break;
        const char *stop = strchrnul(at, '/');
        size_t n = (size_t)(stop - at);
        if (n > NAME_MAX || (n == 1 && at[0] == '.') || (n == 2 && at[0] == '.' && at[1] == '.')) {
            close(fd);
            errno = n > NAME_MAX ? ENAMETOOLONG : EINVAL;
            return -1;
        }
        memcpy(part, at, n);
        part[n] = '\0';
        int next = openat(fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), saved = errno;
        close(fd);
        if (next < 0) {
            errno = saved;
            return -1;
        }
        fd = next;
        at = stop;
    }
    int done = fchdir(fd), saved = errno;
    close(fd);
    errno = saved;
    return done;
}

/* Start the command and wait for it; returns its wait status, *code the init's exit code. */
static int run(char *msg, size_t size, int in, int out, int err, int *code) {
    static char *argv[MAX_ARGS + 1], *env[MAX_ARGS + 3];
    char *at = msg, *end = msg + size;
    const char *cwd = next_field(&at, end), *count = next_field(&at, end);
    long argc = count ? strtol(count, NULL, 10) : 0;
    if (cwd == NULL || argc < 1 || argc > MAX_ARGS) {
        say(err, "cannot start the command: ", "a malformed request");
        *code = 1;
        return FAILED;
    }
    for (long i = 0; i < argc; i++)
        if ((argv[i] = (char *)next_field(&at, end)) == NULL) {
            say(err, "cannot start the command: ", "a malformed request");
            *code = 1;
            return FAILED;
        }
    argv[argc] = NULL;
    int nenv = 0, has_shell = 0;
    char home_tmp[] = "HOME=/tmp", shell[4096];
    const char *e;
    while ((e = next_field(&at, end)) != NULL && nenv < MAX_ARGS) {
        char *entry = (char *)e;
        /* As the Python init's `_command_env`: a root caller's HOME the sandbox user cannot
         * enter becomes /tmp; SHELL supplied when the sandbox uid has no passwd entry. */
        if (cfg.uid >= 0 && strncmp(entry, "HOME=", 5) == 0 && entry[5] && access(entry + 5, X_OK) != 0)
            entry = home_tmp;
        if (strncmp(entry, "SHELL=", 6) == 0) has_shell = 1;
        env[nenv++] = entry;
    }
    if (cfg.uid >= 0 && cfg.shell_fallback[0] && !has_shell) {
        snprintf(shell, sizeof shell, "SHELL=%s", cfg.shell_fallback);
        env[nenv++] = shell;
    }
    env[nenv] = NULL;
    if (enter_physical(cwd) < 0) { /* as the command's user: a root caller's workspace is the sandbox uid's */
        char what[4096];
        snprintf(what, sizeof what, "cannot enter the working directory %s: ", cwd);
        say(err, what, errno == ELOOP || errno == ENOTDIR ? SWAPPED : strerror(errno));
        close(in);
        *code = 1;
        return FAILED;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in, 0);
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, err, 2);
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGXFSZ);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    pid_t command;
    int rc = posix_spawnp(&command, argv[0], &actions, &attr, argv, env);
    close(in);
    if (rc != 0) { /* as a shell says it: 127 not found, 126 not executable */
        char what[4096];
        snprintf(what, sizeof what, "%s: ", argv[0]);
        say(err, what, rc == EAGAIN ? cfg.eagain : strerror(rc));
        *code = rc == ENOENT ? 127 : 126;
        return *code << 8;
    }
    if (cfg.slice_mode == 2) set_slice(command, 0, 0); /* no SCHED_RESET_ON_FORK: reset now */
    for (;;) {
        int wait_status;
        pid_t pid = waitpid(-1, &wait_status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            *code = 1;
            return FAILED;
        }
        if (pid == command) {
            *code = WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
            return wait_status;
        }
    }
}

static int init_main(int pooled) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    int status = pooled ? FD_STATUS : -1;
    if (failure[0] == '\0') set_up();
    if (failure[0] == '\0' && cfg.slice_mode != 0) /* ready: from now on, latency (best effort) */
        set_slice(0, cfg.slice_mode == 1 ? 1 /* SCHED_FLAG_RESET_ON_FORK */ : 0, cfg.slice_ns);
    int fds[16], nfds;
    ssize_t size = receive(FD_CTL, inbox, sizeof inbox, fds, &nfds);
    if (size == -1) return 1;
    close(FD_CTL);
    if (status >= 0 && nfds == 3) fds[nfds++] = status;
    else if (status >= 0) close(status);
    if (size == 0 || nfds != 4) {
        for (int i = 0; i < nfds; i++) close(fds[i]);
        return 0; /* discarded: the host closed the pool */
    }
    int in = fds[0], out = fds[1], err = fds[2];
    status = fds[3];
    if (failure[0] != '\0' || size == -2) {
        say(err, "cannot start the command: ", failure[0] ? failure : "too large");
        report(status, FAILED);
        return 1;
    }
    int code;
    int wait_status = run(inbox, (size_t)size, in, out, err, &code);
    /* Whatever the command left (background, setsid'd, double-forked): killed and reaped. Every
     * process of the namespace is this init's descendant and orphans become its children, so
     * no child left means nothing left. */
    while (has_children()) {
        kill(-1, SIGKILL);
        if (waitpid(-1, NULL, 0) < 0 && errno == ECHILD) break;
    }
    report(status, wait_status);
    /* The output pipes end only now: the host finds the status there already. */
    close(out);
    close(err);
    write_all(FD_REPORT, "r", 1);
    return code;
}

/* In a just-cloned init: its fds at FD_CTL, FD_REPORT (and FD_STATUS), close-on-exec (the
 * command must never hold its own status fd: it could forge its exit status), nothing else of
 * the server's or the zygote's but stdio. */
static void take_fds(const int *fds, int nfds) {
    int high[3];
    for (int i = 0; i < nfds; i++) high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
    for (int i = 0; i < nfds; i++) {
        if (high[i] < 0 || dup3(high[i], FD_CTL + i, O_CLOEXEC) < 0) {
            fail("take the init's descriptors");
            return;
        }
    }
    syscall(SYS_close_range, 3, FD_CTL - 1, 0);
    syscall(SYS_close_range, FD_CTL + nfds, ~0U, 0);
}

static void answer(long said) {
    int value = (int)said;
    while (send(FD_SERVER, &value, sizeof value, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

/* The umask every command starts at, whatever its caller's (sandbox._zygote_main.SANDBOX_UMASK). */
#define SANDBOX_UMASK 022

/* What a process inherits through fork and exec and bwrap 0.8 never resets (no --umask): its
 * caller's umask, ignored signals and its starting thread's blocked ones (red team round 36,
 * bwrap3). A non-root caller's one bwrap per command, and a root caller's nsenter fallback, are
 * started from the caller's own thread: under nohup or a shell's `&` every command ignored
 * SIGHUP/SIGINT/SIGQUIT, a blocked SIGTERM stayed blocked, a umask of 077 or 000 reached every
 * file it wrote. The command's first process in the sandbox starts it as the zygote's do. */
static void clean_start(void) {
    umask(SANDBOX_UMASK);
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction was;
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &was) < 0) continue;
        if (was.sa_handler == SIG_IGN) signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The audit login uid (/proc/self/loginuid, red team round 38 novel2): pinned, where unset, to this
 * process's uid before anything of the command runs, as the zygote and the root spawner pin theirs
 * (sandbox._zygote_main.pin_audit_identity). A non-root caller's one bwrap per command descends
 * from the caller, not from them: unset (CI, a service), its command set its own once, to the one
 * uid its namespace maps -- a LOGIN record and an audit session of its choosing. Changing a set
 * value needs CAP_AUDIT_CONTROL in the host's user namespace, which no command holds. No file (no
 * audit): nothing to pin. -1 with errno on a failure (the caller refuses to run the command). */
static int pin_audit_identity(void) {
    int fd = open("/proc/self/loginuid", O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    char now[16] = {0}, text[16];
    int rc = 0;
    if (pread(fd, now, sizeof now - 1, 0) < 0) {
        rc = -1;
    } else if (strncmp(now, "4294967295", 10) == 0) {
        int len = snprintf(text, sizeof text, "%u", (unsigned)getuid());
        /* EPERM: it is set after all (the kernel refuses only a set value without the capability),
         * to a uid this user namespace does not map, which reads as unset here: a login's uid
         * outside bwrap's one-uid map (`sudo` from a login, a service user). Set, no command can
         * change it either (round 38 review5: every command was refused). */
        ssize_t w = write(fd, text, (size_t)len);
        if (w < 0 ? errno != EPERM : w != len) rc = -1;
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* The command of one bwrap per command in a Landlock domain of its own (red team round 41, bwrap4).
 * bwrap's pid 1 there stays dumpable and of the command's uid: the command opened its /proc/1/mem
 * for writing and read its environment and maps -- rewrote the init whose death ends the sandbox
 * (its parent-death signal, the run marker the host's sweep finds it by). Landlock denies any
 * ptrace-mode access (/proc/<pid>/mem, environ, maps, fd) to a process outside the tracer's domain.
 * The domain handles only the making of block devices, which no command may do anyway (no
 * CAP_MKNOD): it restricts nothing else. A kernel without Landlock (ENOSYS, EOPNOTSUPP: disabled at
 * boot) leaves it as before (docs/security.md, "Left"); any other failure refuses the command. */
#define LANDLOCK_ACCESS_FS_MAKE_BLOCK_BIT (1ULL << 11)
#define LANDLOCK_ACCESS_FS_REFER_BIT (1ULL << 13)
#define SYS_landlock_add_rule_nr 445
/* A ruleset that handles any file-system right handles linking and renaming across directories
 * too (REFER, implied from ABI 2; ABI 1 refuses every such move): without a rule granting it, `ln a
 * d/b` and `mv a d/` failed with EXDEV in every command (CI115, round 8's link tests). So REFER is
 * handled and granted below the sandbox's root, where no other right differs; ABI 1 (Linux 5.13-5.18)
 * gets no domain, as a kernel without Landlock. */
static int enter_domain(void) {
    long abi = syscall(SYS_landlock_create_ruleset_nr, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
    if (abi < 0) return errno == ENOSYS || errno == EOPNOTSUPP ? 0 : -1;
    if (abi < 2) return 0;
    struct { uint64_t handled_fs, handled_net, scoped; } attr = {
        LANDLOCK_ACCESS_FS_MAKE_BLOCK_BIT | LANDLOCK_ACCESS_FS_REFER_BIT, 0, 0};
    int rs = (int)syscall(SYS_landlock_create_ruleset_nr, &attr, sizeof attr, 0);
    if (rs < 0) return -1;
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct __attribute__((packed)) { uint64_t allowed; int32_t parent_fd; } rule = {
        LANDLOCK_ACCESS_FS_REFER_BIT, root};
    long done = root < 0 ? -1 : syscall(SYS_landlock_add_rule_nr, rs, 1 /* PATH_BENEATH */, &rule, 0);
    if (done == 0) done = syscall(SYS_landlock_restrict_self_nr, rs, 0);
    int saved = errno;
    if (root >= 0) close(root);
    close(rs);
    errno = saved;
    return (int)done;
}

/* `zinit enter CWD COMMAND [ARG...]`: the starter of one bwrap per command (sandbox/_bwrap_starter.py),
 * run from a sealed memfd as bwrap's command, after bwrap's set-up and under its seccomp filter.
 * It pins the audit login uid where still unset (pin_audit_identity). bwrap's --chdir follows a symbolic link a command of the session swapped in after the host's
 * check (red team round 26); this resets what the caller's thread passed on (clean_start), walks
 * CWD as a session's init does (enter_physical), marks every
 * fd but 0-2 close-on-exec (its own memfd included: the command gets stdio only, as before), then
 * execs the command there, or refuses with the init's words (exit 1: never run). */
static int enter_main(char **argv) {
    clean_start();
    if (pin_audit_identity() < 0) {
        say(2, "cannot pin the audit login uid: ", strerror(errno));
        return 1;
    }
    if (enter_domain() < 0) {
        say(2, "cannot enter a Landlock domain of its own: ", strerror(errno));
        return 1;
    }
    if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC, Linux 5.11 */) < 0) {
        for (int fd = 3; fd < 4096; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    if (enter_physical(argv[2]) < 0) {
        char what[4096];
        snprintf(what, sizeof what, "cannot enter the working directory %s: ", argv[2]);
        say(2, what, errno == ELOOP || errno == ENOTDIR ? SWAPPED : strerror(errno));
        return 1;
    }
    execvp(argv[3], argv + 3);
    int saved = errno; /* as a shell says it: 127 not found, 126 not executable */
    char what[4096];
    snprintf(what, sizeof what, "%s: ", argv[3]);
    say(2, what, strerror(saved));
    return saved == ENOENT ? 127 : 126;
}

static int put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* `zinit shm DIR OPTIONS PTS PTS_OPTIONS COMMAND [ARG...]`: before a non-root caller's one bwrap per command
 * (sandbox/_bwrap_shm.py), on the host side of bwrap: a user and mount namespace of its own (the
 * caller's uid and gid mapped to themselves, nothing else), a tmpfs of OPTIONS (size, nr_inodes)
 * mounted on DIR there, then COMMAND (bwrap, which binds DIR at the sandbox's /dev/shm). bwrap
 * 0.8's --tmpfs takes no nr_inodes: a command's /dev/shm held the tmpfs default, ~3 M inodes (red
 * team round 27). Its capabilities end at the exec (a non-zero uid in the namespace); the
 * namespace, with the tmpfs, ends with the sandbox. And a devpts instance of PTS_OPTIONS (a max=) on
 * PTS, which bwrap binds at /dev/pts: its --dev devpts has no cap, and the kernel's pty pool is
 * host-wide (red team round 33). A failure is said and nothing runs (exit 125). */
static int shm_main(char **argv) {
    char map[64];
    unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
    const char *step = "/proc/self/loginuid";
    if (pin_audit_identity() < 0) goto fail; /* as the caller, before its namespace: bwrap inherits it */
    step = "unshare";
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) goto fail;
    step = "/proc/self/setgroups";
    if (put("/proc/self/setgroups", "deny") < 0) goto fail;
    snprintf(map, sizeof map, "%u %u 1\n", uid, uid);
    step = "/proc/self/uid_map";
    if (put("/proc/self/uid_map", map) < 0) goto fail;
    snprintf(map, sizeof map, "%u %u 1\n", gid, gid);
    step = "/proc/self/gid_map";
    if (put("/proc/self/gid_map", map) < 0) goto fail;
    step = "mount";
    if (mount("tmpfs", argv[2], "tmpfs", MS_NOSUID | MS_NODEV, argv[3]) < 0) goto fail;
    step = "devpts";
    if (mount("devpts", argv[4], "devpts", MS_NOSUID | MS_NOEXEC, argv[5]) < 0) goto fail;
    execvp(argv[6], argv + 6);
    step = argv[6];
fail:;
    char what[512];
    snprintf(what, sizeof what, "cannot make the command's capped /dev/shm (%s): ", step);
    say(2, what, strerror(errno));
    return 125;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "enter") == 0) return enter_main(argv);
    if (argc >= 7 && strcmp(argv[1], "shm") == 0) return shm_main(argv);
    if (argc != 3 || strcmp(argv[1], "server") != 0) {
        fprintf(stderr, "shellrt-init: started by the bwrap zygote only\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NAME, "shellrt-init", 0, 0, 0); /* not the memfd's number: what ps and top show */
    if (getppid() != atoi(argv[2])) return 1;     /* the zygote went away before PDEATHSIG was set */
    read_config(); /* a failure is kept: every init says it to its command, which never runs */
    syscall(SYS_close_range, FD_SERVER + 1, ~0U, 0);
    for (;;) {
        char op;
        int fds[16], nfds;
        ssize_t size = receive(FD_SERVER, &op, 1, fds, &nfds);
        if (size <= 0) {
            if (size < 0 && errno == EINTR) continue;
            return 0; /* the zygote closed its end: no more inits */
        }
        int pooled = op == 'p';
        if (nfds != (pooled ? 3 : 2)) {
            for (int i = 0; i < nfds; i++) close(fds[i]);
            answer(-EINVAL);
            continue;
        }
        long pid = syscall(SYS_clone, CLONE_PARENT | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0) {
            take_fds(fds, nfds);
            _exit(init_main(pooled));
        }
        int err = errno;
        for (int i = 0; i < nfds; i++) close(fds[i]);
        answer(pid < 0 ? -err : pid);
    }
}
