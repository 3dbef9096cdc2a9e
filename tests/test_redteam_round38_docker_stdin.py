"""Red team round 38, docker: closing a command's FIFO stream under a waiting task left that task
waiting for ever.

`FifoSendStream.close` (and the receive side's) closed the descriptor without `anyio.notify_closing`.
`DockerProcess` closes a command's stdin itself when the command's end is told (`_resolve`), from
another task than the one feeding it: the supervisor's `_feed_stdin` (Inspect's ``exec(input=...)``,
any caller of ``Supervisor.run(stdin=...)``) waiting for room in the FIFO. A hostile command that
never reads its input and hands its stdin's read end to a background sibling (``SCM_RIGHTS`` over a
path socket in the shared ``/tmp``) ends at once: its exit is told, the write end is closed under
the feeder, no writable event or error ever comes for a closed descriptor, and the feeder (and the
caller's task group around it, so the call itself) waited for ever; its stale registration stayed
in the event loop for a later descriptor of the same number. The stream now wakes every waiter
before it closes (`ClosedResourceError`), on both sides.

A real container (FAIL, not skip, under CI=true); the hostile repo ships a static helper.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from tests._docker_support import BUSYBOX, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_FDPASS = r"""
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
    strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    char byte = 'x'; struct iovec io = {&byte, 1};
    union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } u; memset(&u, 0, sizeof u);
    struct msghdr m; memset(&m, 0, sizeof m);
    m.msg_iov = &io; m.msg_iovlen = 1; m.msg_control = u.b; m.msg_controllen = sizeof u.b;
    if (argv[1][0] == 'h') {
        if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1)) return 3;
        int c = accept(s, 0, 0);
        if (c < 0 || recvmsg(c, &m, 0) != 1) return 4;
        for (;;) pause();
    }
    if (connect(s, (struct sockaddr *)&a, sizeof a)) return 5;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET; h->cmsg_type = SCM_RIGHTS; h->cmsg_len = CMSG_LEN(sizeof(int));
    int fd = 0; memcpy(CMSG_DATA(h), &fd, sizeof fd);
    return sendmsg(s, &m, 0) == 1 ? 0 : 6;
}
"""

_ENV = {"PATH": "/bin"}


def _workspace(tmp_path: Path) -> Path:
    """A hostile repo: a static binary that holds, or hands on, a descriptor."""
    ws = tmp_path / "ws"
    ws.mkdir()
    src = tmp_path / "fdpass.c"
    src.write_text(_FDPASS)
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed (the docker backend builds priv.c with it too)"
    subprocess.run([gcc, "-static", "-O2", "-o", str(ws / "fdpass"), str(src)], check=True, timeout=120)
    return ws


async def test_a_command_that_ends_holding_back_its_input_does_not_hang_the_feeder(tmp_path: Path) -> None:
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(_workspace(tmp_path))) as backend:
        holder = await backend.exec(
            ExecRequest(argv=("./fdpass", "hold", "/tmp/s"), cwd="/workspace", env=_ENV)
        )
        for _ in range(100):
            if (await backend.run_capture(["sh", "-c", "test -S /tmp/s && echo y || true"])).strip() == "y":
                break
            await anyio.sleep(0.1)
        proc = await backend.exec(
            ExecRequest(argv=("./fdpass", "send", "/tmp/s"), cwd="/workspace", env=_ENV, stdin=True)
        )
        assert proc.stdin is not None
        fed: list[str] = []

        async def feed() -> None:
            assert proc.stdin is not None
            try:
                await proc.stdin.send(b"x" * (1 << 20))  # 16 pipe buffers: it waits for room
                fed.append("sent")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                fed.append(type(exc).__name__)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            status = await proc.wait()
            assert status.exit_code == 0  # its stdin went to the holder, then it ended
            with anyio.move_on_after(5):
                while not fed:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        assert fed, "the task feeding stdin still waited 5 s after the command's end (it waits for ever)"
        assert fed == ["ClosedResourceError"]
        for _ in range(3):  # later commands' streams are unaffected
            with anyio.fail_after(20):
                assert await backend.run_capture(["echo", "x"]) == "x\n"
        await holder.kill()


async def test_closing_a_waited_output_stream_wakes_its_reader(tmp_path: Path) -> None:
    """The receive side of the same class: a reader waiting on a silent command's output, the
    stream closed by another task (a caller's cleanup), gets `ClosedResourceError` at once."""
    require_docker()
    async with DockerBackend(config(BUSYBOX), policy(tmp_path)) as backend:
        proc = await backend.exec(ExecRequest(argv=("sleep", "60"), cwd="/workspace", env=_ENV))
        woke: list[str] = []

        async def read() -> None:
            try:
                await proc.stdout.receive()
            except anyio.ClosedResourceError:
                woke.append("closed")

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.sleep(0.5)
            await proc.stdout.aclose()
            with anyio.move_on_after(5):
                while not woke:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        await proc.kill()
        assert woke == ["closed"], "a reader waiting on a closed stream was never woken"
