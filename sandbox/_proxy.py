"""The filtering proxy of network mode ``proxied``: the sandbox's only way out.

Runs on the host, in a thread of its own (an asyncio loop: the backend has no
task group that lives as long as the session), listening on a unix socket in a
0700 directory shellrt owns. The sandbox reaches it only through that socket
(bound into it; a bridge inside listens on its loopback, see
``sandbox._zygote_main``). One listener speaks three protocols, told apart by
the first byte: SOCKS5 (``0x05``), HTTP ``CONNECT host:port`` (TLS is tunnelled,
never intercepted: the decision is on the CONNECT name) and plain HTTP
forwarding (``GET http://host/...``).

Decisions are on names, never on addresses the sandbox supplies:

* a name must match ``allowed_domains`` and no ``denied_domains`` (deny wins);
* an IP literal is refused unless listed as such;
* the proxy resolves the name itself and connects to the address it vetted
  (no second lookup to rebind); a name resolving to loopback, link-local,
  private or otherwise non-global ranges is refused unless the operator listed
  that exact name (``localhost``: the host's loopback, an explicit choice).

A refusal answers 403 (SOCKS5: reply 0x02) with a body naming the host and
how to allow it, is appended to the session log (JSON lines: time, sandbox,
host, port, reason, ``"allowed": false``) and kept in `FilteringProxy.refusals`.
Each connection made is logged too (time, sandbox, host, port, the address
reached, ``"allowed": true``): the operator sees what a run reached, not only
what it was refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sandbox.policy import domain_matches, normalize_domain

__all__ = ["BRIDGE_PORT", "FilteringProxy", "Refusal", "decide", "proxy_env"]

#: The port commands reach the proxy on, on their own loopback (bwrap: the bridge; docker: a
#: listener the host made in the container's network namespace).
BRIDGE_PORT = 3128


def proxy_env(port: int = BRIDGE_PORT) -> dict[str, str]:
    """What commands of a ``proxied`` sandbox get: every common proxy variable, both cases."""
    http = f"http://127.0.0.1:{port}"
    values = {
        "HTTP_PROXY": http,
        "HTTPS_PROXY": http,
        "ALL_PROXY": f"socks5h://127.0.0.1:{port}",
        "NO_PROXY": "localhost,127.0.0.1",
    }
    return {**values, **{k.lower(): v for k, v in values.items()}}


_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT = 30.0
#: Connections one proxy serves at once; more wait (a sandbox cannot exhaust the host's fds).
_MAX_CONNECTIONS = 512


@dataclass(frozen=True)
class Refusal:
    """One refused connection: when, which sandbox, which name and port, and why."""

    time: float
    sandbox: str
    host: str
    port: int
    reason: str

    def message(self) -> str:
        """The explanation a refused client (and the operator) reads."""
        return (
            f"shellrt: blocked {self.host}:{self.port}: {self.reason}. "
            f"To allow it, run with --allow-domain {self.host} "
            '(or add it to "sandbox": {"network": {"allowedDomains": [...]}} in your user settings).'
        )


def _printable(host: str) -> str:
    """The name comes from the sandbox and ends up on the operator's terminal: printable only."""
    return host[:255] if host.isprintable() else ascii(host[:255])


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def decide(host: str, allowed: tuple[str, ...], denied: tuple[str, ...]) -> str | None:
    """None when ``host`` may be reached by name, else why not (before resolution)."""
    try:
        name = normalize_domain(host)
    except ValueError:
        return "not a valid host name"
    if any(domain_matches(name, p) for p in denied):
        return "denied by the session's network deny-list"
    if _literal(name):
        return None if name in allowed else "IP addresses are refused unless listed"
    if not any(domain_matches(name, p) for p in allowed):
        return "not on the session's network allow-list"
    return None


