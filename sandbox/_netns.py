"""A listening socket made in another process's network namespace (docker, network ``proxied``).

Why: a container with ``network: none`` has only its own loopback, and an image
need not contain any tool to bridge out of it. A socket belongs to the network
namespace it was created in, whatever the process does next: so shellrt (root)
creates the proxy's listener in the container's namespace from a short-lived
thread of its own (``setns`` changes only the calling thread's namespace; the
thread ends right after), and serves it from the host proxy. Nothing runs in
the container, and the container gets no route: only that one listener.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading

__all__ = ["listen_in_netns"]

_CLONE_NEWNET = 0x40000000


def listen_in_netns(
    pid: int, port: int, *, container_id: str | None = None, backlog: int = 128
) -> socket.socket:
    """A TCP socket listening on 127.0.0.1:``port`` in the network namespace of host pid ``pid``.

    ``container_id``: checked in the process's cgroup once its namespace is open, so a
    pid reused by another process (the container died meanwhile) is refused.

    Raises OSError (EPERM without CAP_SYS_ADMIN over that namespace, ESRCH/ENOENT when
    ``pid`` is gone, EADDRINUSE when the port is taken there).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    out: list[socket.socket] = []
    errors: list[OSError] = []

    def work() -> None:
        target = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if container_id is not None:
                with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
                    if container_id not in fh.read():
                        raise OSError(f"pid {pid} is no longer in container {container_id[:12]}")
            if libc.setns(target, _CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns into the network namespace of pid {pid}: {os.strerror(err)}")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(backlog)
            except BaseException:
                sock.close()
                raise
            sock.setblocking(False)
            out.append(sock)
        except OSError as exc:
            errors.append(exc)
        finally:
            os.close(target)

    # A thread of its own: it ends in the container's namespace, never a thread of ours.
    thread = threading.Thread(target=work, name="shellrt-netns")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]
