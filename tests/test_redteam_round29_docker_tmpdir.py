"""Red team round 29, docker: one command's ``/tmp`` fill or plant broke or steered a later one.

Round 28 (docker3) left ``/tmp`` one trust domain per session: a background task that filled it
made every later command's bash here-document of 64-128 KiB fail ("cannot create temp file for
here-document"), and a file it planted under a predictable name in the shared ``TMPDIR`` was read
by the next command (a tool's fixed temp name, a FIFO, a symlink it follows). Each command now gets
a ``TMPDIR`` of its own: a tmpfs slot with its own size, wiped when the command ends, that no other
command's Landlock domain may read, write, create or remove in (``priv.c``). Leased uid and
per-call root. FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import (
    DEBIAN,
    config,
    policy,
    read_to_end,
    require_docker,
    run_beside,
    run_sh,
    start_sh,
)

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: The hostile background task: fills /tmp and its own TMPDIR, then tries to plant (a file, a FIFO,
#: a symlink) and fill in every other command's TMPDIR it can name, and stays.
_HOSTILE = (
    'echo "mine=$TMPDIR"; head -c 2G /dev/zero > /tmp/fill-@T 2>/dev/null; '
    'head -c 2G /dev/zero > "$TMPDIR/fill" 2>/dev/null; '
    "for d in /.shellrt-tmp/*; do "
    '[ "$d" = "$TMPDIR" ] && continue; '
    'echo planted > "$d/sh-thd-plant" && echo "HIT file $d"; '
    'mkfifo "$d/fifo" && echo "HIT fifo $d"; '
    'ln -s /etc/passwd "$d/link" && echo "HIT link $d"; '
    'head -c 1M /dev/zero > "$d/fill" && echo "HIT fill $d"; '
    'cat "$d"/*; '
    "done 2>/dev/null; touch /tmp/ready-@T; sleep 30"
)
#: The victim: a 100 KiB bash here-document (bash writes it to $TMPDIR), what its TMPDIR holds.
_VICTIM = (
    "i=0; while [ ! -e /tmp/ready-@T ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
    'echo "tmpdir=$TMPDIR"; ls -A "$TMPDIR" | sed \'s/^/has: /\'; '
    "bash -c 'cat <<EOF | wc -c\n'\"$(head -c 100000 /dev/zero | tr '\\0' x)\"'\nEOF'; "
    'echo victim-data > "$TMPDIR/leftover"; echo done'
)

#: A running victim's file in its TMPDIR, then what is left of it once another command tried.
_HOLDER = (
    'echo victim-data > "$TMPDIR/held"; '
    "perl -e 'use Socket; socket(S, AF_UNIX, SOCK_STREAM, 0); bind(S, pack_sockaddr_un(shift)) or die; "
    'listen(S, 5); alarm 30; while (accept(C, S)) { print C "victim-agent\\n"; close C }\' "$TMPDIR/sock" & '
    "sleep 0.5; touch /tmp/held-@T; "
    "i=0; while [ ! -e /tmp/tried-@T ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
    'kill $!; cat "$TMPDIR/held"; ls -A "$TMPDIR"'
)
#: Another command, by path, on every file of every slot but its own: read, write, truncate,
#: remove, rename, hard link.
_TAMPER = (
    "i=0; while [ ! -e /tmp/held-@T ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
    'ls -d /.shellrt-tmp/*/* | grep -v "^$TMPDIR$" | sed "s/^/HIT listed /"; '
    'for f in /.shellrt-tmp/*/* /.shellrt-tmp/*/*/*; do case $f in "$TMPDIR"*) continue ;; esac; [ -e "$f" ] || [ -S "$f" ] || continue; '
    'cat "$f" && echo "HIT read $f"; echo x >> "$f" && echo "HIT write $f"; '
    'truncate -s 0 "$f" && echo "HIT truncate $f"; ln "$f" "$TMPDIR/l" && echo "HIT link $f"; '
    'mv "$f" "$f.moved" && echo "HIT rename $f"; rm -f "$f" && echo "HIT remove $f"; '
    "perl -e 'use Socket; socket(S, AF_UNIX, SOCK_STREAM, 0); connect(S, pack_sockaddr_un(shift)) or exit 1; "
    'print "HIT connect ", scalar <S>\' "$f"; '
    "done 2>/dev/null; touch /tmp/tried-@T"
)


async def _tamper(backend: DockerBackend, user: str | None, *, overrides_modes: bool = False) -> None:
    """``overrides_modes``: a root_can_administer root command (``CAP_DAC_OVERRIDE``) lists the
    slots and connects to a socket there (no Landlock check); files stay out of its reach."""
    tag = user or "leased"
    with anyio.fail_after(120):
        rc, said, held = await run_beside(
            backend, _HOLDER.replace("@T", tag), _TAMPER.replace("@T", tag), user=user
        )
    hits = [line for line in said.splitlines() if line.startswith("HIT")]
    if overrides_modes:
        hits = [h for h in hits if not h.startswith(("HIT listed", "HIT connect"))]
    assert rc == 0 and not hits and "victim-data" not in said, said
    assert held == "victim-data\nheld\nsock\n", held


async def _attack(backend: DockerBackend, user: str | None) -> None:
    tag = user or "leased"
    with anyio.fail_after(120):
        hostile = await start_sh(backend, _HOSTILE.replace("@T", tag), user=user)
        try:
            rc, out = await run_sh(backend, _VICTIM.replace("@T", tag), user=user)
            # A second victim: whatever slot it gets (the first victim's, wiped, or another) is empty.
            rc2, out2 = await run_sh(
                backend, 'ls -A "$TMPDIR" | sed "s/^/has: /"; echo "tmpdir=$TMPDIR"', user=user
            )
        finally:
            await hostile.kill()
            await hostile.wait()
            said = (await read_to_end(hostile.stdout)).decode(errors="replace")
    # Before: TMPDIR unset (bash used /tmp, full): "cannot create temp file for here-document".
    assert rc == 0 and "100001\n" in out and "done" in out, out
    assert "has: " not in out and "has: " not in out2, (out, out2)
    assert "tmpdir=/.shellrt-tmp/" in out and rc2 == 0, (out, out2)
    mine = said.split("mine=", 1)[1].split("\n", 1)[0]
    assert mine.startswith("/.shellrt-tmp/") and f"tmpdir={mine}\n" not in out, (said, out)
    # It planted, filled and read nothing in any other command's slot.
    assert "HIT" not in said and "victim-data" not in said, said


async def test_a_command_neither_fills_plants_nor_touches_another_commands_tmpdir(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(DEBIAN), policy(tmp_path)) as backend:
        for user in (None, "root"):
            await _attack(backend, user)
            await _tamper(backend, user)
        # A slot a command left files in is wiped and handed out again (never retired): more
        # commands than slots, one after another, each get one.
        for _ in range(10):
            rc, out = await run_sh(
                backend, 'mkdir -p "$TMPDIR/d" && echo x > "$TMPDIR/d/f" && echo "$TMPDIR"'
            )
            assert rc == 0 and out.startswith("/.shellrt-tmp/"), out
        # A killed command's slot, freed by its helper, was freed again by its runner a moment
        # later: by then the next command held a lock of the same name, and the runner wiped that
        # command's fresh TMPDIR while its helper set it up ("landlock TMPDIR", exit 126; 4 of 8
        # next starts before). A lock names its command now.
        for _ in range(8):
            tree = "for i in $(seq 50); do sleep 100 & done; echo up; wait"
            killed = await backend.exec(
                ExecRequest(argv=("bash", "-c", tree), cwd="/workspace", report_cwd=True)
            )
            assert await killed.stdout.receive() == b"up\n"
            await killed.kill()
            await killed.wait()
            next_one = ExecRequest(
                argv=("bash", "-c", 'echo x > "$TMPDIR/f" && echo "ok $TMPDIR" 2>&1'),
                cwd="/workspace",
                report_cwd=True,
                merge_stderr=True,
            )
            proc = await backend.exec(next_one)
            out = (await read_to_end(proc.stdout)).decode(errors="replace")
            assert (await proc.wait()).exit_code == 0 and out.startswith("ok /.shellrt-tmp/"), out


async def test_nor_under_root_can_administer(tmp_path: Path) -> None:
    """Root commands there override every file mode (``CAP_DAC_OVERRIDE``): Landlock still keeps
    them out of other commands' slots, and their streams and cwd file, in the detached I/O
    directory no path reaches, still reopen through ``/proc/self/fd``."""
    require_docker()
    async with DockerBackend(config(DEBIAN, root_can_administer=True), policy(tmp_path)) as backend:
        await _tamper(backend, "root", overrides_modes=True)
        rc, out = await run_sh(backend, 'echo out > /dev/stdout; echo "tmpdir=$TMPDIR"', user="root")
        assert rc == 0 and out.startswith("out\ntmpdir=/.shellrt-tmp/"), out
