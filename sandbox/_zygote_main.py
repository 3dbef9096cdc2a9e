"""The zygote: the one long-lived process inside a session's bubblewrap sandbox.

Runs *inside* the sandbox on the host's own interpreter (``python -I -S -B -c
<bootstrap> PROGRAM_FD SOCKET_FD UNSHARE SETPRIV TIMEOUT``, this module's code
object arriving marshalled through PROGRAM_FD), so it imports nothing of
``sandbox`` or ``shellrt`` -- and only C modules of the standard library
(``_socket``, ``_signal``, ``marshal``, ``select``): ``json``, ``socket`` and
``signal`` would pull in ``re`` and ``enum`` and triple the start-up time.

Why: a fresh ``bwrap`` per command rebuilds the mount, network, IPC and UTS
namespaces every time (~5 ms here, most of it ``--unshare-net`` and the mount
setup). The zygote builds them once; a command then costs one ``posix_spawn``
(no fork of this Python: copying its page tables costs more than a bwrap) of::

    unshare --pid --ipc --fork --mount-proc --kill-child -- \\
        setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all --no-new-privs -- \\
        timeout 0 argv

so every command still gets

* its own **pid namespace**. Its init is coreutils' ``timeout 0`` (no time
  limit): it forwards the signals init would otherwise swallow and exits with
  the command's status, so the shell is pid 2 and behaves as anywhere else
  (``kill $$`` works). When the command exits, the kernel kills everything left
  in the namespace -- setsid'd, nohup'd, double-forked alike -- and ``unshare``
  returns only once they are gone; the zygote and the session's other commands
  are invisible and unsignalable;
* its own **mount namespace** (private propagation) with a fresh /proc of that
  pid namespace, and its own **IPC namespace**;
* **no capabilities** and ``no_new_privs``: the zygote holds CAP_SYS_ADMIN and
  CAP_SETPCAP to build the namespaces; ``setpriv`` empties the bounding,
  inheritable and ambient sets before the command is exec'd, so it has none.

Protocol on the SOCK_SEQPACKET control socket (fd given as argv[1]):

Messages are marshalled dicts (both ends run the same interpreter):

* host -> zygote ``{"op": "spawn", "id", "argv", "cwd", "env"}`` with four fds
  attached (stdin, stdout, stderr, status); ``{"op": "kill", "id"}`` (SIGKILL to
  the command's ``unshare``, whose ``--kill-child`` takes the namespace down).
* zygote -> host ``b"ready"`` once, at start.

The zygote writes one line to a command's status fd once its namespace is
gone: ``s <wait status>`` of the ``unshare`` process (it exits with the
command's code, or dies of the command's signal). EOF without a line means
the zygote itself went away.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # C module without stubs
import _socket
import array
import errno
import marshal
import os
import select
import sys
from typing import Any

#: A command that could not start: the wait status of ``exit 1``.
_FAILED = 1 << 8
#: How long a killed command's namespace may take to be torn down before its status is sent.
_TEARDOWN_S = 2.0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _report(status: int, wait_status: int) -> None:
    """Send a command's final status line on its status fd, and close it."""
    try:
        _write_all(status, f"s {wait_status}\n".encode())
    except OSError:
        pass
    os.close(status)


def _refuse(stderr: int, status: int, message: str) -> None:
    """A command that could not start: say why on its stderr, report ``exit 1``."""
    try:
        _write_all(stderr, f"shellrt: {message}\n".encode("utf-8", "surrogateescape"))
    except OSError:
        pass
    _report(status, _FAILED)


class Zygote:
    """Spawns commands on request and reports each one's end on its status fd."""

    def __init__(self, unshare: str, setpriv: str, timeout: str) -> None:
        self.prefix = [
            unshare, "--pid", "--ipc", "--fork", "--mount-proc", "--kill-child", "--",
            setpriv, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--no-new-privs", "--",
            timeout, "0",
        ]  # fmt: skip
        self.running: dict[int, tuple[int, int]] = {}  # unshare pid -> (command id, status fd)
        self.by_id: dict[int, int] = {}  # command id -> unshare pid
        self.inits: dict[int, int] = {}  # killed unshare pid -> pidfd of its namespace's init

    def spawn(self, req: dict[str, Any], fds: list[int]) -> None:
        stdin, stdout, stderr, status = fds
        try:
            pid = self._start(req, stdin, stdout, stderr)
        except OSError as exc:
            _refuse(stderr, status, str(exc.strerror))
            return
        finally:
            for fd in (stdin, stdout, stderr):
                os.close(fd)
        self.running[pid] = (req["id"], status)
        self.by_id[req["id"]] = pid

    def _start(self, req: dict[str, Any], stdin: int, stdout: int, stderr: int) -> int:
        try:
            os.chdir(req["cwd"])
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot enter the working directory {req['cwd']}: {exc.strerror}"
            ) from None
        try:
            return os.posix_spawn(
                self.prefix[0],
                [*self.prefix, *req["argv"]],
                req["env"],
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, stdin, 0),
                    (os.POSIX_SPAWN_DUP2, stdout, 1),
                    (os.POSIX_SPAWN_DUP2, stderr, 2),
                ],
                setsid=True,
            )
        except OSError as exc:
            raise OSError(exc.errno, f"cannot start the command's namespace: {exc}") from None
        finally:
            os.chdir("/")

    def kill(self, command_id: int) -> None:
        """SIGKILL the command's ``unshare``; ``--kill-child`` takes its namespace down.

        (Killing the namespace's init directly would make ``unshare`` print a
        complaint into the command's output.) The init's pidfd is kept so that
        the status is reported only once the namespace is really gone.
        """
        pid = self.by_id.get(command_id)
        if pid is None:
            return
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
                children = f.read().split()
            if children and pid not in self.inits:
                self.inits[pid] = os.pidfd_open(int(children[0]))
        except (OSError, ValueError):
            pass
        try:
            os.kill(pid, _signal.SIGKILL)
        except ProcessLookupError:
            pass

    def reap(self) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            entry = self.running.pop(pid, None)
            if entry is None:
                continue
            command_id, status = entry
            self.by_id.pop(command_id, None)
            init = self.inits.pop(pid, None)
            if init is not None:  # killed: wait (bounded) until the init, the namespace's last, is gone
                select.select([init], [], [], _TEARDOWN_S)
                os.close(init)
            _report(status, wait_status)


def _receive(sock: _socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    # CLOEXEC: the command must not inherit the status fd (it could forge its own exit status).
    msg, ancdata, _flags, _addr = sock.recvmsg(
        1 << 20, _socket.CMSG_SPACE(16 * fds.itemsize), _socket.MSG_CMSG_CLOEXEC
    )
    for level, kind, data in ancdata:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return msg, list(fds)


def main() -> None:
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # inherited from bwrap; no command may ever hold it
    sock = _socket.socket(fileno=fd)
    zygote = Zygote(sys.argv[2], sys.argv[3], sys.argv[4])
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    _signal.set_wakeup_fd(wake_w)
    _signal.signal(_signal.SIGCHLD, lambda _sig, _frame: None)
    os.chdir("/")
    sock.send(b"ready")
    while True:
        try:
            readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            zygote.reap()
        if sock.fileno() not in readable:
            continue
        try:
            msg, fds = _receive(sock)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                continue
            return
        if not msg:
            return  # the host closed the socket: the session is over
        req = marshal.loads(msg)
        if req["op"] == "spawn" and len(fds) == 4:
            zygote.spawn(req, fds)
        else:
            for fd in fds:
                os.close(fd)
            if req["op"] == "kill":
                zygote.kill(req["id"])


if __name__ == "__main__":
    main()
