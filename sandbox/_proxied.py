"""Network ``proxied`` for a container backend: the host proxy plus a listener in the container's netns.

The container keeps ``network: none`` (no route out, not even to the host's
``docker0`` or a gateway: an ``--internal`` network reached host listeners).
`sandbox._netns.listen_in_netns` makes 127.0.0.1:`BRIDGE_PORT` inside it, served
by the session's `FilteringProxy` on the host: no helper in the image. Needs
root (``setns`` into the container's network namespace).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from sandbox._netns import listen_in_netns
from sandbox._proxy import BRIDGE_PORT, FilteringProxy, Refusal
from sandbox.policy import SandboxPolicy

__all__ = ["ContainerProxy"]


class ContainerProxy:
    """One session's proxy; `listen_in` each (re)started container. Blocking calls: run in a thread."""

    def __init__(self, policy: SandboxPolicy, sandbox: str) -> None:
        self._policy = policy
        self._sandbox = sandbox
        self._proxy: FilteringProxy | None = None
        self._dir: Path | None = None
        self._listener: asyncio.AbstractServer | None = None
        self._refusals: list[Refusal] = []
        self._pid: int | None = None
        self._cid: str | None = None

    @property
    def refusals(self) -> list[Refusal]:
        return list(self._proxy.refusals) if self._proxy is not None else list(self._refusals)

    @property
    def log_path(self) -> Path | None:
        return self._dir / "network.log" if self._dir is not None else None

    def listen_in(self, pid: int, container_id: str | None = None) -> None:
        """Serve 127.0.0.1:`BRIDGE_PORT` in host pid ``pid``'s network namespace (the previous container's stops)."""
        if self._proxy is None:
            self._dir = Path(tempfile.mkdtemp(prefix="shellrt-proxy-", dir="/tmp"))
            proxy = FilteringProxy(
                self._dir / "proxy.sock",
                allowed=self._policy.allowed_domains,
                denied=self._policy.denied_domains,
                log_path=self._dir / "network.log",
                sandbox=self._sandbox,
            )
            proxy.start()
            self._proxy = proxy
        if self._listener is not None:
            self._proxy.remove_listener(self._listener)
            self._listener = None
        sock = listen_in_netns(pid, BRIDGE_PORT, container_id=container_id)
        self._pid, self._cid = pid, container_id
        try:
            self._listener = self._proxy.add_listener(sock)
        except BaseException:
            sock.close()
            raise

    def pause(self) -> None:
        """Stop listening in the container (a reset checks it has no listening socket left)."""
        if self._proxy is not None and self._listener is not None:
            self._proxy.remove_listener(self._listener)
        self._listener = None

    def resume(self) -> None:
        """Listen again in the container of the last `listen_in` (after a successful reset)."""
        if self._pid is not None and self._listener is None:
            self.listen_in(self._pid, self._cid)

    def close(self) -> None:
        """Stop serving; keep the log (and `refusals`) when anything was refused. Idempotent."""
        proxy, self._proxy, self._listener = self._proxy, None, None
        if proxy is None:
            return
        proxy.close()
        self._refusals = list(proxy.refusals)
        if not self._refusals and self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