def _global(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class FilteringProxy:
    """HTTP (CONNECT and forward) and SOCKS5 proxy on a unix socket, filtering by name."""

    def __init__(
        self,
        socket_path: Path,
        *,
        allowed: tuple[str, ...],
        denied: tuple[str, ...] = (),
        log_path: Path | None = None,
        sandbox: str = "",
        on_refusal: Callable[[Refusal], None] | None = None,
    ) -> None:
        self.socket_path = socket_path
        self.allowed = tuple(normalize_domain(d) for d in allowed)
        self.denied = tuple(normalize_domain(d) for d in denied)
        self.log_path = log_path
        self.sandbox = sandbox
        self.refusals: list[Refusal] = []
        self._on_refusal = on_refusal
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._slots: asyncio.Semaphore | None = None

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        """Listen (returns once the socket accepts connections); raises OSError when it cannot."""
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._slots = asyncio.Semaphore(_MAX_CONNECTIONS)
            try:
                self._server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path))
                os.chmod(self.socket_path, 0o600)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            async with self._server:
                await self._stop.wait()
            # End every connection still open (tunnels included) before the loop closes.
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        self._thread = threading.Thread(
            target=asyncio.run, args=(serve(),), name="shellrt-proxy", daemon=True
        )
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            raise OSError(f"cannot start the network proxy on {self.socket_path}: {failure[0]}")

    def add_listener(self, sock: socket.socket) -> asyncio.AbstractServer:
        """Also serve connections accepted on ``sock`` (a listening TCP socket, e.g. in a container's netns)."""
        loop = self._loop
        if loop is None or self._thread is None:
            raise OSError("the network proxy is not running")
        return asyncio.run_coroutine_threadsafe(asyncio.start_server(self._handle, sock=sock), loop).result(
            10
        )

    def remove_listener(self, server: asyncio.AbstractServer) -> None:
        """Stop serving ``server`` (from `add_listener`) and close its socket."""
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def stop() -> None:
            server.close()
            await server.wait_closed()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), loop).result(10)

    def close(self) -> None:
        """Stop listening and end every connection; idempotent."""
        loop, stop, thread = self._loop, self._stop, self._thread
        self._thread = None
        if loop is not None and stop is not None and thread is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
            thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    # -- decisions ---------------------------------------------------------------------
    def _log(self, record: dict[str, object]) -> None:
        """Append one JSON line to the session log (callers hold ``_lock``)."""
        if self.log_path is not None:
            with contextlib.suppress(OSError), open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")

    def _refuse(self, host: str, port: int, reason: str) -> Refusal:
        refusal = Refusal(time.time(), self.sandbox, _printable(host), port, reason)
        with self._lock:
            self.refusals.append(refusal)
            self._log({**asdict(refusal), "allowed": False})
        if self._on_refusal is not None:
            self._on_refusal(refusal)
        return refusal

    def _connected(self, host: str, port: int, address: str) -> None:
        with self._lock:
            self._log(
                {"time": time.time(), "sandbox": self.sandbox, "host": _printable(host), "port": port,
                 "address": address, "allowed": True}
            )  # fmt: skip

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | Refusal:
        """A connection to an allowed ``host``'s vetted address, or the `Refusal`."""
        if not 0 < port < 65536:
            return self._refuse(host, port, "invalid port")
        reason = decide(host, self.allowed, self.denied)
        if reason is not None:
            return self._refuse(host, port, reason)
        name = normalize_domain(host)
        explicit = name in self.allowed  # listed by name, not through a wildcard
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return self._refuse(host, port, f"cannot resolve it ({exc})")
        addresses = [str(info[4][0]) for info in infos]
        if not explicit and not all(_global(a) for a in addresses):
            return self._refuse(
                host, port, "it resolves to a loopback, link-local or private address; only a name listed "
                "exactly (not through a wildcard) may reach those"
            )  # fmt: skip
        last: OSError | None = None
        for info in infos:
            family, _type, proto, _canon, sockaddr = info
            try:
                opened = await asyncio.wait_for(
                    asyncio.open_connection(str(sockaddr[0]), int(sockaddr[1]), family=family, proto=proto),
                    _CONNECT_TIMEOUT,
                )
            except OSError as exc:  # TimeoutError included
                last = exc
                continue
            self._connected(name, port, str(sockaddr[0]))
            return opened
        raise last or OSError(f"no address for {host}")

    # -- protocols ---------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._slots is not None
        try:
            async with self._slots:
                await self._serve(reader, writer)
        except asyncio.CancelledError:  # the proxy is closing (asyncio.run cancels what is left)
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await reader.readexactly(1)
            if first == b"\x05":
                await self._socks5(reader, writer)
            else:
                await self._http(first, reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass

    async def _http(self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = first + await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            return await _reply(writer, 431, "request head too large")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return await _reply(writer, 400, "not an HTTP proxy request")
        method, target, version = parts
        if method == "CONNECT":
            host, port = _split_host_port(target, 443)
            rest = b""
        else:
            if not target.lower().startswith("http://"):
                return await _reply(writer, 400, "use an absolute http:// URL (https: use CONNECT)")
            authority, _, path = target[7:].partition("/")
            host, port = _split_host_port(authority.rpartition("@")[2], 80)
            kept = [
                line for line in lines[1:] if line and not line.lower().startswith(("proxy-", "connection:"))
            ]
            request = [f"{method} /{path} {version}", *kept, "Connection: close", "", ""]
            rest = "\r\n".join(request).encode("latin-1")
        try:
            opened = await self._open(host, port)
        except OSError as exc:
            return await _reply(writer, 502, f"shellrt: cannot connect to {host}:{port}: {exc}")
        if isinstance(opened, Refusal):
            return await _reply(writer, 403, opened.message())
        up_reader, up_writer = opened
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(rest)
        await _pipe_both(reader, writer, up_reader, up_writer)

    async def _socks5(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count = (await reader.readexactly(1))[0]
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(b"\x05\x00")
        version, command, _reserved, kind = await reader.readexactly(4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode("ascii", "replace")
        else:
            writer.write(_socks_reply(8))
            return
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:  # CONNECT only: no BIND, no UDP ASSOCIATE
            writer.write(_socks_reply(7))
            return
        try:
            opened = await self._open(host, port)
        except OSError:
            writer.write(_socks_reply(5))
            return
        if isinstance(opened, Refusal):
            writer.write(_socks_reply(2))
            return
        writer.write(_socks_reply(0))
        await _pipe_both(reader, writer, *opened)


def _socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def _split_host_port(authority: str, default: int) -> tuple[str, int]:
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        return host, int(tail[1:]) if tail.startswith(":") else default
    host, sep, port = authority.rpartition(":")
    if not sep:
        return authority, default
    return host, int(port)


async def _reply(writer: asyncio.StreamWriter, status: int, body: str) -> None:
    reasons = {
        400: "Bad Request",
        403: "Forbidden",
        431: "Request Header Fields Too Large",
        502: "Bad Gateway",
    }
    data = (body + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    try:
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
    finally:
        up_writer.close()
