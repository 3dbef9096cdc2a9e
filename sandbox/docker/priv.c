/* shellrt-priv: the docker executor's identity switch (built by sandbox/docker/_priv.py).
 *
 *   priv exec EUID EGID -- PROG ARGS...
 *       Run as container root at start: become EUID:EGID (the executor's own
 *       identity, never a command's) keeping only the capabilities the
 *       executor needs, as ambient capabilities so /bin/sh keeps them, and
 *       no others anywhere (the bounding set is cut to them too).
 *   priv drop UID GID [NAME=VALUE...] -- PROG ARGS...
 *       Run by the executor for each command: start a new session, empty the bounding, ambient,
 *       inheritable, permitted and effective sets, lock the securebits so
 *       uid 0 gains nothing at exec, then become UID:GID (no supplementary
 *       groups), restore default signal dispositions and exec. A command,
 *       root or not, holds no capability. Its environment is exactly the
 *       NAME=VALUE words (PATH among them is what PROG is looked up in).
 *       It also runs under the set-id filter (`shellrt_setid_filter`, generated from
 *       sandbox/_seccomp.py and prepended by _priv.py): no call sets S_ISUID/S_ISGID.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int keep[] = {CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_SYS_PTRACE, CAP_SETPCAP, CAP_DAC_OVERRIDE, CAP_FOWNER};
#define NKEEP (sizeof keep / sizeof keep[0])

static void die(const char *what) {
    fprintf(stderr, "shellrt-priv: %s: %s\n", what, strerror(errno));
    _exit(126);
}

static void set_caps(unsigned long long mask) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = d[0].inheritable = (unsigned)mask;
    d[1].effective = d[1].permitted = d[1].inheritable = (unsigned)(mask >> 32);
    if (syscall(SYS_capset, &h, d) != 0) die("capset");
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

extern char **environ;

int main(int argc, char **argv) {
    int sep = 4;
    if (argc >= 2 && strcmp(argv[1], "drop") == 0)
        while (sep < argc && strcmp(argv[sep], "--") != 0) sep++;
    if (argc < 6 || sep + 1 >= argc || strcmp(argv[sep], "--") != 0) {
        fprintf(stderr, "usage: priv exec|drop UID GID [NAME=VALUE...] -- PROG ARGS...\n");
        return 126;
    }
    uid_t uid = (uid_t)parse_id(argv[2]);
    gid_t gid = (gid_t)parse_id(argv[3]);
    unsigned long long mask = 0;
    for (unsigned i = 0; i < NKEEP; i++) mask |= 1ULL << keep[i];
    int last = CAP_LAST_CAP;
    if (strcmp(argv[1], "exec") == 0) {
        for (int c = 0; c <= last + 8; c++)
            if (!(mask & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EINVAL) die("bounding");
        if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) die("keepcaps");
        if (setgroups(0, NULL) != 0) die("setgroups");
        if (setresgid(gid, gid, gid) != 0) die("setresgid");
        if (setresuid(uid, uid, uid) != 0) die("setresuid");
        set_caps(mask);
        for (unsigned i = 0; i < NKEEP; i++)
            if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep[i], 0, 0) != 0) die("ambient");
    } else if (strcmp(argv[1], "drop") == 0) {
        /* Its own session and process group (the kill path finds the tree by them). */
        if (setsid() < 0) die("setsid");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) die("ambient");
        /* The executor's bounding set holds only `keep` (cut in exec mode): drop those. */
        for (unsigned i = 0; i < NKEEP; i++)
            if (prctl(PR_CAPBSET_DROP, keep[i], 0, 0, 0) != 0) die("bounding");
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                  SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED, 0, 0, 0) != 0) die("securebits");
        if (setgroups(0, NULL) != 0) die("setgroups");
        if (setresgid(gid, gid, gid) != 0) die("setresgid");
        if (setresuid(uid, uid, uid) != 0) die("setresuid");
        set_caps(0);
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
        struct sock_fprog setid = {
            .len = (unsigned short)(sizeof shellrt_setid_filter / sizeof(struct sock_filter)),
            .filter = (struct sock_filter *)(void *)shellrt_setid_filter,
        };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &setid, 0, 0) != 0) die("seccomp");
        /* The executor ignores the signals docker-init forwards; commands start with defaults. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++)
            if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL); /* 32, 33: EINVAL, harmless */
        /* The command's environment: exactly the NAME=VALUE words (argv is ours to keep). */
        argv[sep] = NULL;
        environ = argv + 4;
    } else {
        fprintf(stderr, "shellrt-priv: unknown mode %s\n", argv[1]);
        return 126;
    }
    execvp(argv[sep + 1], argv + sep + 1);
    fprintf(stderr, "shellrt-priv: exec %s failed: %s\n", argv[sep + 1], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
