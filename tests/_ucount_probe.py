"""A static probe of the kernel's per-user limits, built once per test run (tests/test_session_uid*.py).

Static C, so it runs in any image (the debian test image has neither python nor
perl). ``hog COUNT STOP`` takes every inotify instance, every pipe page and
every POSIX message-queue byte its uid may have, writes what it got to COUNT and
holds them until STOP exists; ``inotify``, ``pipe`` and ``mqueue`` say whether
one more is possible.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import require

SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pipe grown to 1 MiB (256 pages): its size, or -errno. */
static int grown_pipe(void) {
    int p[2];
    if (pipe(p) != 0) return -errno;
    if (fcntl(p[0], F_SETPIPE_SZ, 1 << 20) < 0) return -errno;
    return fcntl(p[0], F_GETPIPE_SZ);
}

/* A new message queue of ~80 KiB (RLIMIT_MSGQUEUE is per uid): 0, or -errno. */
static int new_queue(int n) {
    struct mq_attr attr = {.mq_maxmsg = 10, .mq_msgsize = 8192};
    char name[64];
    snprintf(name, sizeof name, "/ucount-probe-%d-%d", (int)getpid(), n);
    return mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr) == (mqd_t)-1 ? -errno : 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "inotify")) {
        printf("%s\n", inotify_init1(IN_CLOEXEC) >= 0 ? "ok" : strerrorname_np(errno));
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "pipe")) { /* a new pipe's size, and whether one may grow */
        int p[2];
        if (pipe(p) != 0) { printf("%s\n", strerrorname_np(errno)); return 0; }
        int size = fcntl(p[0], F_GETPIPE_SZ), grown = grown_pipe();
        printf("%d %s\n", size, grown < 0 ? strerrorname_np(-grown) : "ok");
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "mqueue")) {
        int r = new_queue(-1);
        printf("%s\n", r == 0 ? "ok" : strerrorname_np(-r));
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "hog")) {
        int n = 0, m = 0, q = 0, err, perr, qerr, r;
        while (inotify_init1(IN_CLOEXEC) >= 0) n++;
        err = errno;
        while ((r = grown_pipe()) >= 0) m++;
        perr = -r;
        while ((r = new_queue(q)) == 0) q++;
        qerr = -r;
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.part", argv[2]);
        FILE *f = fopen(tmp, "w");
        if (!f) return 3;
        fprintf(f, "%d %s %d %s %d %s\n", n, strerrorname_np(err), m, strerrorname_np(perr), q,
                strerrorname_np(qerr));
        if (fclose(f) != 0 || rename(tmp, argv[2]) != 0) return 3;
        struct stat st;
        for (int i = 0; i < 1200; i++) { /* held until STOP exists (60 s at most) */
            if (stat(argv[3], &st) == 0) return 0;
            usleep(50000);
        }
        return 1;
    }
    return 2;
}
"""


def build_probe(directory: Path) -> Path:
    """The probe binary, compiled statically into ``directory``."""
    gcc = shutil.which("gcc")
    require(
        gcc is not None, "gcc is needed to build the per-user limit probe (apt-get install gcc libc6-dev)"
    )
    assert gcc is not None
    source = directory / "ucount_probe.c"
    source.write_text(SOURCE)
    binary = directory / "ucount_probe"
    built = subprocess.run(
        [gcc, "-O1", "-static", "-o", str(binary), str(source)], capture_output=True, timeout=120
    )
    assert built.returncode == 0, built.stderr.decode(errors="replace")
    return binary
