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
  a pattern (``*.x``) sent as a host is no name and is refused; a name whose DNS answers an
  address or range on ``denied_domains``, or an address a denied exact name resolves to now
  (`sandbox._denynames`, looked up off the loop, bounded), is refused too, in any spelling;
* an IP literal is refused unless listed as such;
* the proxy resolves the name itself and connects to the address it vetted
  (no second lookup to rebind); a name resolving to loopback, link-local,
  private or otherwise non-global ranges (IPv6 forms that embed such an IPv4
  address included: mapped, compatible, 6to4, Teredo, NAT64) is refused unless
  the operator listed that exact name (``localhost``: the host's loopback, an
  explicit choice);
* an address of this machine (loopback, unspecified, link-local and cloud metadata, any
  address on one of its interfaces, public ones included: `sandbox._hostaddr`) is reached
  only when the operator listed that address, or for loopback the name ``localhost``: a
  listed name whose DNS points at the host never opens the host's own services;
* a public address is reached on the web ports only (`WEB_PORTS`): allowing
  ``pypi.org`` opens its HTTP(S), not its SSH or SMTP. A host service the
  operator listed by name (non-global address) keeps every port.

Plain HTTP forwards exactly one request per connection, re-framed: the Host
header is the vetted authority (the client's is dropped: no domain fronting, and
so are the headers an application routes by: ``X-Forwarded-Host``, ``Forwarded``,
``X-Original-URL``, ``X-Rewrite-URL``, ``X-Forwarded-For``, `_routing_header`), the body is copied by its single ``Content-Length`` and no further, and
ambiguous framing (``Transfer-Encoding``, repeated or bad lengths, bare CR/LF,
folded headers) is refused, so nothing can be smuggled behind the vetted
request. A head must arrive within ``head_timeout`` (slowloris), and over
``max_connections`` a new connection is answered 503 at once rather than queued
(each queued one would hold a host fd); and every proxy of the process holds at most its
share of the host's fds (`sandbox._fdbudget`: one session cannot starve another, round 20; a
share a later session needs is taken back from the session furthest over its own, round 42).

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
import contextvars
import functools
import ipaddress
import itertools
import json
import os
import re
import shlex
import socket
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from sandbox._addrdeny import address_denied
from sandbox._addrforms import carried_ipv4, parse, unmapped
from sandbox._bwrap_sched import calm_this_thread
from sandbox._denynames import DeniedNames
from sandbox._fdbudget import BUDGET
from sandbox._hostaddr import address_listed, is_host_address, is_loopback_name
from sandbox._lookup import lookup
from sandbox._namekinds import FirstKinds
from sandbox._proxy_preamble import PreambleScan
from sandbox._tunnel import (
    MAX_HELLO_BYTES,
    HeadScan,
    HelloReader,
    looks_like_tls,
    server_hello_retry,
)
from sandbox._wildnames import WildcardNames
from sandbox.policy import domain_matches, normalize_deny_entry, normalize_domain

__all__ = [
    "BRIDGE_PORT",
    "WEB_PORTS",
    "FilteringProxy",
    "Refusal",
    "decide",
    "is_global_address",
    "proxy_env",
]

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


#: The ports a public (global) address is reached on.
WEB_PORTS = frozenset({80, 443})

_HEAD_LIMIT = 64 * 1024
_CHUNK = 64 * 1024
_CONNECT_TIMEOUT = 30.0
#: Seconds a client has to send its whole request head (or SOCKS5 handshake).
_HEAD_TIMEOUT = 30.0
#: Connections one proxy serves at once; more are turned away (a sandbox cannot exhaust the host's fds).
_MAX_CONNECTIONS = 512
#: Refusals one proxy keeps in memory (`FilteringProxy.refusals`); later ones are counted only.
_MAX_REFUSALS = 1000
#: Bytes one session log may take; then one last line says it is full.
_MAX_LOG_BYTES = 8 * 1024 * 1024
#: Headers the proxy never forwards: hop-by-hop ones, and Host (it writes the vetted one).
_DROPPED = ("host", "connection", "keep-alive", "te", "trailer", "upgrade")
#: Headers a reverse proxy or an application behind it takes as the request's real host, URL,
#: scheme or client (red team, round 20): through the vetted request they would choose another
#: site or path than the one listed (``X-Forwarded-Host``, ``Forwarded: host=``: fronting by
#: header; ``X-Original-URL``/``X-Rewrite-URL``: a path past the front's rules) or pass for a
#: trusted client (``X-Forwarded-For: 127.0.0.1``). A sandbox is no proxy in front of anyone: dropped.
_ROUTING = frozenset(
    {
        "forwarded",
        "x-original-url",
        "x-original-uri",
        "x-original-host",
        "x-rewrite-url",
        "x-host",
        "x-http-host-override",
        "x-real-ip",
        "x-client-ip",
        "true-client-ip",
        "client-ip",
        "x-cluster-client-ip",
        "x-proxyuser-ip",
        "cf-connecting-ip",
        "fastly-client-ip",
    }
)
_ROUTING_PREFIXES = ("x-forwarded-", "x-envoy-", "x-original-", "x-rewrite-")
#: Last words of a header name that says who the client is (``Fly-Client-IP``, ``X-Azure-ClientIP``,
#: ``X-Remote-Addr``, ``CloudFront-Viewer-Address``): each front names its own (round 55).
_ADDRESS_WORDS = frozenset({"ip", "clientip", "socketip", "addr", "address"})


def _routing_header(key: str) -> bool:
    """Whether the (lower-case) header ``key`` is one an application routes or trusts by; ``_`` as
    ``-``: CGI and WSGI name ``X_Forwarded_Host`` and ``X-Forwarded-Host`` alike. Judged by shape
    past the named ones (round 55: a list of names missed ``X-Original-Forwarded-For``,
    ``X-Originating-IP`` ...): any name holding ``forwarded``, and any ending in an address word."""
    folded = key.replace("_", "-")
    return (
        folded in _ROUTING
        or folded.startswith(_ROUTING_PREFIXES)
        or "forwarded" in folded
        or folded.rpartition("-")[2] in _ADDRESS_WORDS
    )


@dataclass(frozen=True)
class Refusal:
    """One refused connection: when, which sandbox, which name and port, and why."""

    time: float
    sandbox: str
    host: str
    port: int
    reason: str
    #: What to list to allow it, when not the host itself (an address the name resolved to).
    allow: str = ""
    #: What lifts it: listing the host (``list``), nothing while the deny-list names it (``denied``),
    #: or no listing at all (``none``: the request itself was refused). Round 40: every refusal
    #: said "run with --allow-domain HOST", a deny-listed loopback's too (a deny beats any allow).
    remedy: Literal["list", "denied", "none"] = "list"

    def fix(self) -> str:
        """What the operator can do, in one clause (the CLI's and the audit's line end with it)."""
        if self.remedy == "denied":
            return (
                "the session's network deny-list names it and a deny beats any allow, so --allow-domain "
                "does not reach it (remove the deny where it is set, if it should be reached)"
            )
        if self.remedy == "none":
            return "no --allow-domain changes this (the request itself was refused)"
        return f"allow it with --allow-domain {self.allow or self.host}"

    def message(self) -> str:
        """The explanation a refused client (and the operator) reads."""
        if self.remedy != "list":
            return f"shellrt: blocked {self.host}:{self.port}: {self.reason}. {self.fix()[0].upper()}{self.fix()[1:]}."
        return (
            f"shellrt: blocked {self.host}:{self.port}: {self.reason}. "
            f"To allow it, run with --allow-domain {self.allow or self.host} "
            '(or add it to "sandbox": {"network": {"allowedDomains": [...]}} in your user settings).'
        )


#: What a host name or address may show as is (shell-inert): anything else is shown quoted.
_SHELL_INERT = re.compile(r"[A-Za-z0-9._:%*\[\]-]+")


def _printable(host: str) -> str:
    """How a host the sandbox sent is shown: it ends up on the operator's terminal and in the fix
    ``--allow-domain HOST`` they may paste into a shell, so printable only and, unless it is
    shell-inert, one single-quoted word."""
    shown = host[:255] if host.isprintable() else ascii(host[:255])
    return shown if _SHELL_INERT.fullmatch(shown) else shlex.quote(shown)


def _is_loopback(address: str) -> bool:
    return unmapped(parse(address)).is_loopback


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _address_denied(address: str, denied: tuple[str, ...]) -> bool:
    """Whether ``address`` (a DNS answer) is, in any spelling, an address or in a network on the
    deny-list: `decide` judges the name sent, this the address reached (red team, round 27: a
    denied address was reached through any allowed name whose DNS pointed at it; round 28: ranges)."""
    return address_denied(address, denied) is not None


_DENIED = "denied by the session's network deny-list"
_UNLISTED = ("IP addresses are refused unless listed", "not on the session's network allow-list")


def _remedy_of(reason: str) -> Literal["list", "denied", "none"]:
    """What lifts a refusal `decide` gave: listing the host, nothing (denied), or no listing."""
    if reason == _DENIED:
        return "denied"
    return "list" if reason in _UNLISTED else "none"


def decide(host: str, allowed: tuple[str, ...], denied: tuple[str, ...]) -> str | None:
    """None when ``host`` may be reached by name, else why not (before resolution)."""
    try:
        name = normalize_domain(host)
    except ValueError:
        return "not a valid host name"
    if "*" in name:
        return "not a valid host name (a pattern, not a name)"
    if any(domain_matches(name, p) for p in denied):
        return _DENIED
    if _literal(name):
        return None if name in allowed else _UNLISTED[0]
    if not any(domain_matches(name, p) for p in allowed):
        return _UNLISTED[1]
    return None


#: IPv6 ranges not globally reachable that Python 3.11's ``is_global`` calls global: deprecated site-local
#: addresses, and IANA special-purpose entries newer than its table -- documentation (RFC 9637), SRv6
#: segment identifiers, routed inside an operator's network (RFC 9602), the dummy prefix (RFC 9780).
_NOT_GLOBAL_V6 = tuple(
    ipaddress.ip_network(n) for n in ("fec0::/10", "3fff::/20", "5f00::/16", "100:0:0:1::/64")
)
#: IPv4 likewise: the deprecated 6to4 relay anycast (RFC 7526), relays no one here means to reach.
_NOT_GLOBAL_V4 = (ipaddress.ip_network("192.88.99.0/24"),)


@dataclass
class _Connection:
    """One client connection: its transports (client, upstream: what `FilteringProxy._shed`
    aborts) and, once connected, where to."""

    transports: set[asyncio.WriteTransport]
    host: str = ""
    port: int = 0


#: The connection the running task serves.
_CONNECTION: contextvars.ContextVar[_Connection] = contextvars.ContextVar("_CONNECTION")
#: Numbers the proxies of this process (their keys in `sandbox._lookup`'s count).
_PROXY_NUMBERS = itertools.count(1)


def is_global_address(address: str) -> bool:
    """Whether ``address`` is a public unicast address, whatever IPv4 address it may wrap.

    The one judgement of addresses for every host-side fetch (this proxy, WebFetch):
    ``ipaddress.is_global`` alone calls NAT64, 6to4 and IPv4-compatible spellings of
    127.0.0.1 or 169.254.169.254 public.
    """
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in net for net in _NOT_GLOBAL_V6):
            return False
        if not all(is_global_address(str(v4)) for v4 in carried_ipv4(ip, translators=True)):
            return False
    elif any(ip in net for net in _NOT_GLOBAL_V4):
        return False
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
        max_connections: int = _MAX_CONNECTIONS,
        head_timeout: float = _HEAD_TIMEOUT,
        max_refusals: int = _MAX_REFUSALS,
        max_log_bytes: int = _MAX_LOG_BYTES,
    ) -> None:
        self.socket_path = socket_path
        self.allowed = tuple(normalize_domain(d) for d in allowed)
        self.denied = tuple(normalize_deny_entry(d) for d in denied)
        #: What the exact names of ``denied`` resolve to: their addresses are refused too (round 29).
        self._denied_names = DeniedNames(self.denied)
        #: Names resolved only through a wildcard: bounded, as each goes to the zone's name server (round 37).
        self._wild_names = WildcardNames(self.allowed)
        #: Whether each listed name first answered public addresses: then a private answer is rebinding.
        self._first_kinds = FirstKinds()
        self.log_path = log_path
        self.sandbox = sandbox
        self.refusals: list[Refusal] = []
        #: Refusals past ``max_refusals`` (still refused, not kept: a loop of refused connections
        #: must not grow the host's memory or disk without end).
        self.refusals_dropped = 0
        self._max_refusals = max_refusals
        self._log_room = max_log_bytes
        self._on_refusal = on_refusal
        self._max_connections = max_connections
        self._head_timeout = head_timeout
        self._active = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        #: Servers of `add_listener` still open: closed before the loop ends, so none accepts a
        #: connection whose task the closing loop would destroy unfinished.
        self._listeners: set[asyncio.AbstractServer] = set()
        #: Every open connection's transport (clients and upstreams), aborted when the proxy closes
        #: (weak: a closed one goes away by itself).
        self._transports: weakref.WeakSet[asyncio.WriteTransport] = weakref.WeakSet()
        #: Every connection's task, held: asyncio's own references are weak.
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        #: This proxy's key in `sandbox._lookup`'s count of running lookups (its bound is per key).
        self._lookups = f"proxy-{next(_PROXY_NUMBERS)}"

    # -- life cycle --------------------------------------------------------------------
    def start(self) -> None:
        """Listen (returns once the socket accepts connections); raises OSError when it cannot."""
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            try:  # a command's traffic drives this thread: never at its caller's raised priority
                calm_this_thread()
            except OSError as exc:
                failure.append(exc)
                ready.set()
                return
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                self._server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path))
                os.chmod(self.socket_path, 0o600)
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            BUDGET.register(id(self))
            ready.set()
            async with self._server:
                await self._stop.wait()
            # End every connection still open (tunnels included) before the loop closes: no new
            # ones, then abort (not close: a close waits for a peer that may never read).
            for listener in list(self._listeners):
                listener.close()
            self._listeners.clear()
            for transport in list(self._transports):
                transport.abort()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            if others:
                await asyncio.wait(others, timeout=5)
            BUDGET.unregister(id(self))

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

        async def start() -> asyncio.AbstractServer:
            server = await asyncio.start_server(self._handle, sock=sock)
            self._listeners.add(server)
            return server

        return asyncio.run_coroutine_threadsafe(start(), loop).result(10)

    def remove_listener(self, server: asyncio.AbstractServer) -> None:
        """Stop serving ``server`` (from `add_listener`) and close its socket."""
        loop = self._loop
        if loop is None or self._thread is None:
            return

        async def stop() -> None:
            self._listeners.discard(server)
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
        self._denied_names.close()
        BUDGET.unregister(id(self))  # idempotent: the loop's end did it unless it never ran
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    # -- decisions ---------------------------------------------------------------------
    def _log(self, record: dict[str, object]) -> None:
        """Append one JSON line to the session log while it has room (callers hold ``_lock``)."""
        if self.log_path is None or self._log_room <= 0:
            return
        line = json.dumps(record) + "\n"
        if len(line) > self._log_room - 200:  # keep room for the last line
            line = json.dumps({"time": time.time(), "sandbox": self.sandbox, "full": True,
                               "note": "log full: later connections and refusals are not logged"}) + "\n"  # fmt: skip
            self._log_room = 0
        else:
            self._log_room -= len(line)
        with contextlib.suppress(OSError), open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)

    def _refuse(
        self, host: str, port: int, reason: str, allow: str = "", remedy: Literal["list", "denied", "none"] = "none"
    ) -> Refusal:
        """Record and report a refusal; ``remedy`` says whether listing lifts it (`Refusal.fix`):
        none unless the caller says so, so a new refusal never sends the operator to a dead end."""
        refusal = Refusal(
            time.time(), self.sandbox, _printable(host), port, reason, _printable(allow) if allow else "", remedy
        )
        with self._lock:
            kept = len(self.refusals) < self._max_refusals
            if kept:
                self.refusals.append(refusal)
            else:
                self.refusals_dropped += 1
            self._log({**asdict(refusal), "allowed": False})
        if kept and self._on_refusal is not None:
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
            return self._refuse(host, port, reason, remedy=_remedy_of(reason))
        name = normalize_domain(host)
        explicit = name in self.allowed  # listed by name, not through a wildcard
        wild = self._wild_names.refusal(name)
        if wild is not None:  # before the lookup: the name is what would leave (round 37)
            return self._refuse(host, port, wild, allow=name, remedy="list")
        try:
            # Not loop.getaddrinfo: its small shared pool, held past the deadline (and the proxy's
            # close) by a name server that never answers (red team, round 36; `_lookup`).
            infos = await lookup(name, port, self._lookups)
        except OSError as exc:
            return self._refuse(host, port, f"cannot resolve it ({exc})")
        addresses = [str(info[4][0]) for info in infos]
        barred = next((a for a in addresses if _address_denied(a, self.denied)), None)
        if barred is not None:
            return self._refuse(
                host, port, f"it resolves to {barred.partition('%')[0]}, an address on the session's network "
                "deny-list (a denied address is denied whatever name leads to it)", remedy="denied",
            )  # fmt: skip
        shared = await self._denied_names.denying(addresses)
        if shared is not None:
            return self._refuse(
                host, port, f"it resolves to the address {shared[0].partition('%')[0]} of {shared[1]}, a name on the session's "
                "network deny-list (as it resolves now: a denied name's address is denied whatever name "
                "leads to it; deny the address or range itself for what must never be reached)", remedy="denied",
            )  # fmt: skip
        public = all(is_global_address(a) for a in addresses)
        rebound = self._first_kinds.refusal(name, public) if explicit else None
        if rebound is not None:  # only its public answers (and addresses listed as such) are reached
            listed = tuple(a for a in self.allowed if _literal(a))
            infos = [i for i in infos if is_global_address(str(i[4][0])) or address_listed(str(i[4][0]), listed)]
            if not infos:
                return self._refuse(host, port, rebound)
            addresses = [str(info[4][0]) for info in infos]
            public = all(is_global_address(a) for a in addresses)
        if not explicit and not public:
            return self._refuse(
                host, port, "it resolves to a loopback, link-local or private address; only a name listed "
                "exactly (not through a wildcard) may reach those", remedy="list",
            )  # fmt: skip
        own = next((a for a in addresses if not self._may_reach_host(name, a)), None)
        if own is not None:
            shown = own.partition("%")[0]
            return self._refuse(
                host, port, f"it resolves to {shown}, an address of this machine (loopback, link-local, "
                "cloud metadata or one of its own interfaces); listing a name never reaches those, "
                f"only listing the address itself does (--allow-domain {shown})", allow=shown, remedy="list",
            )  # fmt: skip
        # The port rule holds per address: a public answer beside a private one (a listed name's DNS
        # mixing both) is still reached on the web ports only.
        reachable = [i for i in infos if port in WEB_PORTS or not is_global_address(str(i[4][0]))]
        if not reachable:
            return self._refuse(
                host, port, f"port {port} of a public host: only ports 80 and 443 are reached through the "
                "proxy (the allow-list names web hosts)"
            )  # fmt: skip
        last: OSError | None = None
        for info in reachable:
            family, _type, proto, _canon, sockaddr = info
            try:
                opened = await asyncio.wait_for(
                    asyncio.open_connection(str(sockaddr[0]), int(sockaddr[1]), family=family, proto=proto),
                    _CONNECT_TIMEOUT,
                )
            except OSError as exc:  # TimeoutError included
                last = exc
                continue
            _no_delay(opened[1])
            self._transports.add(opened[1].transport)
            conn = _CONNECTION.get(None)
            if conn is not None:
                conn.transports.add(opened[1].transport)
                conn.host, conn.port = name, port
            self._connected(name, port, str(sockaddr[0]))
            return opened
        raise last or OSError(f"no address for {host}")

    def _remedy_for(self, host: str) -> Literal["list", "denied", "none"]:
        """Whether listing ``host`` would lift a refusal that names it: not when a deny names it,
        nor when it is listed already (judged with an empty allow-list, a listed fronted name was
        told to be listed: round 40, review17)."""
        reason = decide(host, self.allowed, self.denied)
        return "none" if reason is None else _remedy_of(reason)

    def _may_reach_host(self, name: str, address: str) -> bool:
        """Whether ``address`` is not this machine's, or the operator chose it: listed as an address,
        or a loopback address of the name ``localhost`` listed exactly (red team, round 15)."""
        if not is_host_address(address):
            return True
        if address_listed(address, (a for a in self.allowed if _literal(a))):
            return True
        return name in self.allowed and is_loopback_name(name) and _is_loopback(address)

    # -- tunnels -----------------------------------------------------------------------
    async def _tunnel(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        host: str,
        port: int,
    ) -> None:
        """Pipe a CONNECT or SOCKS5 tunnel once the client's opening is for the vetted host.

        A shared host picks the site by the SNI or ``Host`` sent inside the tunnel (domain
        fronting, red team round 17): a ClientHello must name the tunnel's host (and so must the
        second one a HelloRetryRequest asks for, round 18), plain HTTP is re-framed like
        `_Request.upstream_head` (the vetted Host, one request), and a public address (web ports
        only) gets nothing else, nor a byte of the server's before the client's opening passed
        (a server that speaks first, SSH on 443, is no web host; round 18). Other protocols to a
        listed non-public host pass as they are; the server's bytes flow at once there."""
        name = normalize_domain(host)
        peer = up_writer.get_extra_info("peername")
        public = bool(peer) and is_global_address(str(peer[0]))
        retry: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        back = None if public else asyncio.ensure_future(_server_side(up_reader, writer, retry))
        try:
            await writer.drain()
            opening = await self._opening(reader, writer, name, port, public, _authority(name, port))
            if opening is None:
                return
            first, length, hello = opening
            up_writer.write(first)
            if back is None:
                back = asyncio.ensure_future(_server_side(up_reader, writer, retry))
            if hello is not None and not await self._after_hello(
                reader, up_writer, retry, name, port, *hello
            ):
                return
            if length is None:
                await _pipe(reader, up_writer)
            else:
                await _copy_exactly(reader, up_writer, length)
            await back
        except OSError:
            pass
        finally:
            if back is not None and not back.done():
                back.cancel()
            up_writer.close()

    async def _after_hello(
        self,
        reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        retry: asyncio.Future[bool],
        name: str,
        port: int,
        sni: str,
        rest: bytes,
    ) -> bool:
        """Hold the client's bytes after its ClientHello until the server answered it; after a
        HelloRetryRequest the client's second hello must name what the first did (RFC 8446 asks
        servers to check, not all do). False when refused (recorded, the tunnel ends)."""
        try:
            async with asyncio.timeout(self._head_timeout):
                if not await retry:
                    up_writer.write(rest)
                    return True
                hello = HelloReader(after_retry=True)
                held = bytearray(rest)
                again = hello.feed(rest)
                while again is None:
                    more = await reader.read(_CHUNK)
                    if not more or len(held) > MAX_HELLO_BYTES + 1024:
                        raise ValueError("incomplete")
                    held += more
                    again = hello.feed(more)
        except TimeoutError:
            self._refuse(name, port, "the TLS handshake through the tunnel did not progress in time")
            return False
        except ValueError as exc:
            self._refuse(
                name, port, f"after a HelloRetryRequest the client sent no well-formed ClientHello ({exc})"
            )
            return False
        if again != sni:
            self._refuse(
                again, port, f"a second TLS ClientHello (after a HelloRetryRequest) named it in a tunnel to "
                f"{name}:{port} (domain fronting); connect to it by its own name", allow=again, remedy=self._remedy_for(again),
            )  # fmt: skip
            return False
        up_writer.write(bytes(held))
        return True

    async def _opening(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        name: str,
        port: int,
        public: bool,
        authority: str,
    ) -> _Opening | None:
        """What to send upstream first, how many more body bytes to copy (None: pipe the rest) and,
        for a ClientHello whose name was vetted, (that name, the bytes read after it); None when
        refused (answered, recorded) or the client ended.

        To a public host the opening must come within ``head_timeout``: a client that waits for
        the server to speak first is refused there (round 18); to a listed host it may wait."""
        try:
            async with asyncio.timeout(self._head_timeout if public else None) as deadline:
                data = await reader.read(_CHUNK)
                if not data:
                    if not public:
                        return b"", None, None
                    self._refuse(name, port, "the tunnel to a public host ended before its opening")
                    return None
                deadline.reschedule(asyncio.get_running_loop().time() + self._head_timeout)
                while data == b"\x16" and (more := await reader.read(_CHUNK)):
                    # A record's first byte alone is no verdict: judged "another protocol", the rest
                    # of the hello went through unread (red team, round 18).
                    data += more
                if looks_like_tls(data):
                    return await self._tls_opening(reader, data, name, port)
                scan, preamble = HeadScan(), PreambleScan()
                more = data
                while True:
                    relayed = preamble.feed(more)
                    if relayed:
                        self._refuse(
                            name, port, "the tunnel's opening is a PROXY protocol header (a relay's word on who "
                            "the client is, and the hello behind it unread); a sandbox relays for no one: send "
                            "the connection's own protocol",
                        )  # fmt: skip
                        return None
                    http = False if scan.http is False else scan.feed(more)  # a verdict of False stands
                    if http and scan.bare_lf:
                        self._refuse(name, port, "plain HTTP through the tunnel with a bare LF in its head")
                        _answer(writer, 400, "shellrt: bare LF in the request head")
                        return None
                    if http and scan.head_end >= 0:
                        return self._http_opening(writer, scan.request, name, port, authority)
                    if http is False and relayed is not None:
                        if not public:  # another protocol to a host the operator listed
                            return bytes(scan.data), None, None
                        self._refuse(name, port, "a tunnel to a public host carries TLS or HTTP only")
                        return None
                    if len(scan.data) > _HEAD_LIMIT:
                        self._refuse(name, port, "the tunnel's request head is too large")
                        return None
                    more = await reader.read(_CHUNK)
                    if not more:  # the client ended: a request without its end never goes
                        if not http and not public:  # False: a PROXY header's prefix, cut short
                            return bytes(scan.data), None, None
                        self._refuse(name, port, "the tunnel's opening ended unfinished")
                        return None
        except TimeoutError:
            self._refuse(name, port, "the tunnel's opening did not arrive in time")
        except _FrontingError as exc:
            self._refuse(exc.sni, port, exc.reason, allow=exc.sni, remedy=self._remedy_for(exc.sni))
        except ValueError as exc:
            self._refuse(name, port, f"the tunnel's TLS opening is not one well-formed ClientHello ({exc})")
        return None

    async def _tls_opening(self, reader: asyncio.StreamReader, data: bytes, name: str, port: int) -> _Opening:
        hello = HelloReader()
        held = bytearray(data)  # grown in place: 1-byte reads must not copy all read so far each time
        sni = hello.feed(data)
        while sni is None:
            more = await reader.read(_CHUNK)
            if not more or len(held) > MAX_HELLO_BYTES + 1024:
                raise ValueError("incomplete")
            held += more
            sni = hello.feed(more)
        data = bytes(held)
        if _literal(name):  # an address the operator listed: every name it serves but a denied one
            self._literal_sni_refusal(sni, name, port)
        elif sni:
            try:
                asked = normalize_domain(sni)
            except ValueError:
                asked = ""
            if asked != name:
                raise _FrontingError(
                    sni, f"a TLS ClientHello for it was sent through a tunnel to {name}:{port} (domain "
                    "fronting); connect to it by its own name"
                )  # fmt: skip
        # No name (sni ""): no site is chosen by it, the server's default, as good as the Host
        # inside TLS, which no proxy sees (some clients send no SNI for a dotless name).
        return data[: hello.end], None, (sni, data[hello.end :])

    def _literal_sni_refusal(self, sni: str, name: str, port: int) -> None:
        """Raise `_FrontingError` when a ClientHello through a tunnel to the listed address
        ``name`` asks for a name the deny-list names, or for one the proxy cannot read as a name
        (a front may: cut at a NUL, it is the denied one). A deny beats any allow, a listed
        address's too (red team, round 55: a shared front at a listed address picks the site by
        SNI, and a wildcard deny resolves to no address the address check could compare)."""
        if not sni:
            return  # no name: the server's default site, as for a listed name (round 17)
        try:
            asked = normalize_domain(sni)
        except ValueError:
            raise _FrontingError(
                sni, f"a TLS ClientHello through a tunnel to the listed address {name}:{port} names no "
                "valid host name; send the name the site is reached by"
            ) from None  # fmt: skip
        if "*" in asked or any(domain_matches(asked, p) for p in self.denied):
            raise _FrontingError(
                sni, f"a TLS ClientHello for it was sent through a tunnel to the listed address {name}:{port}, "
                f"and {_DENIED} (a deny beats any allow, a listed address's too)"
            )  # fmt: skip

    def _http_opening(
        self, writer: asyncio.StreamWriter, data: bytes, name: str, port: int, authority: str
    ) -> _Opening | None:
        head, _, body = data.partition(b"\r\n\r\n")
        try:
            request = _parse_head(head.decode("latin-1") + "\r\n\r\n", tunnel=(name, port, authority))
        except ValueError as exc:
            status = exc.status if isinstance(exc, _BadRequest) else 400
            self._refuse(name, port, f"plain HTTP through the tunnel: {exc}")
            _answer(writer, status, f"shellrt: {exc}")
            return None
        first = body[: request.length]
        return request.upstream_head() + first, request.length - len(first), None

    # -- protocols ---------------------------------------------------------------------
    def _shed_threadsafe(self, task: asyncio.Task[None] | None, conn: _Connection) -> None:
        """End one connection of this proxy (its share of the host's fds went to another session:
        `sandbox._fdbudget`); called from any thread, the work done on this proxy's loop."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended: so did the connection
                loop.call_soon_threadsafe(self._shed, task, conn)

    def _shed(self, task: asyncio.Task[None] | None, conn: _Connection) -> None:
        for transport in list(conn.transports):
            transport.abort()
        if task is not None:
            task.cancel()
        with self._lock:
            self._log(
                {"time": time.time(), "sandbox": self.sandbox, "host": _printable(conn.host), "port": conn.port,
                 "allowed": True, "ended": "over this session's share of the host's file descriptors, "
                 "which another session needed"}
            )  # fmt: skip

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _no_delay(writer)
        self._transports.add(writer.transport)
        task = asyncio.current_task()
        if task is not None:  # asyncio keeps tasks weakly: one nobody else holds may be collected mid-way
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            if self._active >= self._max_connections:
                await _reply(writer, 503, "shellrt: the network proxy is at its connection limit; retry")
                return
            # The host's fds are shared by every session's proxy (round 20): a share each, taken back
            # from a session over it when another needs the room (round 42, `_shed`).
            conn = _Connection({writer.transport})
            _CONNECTION.set(conn)
            slot = BUDGET.admit(id(self), functools.partial(self._shed_threadsafe, task, conn))
            if isinstance(slot, str):
                await _reply(
                    writer, 503, f"shellrt: the network proxy refused a new connection: {slot}; "
                    "close some connections (or wait for them to end) and retry"
                )  # fmt: skip
                return
            self._active += 1
            try:
                await self._serve(reader, writer)
            finally:
                self._active -= 1
                BUDGET.release(slot)
        except asyncio.CancelledError:  # the proxy is closing (asyncio.run cancels what is left)
            pass
        except OSError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError, asyncio.CancelledError):  # cancelled: the proxy is closing
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = b""
        try:
            async with asyncio.timeout(self._head_timeout) as deadline:
                first = await reader.readexactly(1)
                if first == b"\x05":
                    target = await self._socks5_request(reader, writer)
                else:
                    target = await self._http_request(first, reader, writer)
                deadline.reschedule(None)  # the head is in: what follows may take its time
        except TimeoutError:
            if first != b"\x05":  # a SOCKS5 client gets no HTTP answer: the connection just ends
                await _reply(writer, 408, "shellrt: the request head did not arrive in time")
            return None
        except asyncio.LimitOverrunError:
            return await _reply(writer, 431, "shellrt: request head too large")
        except (OSError, asyncio.IncompleteReadError):
            return None
        if target is not None:
            await target(reader, writer)

    async def _http_request(
        self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> _Forward | None:
        """Read and vet an HTTP proxy request's head: what to do next, or None (answered)."""
        head = first + await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            await _reply(writer, 431, "shellrt: request head too large")
            return None
        try:
            request = _parse_head(head.decode("latin-1"))
        except _BadRequest as exc:
            await _reply(writer, exc.status, f"shellrt: {exc}")
            return None
        except ValueError as exc:  # a head no check above foresaw: refused, never a crashed task
            await _reply(writer, 400, f"shellrt: malformed request head ({exc})")
            return None
        try:
            opened = await self._open(request.host, request.port)
        except OSError as exc:
            await _reply(writer, 502, f"shellrt: cannot connect to {request.host}:{request.port}: {exc}")
            return None
        if isinstance(opened, Refusal):
            await _reply(writer, 403, opened.message())
            return None
        up_reader, up_writer = opened
        # The Host sent is the vetted name as a tunnel sends it, not the client's spelling of it
        # (``ALLOWED.example..``, which a shared front may route elsewhere; round 35).
        request = replace(request, authority=_authority(normalize_domain(request.host), request.port))

        async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if request.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await self._tunnel(reader, writer, up_reader, up_writer, request.host, request.port)
                return
            up_writer.write(request.upstream_head())
            try:
                await asyncio.gather(
                    _copy_exactly(reader, up_writer, request.length), _pipe(up_reader, writer)
                )
            finally:
                up_writer.close()

        return forward

    async def _socks5_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> _Forward | None:
        """Read and vet a SOCKS5 CONNECT: what to do next, or None (answered)."""
        count = (await reader.readexactly(1))[0]
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")
            return None
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
            return None
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:  # CONNECT only: no BIND, no UDP ASSOCIATE
            writer.write(_socks_reply(7))
            return None
        try:
            opened = await self._open(host, port)
        except OSError:
            writer.write(_socks_reply(5))
            return None
        if isinstance(opened, Refusal):
            writer.write(_socks_reply(2))
            return None

        async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(_socks_reply(0))
            await self._tunnel(reader, writer, *opened, host, port)

        return forward


_Forward = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
#: A tunnel's vetted opening: bytes to send, body bytes still to copy (None: pipe), and for a
#: ClientHello the name it asked for and the bytes read after it (`FilteringProxy._after_hello`).
_Opening = tuple[bytes, int | None, tuple[str, bytes] | None]


class _FrontingError(Exception):
    """A tunnel's ClientHello names another host than the tunnel's (or none)."""

    def __init__(self, sni: str, reason: str) -> None:
        super().__init__(reason)
        self.sni, self.reason = sni, reason


def _authority(name: str, port: int) -> str:
    """The Host a request through a tunnel to ``name:port`` carries (the port unless 80)."""
    host = f"[{name}]" if ":" in name else name
    return host if port == 80 else f"{host}:{port}"


class _BadRequest(ValueError):
    """A request head the proxy will not forward; ``status`` is the answer (400 or 501)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
#: A decimal number in ASCII digits (``str.isdigit`` also takes ``²``, which ``int`` refuses).
_DIGITS = re.compile(r"[0-9]+")
#: RFC 3986 authority characters (userinfo, host, IPv6 brackets, port).
_AUTHORITY = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@\[\]%-]*$")
#: A byte no header value may hold (RFC 9110 5.5): controls but HTAB, and DEL. Servers differ on
#: them (NUL ends a C string; VT, FF and FS-RS break a line for ``str.splitlines``), so a value
#: holding one need not be one header upstream (red team, round 35). Bytes 0x80-0xFF (obs-text)
#: pass: UTF-8 text holds them (``Å`` is C3 85, where a latin-1 reading sees NEL).
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: A byte no request target may hold (RFC 9112 3.2): controls, whitespace, DEL.
_BAD_TARGET = re.compile(r"[\x00-\x20\x7f]")
#: A non-ASCII byte of a target (latin-1): sent percent-encoded, as the URL means it.
_NON_ASCII = re.compile(r"[\x80-\xff]")


def _vetted_target(target: str) -> str:
    """``target`` with its non-ASCII bytes percent-encoded; raises `_BadRequest` for a control or
    whitespace byte (a lenient server splits the request line on it: round 35)."""
    bad = _BAD_TARGET.search(target)
    if bad is not None:
        raise _BadRequest(
            400, f"byte {bad.group()!r} in the request target; percent-encode it (%{ord(bad.group()):02X})"
        )
    return _NON_ASCII.sub(lambda m: f"%{ord(m.group()):02X}", target)


@dataclass(frozen=True)
class _Request:
    """A vetted HTTP proxy request: where to, and (plain HTTP) what to send there."""

    method: str
    host: str
    port: int
    authority: str = ""
    target: str = "/"
    version: str = "HTTP/1.1"
    headers: tuple[str, ...] = ()
    length: int = 0

    def upstream_head(self) -> bytes:
        """The one request sent upstream: origin-form target, the vetted Host, Connection: close."""
        lines = [f"{self.method} {self.target} {self.version}", f"Host: {self.authority}", *self.headers]
        return ("\r\n".join([*lines, "Connection: close", "", ""])).encode("latin-1")


def _named_by_connection(lines: list[str]) -> frozenset[str]:
    """The header names the ``Connection`` fields of ``lines`` name: this hop's, never forwarded
    (RFC 9110 7.6.1; round 37). Naming a header the proxy frames or names the request by is 400."""
    named = {
        token.strip().lower().replace("_", "-")
        for line in lines
        if line.partition(":")[0].strip().lower() == "connection"
        for token in line.partition(":")[2].split(",")
        if token.strip()
    }
    framing = named & {"content-length", "transfer-encoding", "host"}
    if framing:
        raise _BadRequest(
            400, f"the Connection header names {sorted(framing)[0]}, which the proxy sets itself; leave it out"
        )
    return frozenset(named)


def _parse_head(head: str, tunnel: tuple[str, int, str] | None = None) -> _Request:
    """Vet a proxy request head (ends with an empty line); raises `_BadRequest`.

    ``tunnel`` (host, port, authority): the head came through a tunnel to that host, so it is
    an origin-form request, re-framed for that authority (red team, round 17)."""
    lines = head[: -len("\r\n\r\n")].split("\r\n")
    if any("\r" in line or "\n" in line for line in lines):
        raise _BadRequest(400, "bare CR or LF in the request head")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise _BadRequest(400, "not an HTTP proxy request")
    method, target, version = parts
    if method != "CONNECT":  # a CONNECT target is a host, judged (and a refusal recorded) by `decide`
        target = _vetted_target(target)
    headers: list[str] = []
    lengths: list[str] = []
    hop = _named_by_connection(lines[1:])
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.match(name):  # folded (leading space) or malformed
            raise _BadRequest(400, f"malformed header line {line[:80]!r}")
        bad = _BAD_VALUE.search(value)
        if bad is not None:
            raise _BadRequest(400, f"control byte {bad.group()!r} in the value of header {name[:80]!r}")
        key = name.lower()
        folded = key.replace("_", "-")
        if folded != key and folded in ("content-length", "transfer-encoding", *_DROPPED):
            # CGI, WSGI and some servers read '_' as '-': a second, unseen framing (round 35).
            raise _BadRequest(400, f"header {name[:80]!r}: write it with '-', not '_'")
        if key == "transfer-encoding":
            raise _BadRequest(501, "request bodies in chunks are not forwarded over plain http; use https")
        if key == "content-length":
            lengths.append(value.strip())
        elif (
            key not in _DROPPED
            and folded not in hop
            and not key.replace("_", "-").startswith("proxy-")
            and not _routing_header(key)
        ):
            headers.append(line)
    if tunnel is not None:
        if method == "CONNECT" or not target.startswith("/"):
            raise _BadRequest(400, "a request through a tunnel names a path (/...), not another host")
        host, port, authority = tunnel
        path = target.partition("#")[0]
    elif method == "CONNECT":
        host, port = _split_host_port(target, 443)
        return _Request(method, host, port)
    elif not target.lower().startswith("http://"):
        raise _BadRequest(400, "use an absolute http:// URL (https: use CONNECT)")
    else:
        rest = target[len("http://") :]
        cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, path = rest[:cut], rest[cut:].partition("#")[0]
        if not _AUTHORITY.match(authority):
            raise _BadRequest(400, f"invalid characters in the URL's authority {authority[:80]!r}")
        authority = authority.rpartition("@")[2]  # userinfo is not the host
        host, port = _split_host_port(authority, 80)
    if len(lengths) > 1 or (lengths and not _DIGITS.fullmatch(lengths[0])):
        raise _BadRequest(400, "ambiguous Content-Length")
    length = int(lengths[0]) if lengths else 0
    if length:
        headers.append(f"Content-Length: {length}")
    origin = path if path.startswith("/") else "/" + path
    return _Request(method, host, port, authority, origin, version, tuple(headers), length)


def _no_delay(writer: asyncio.StreamWriter) -> None:
    """TCP_NODELAY on a TCP stream: a relay's small writes (a head, then a body) must not wait on
    the peer's delayed ACK (Nagle): ~20-40 ms per request otherwise."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _socks_reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


def _split_host_port(authority: str, default: int) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) -> (host, port); raises `_BadRequest` for a bad port."""
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
        if tail and not tail.startswith(":"):
            raise _BadRequest(400, f"invalid authority {authority[:80]!r}")
    else:
        host, sep, port = authority.rpartition(":")
        if not sep:
            host, port = authority, ""
    if not port:
        return host, default
    if not _DIGITS.fullmatch(port) or len(port) > 5:
        raise _BadRequest(400, f"invalid port {port[:20]!r}")
    return host, int(port)


async def _reply(writer: asyncio.StreamWriter, status: int, body: str) -> None:
    _answer(writer, status, body)
    await writer.drain()


def _answer(writer: asyncio.StreamWriter, status: int, body: str) -> None:
    reasons = {
        400: "Bad Request",
        403: "Forbidden",
        408: "Request Timeout",
        431: "Request Header Fields Too Large",
        501: "Not Implemented",
        502: "Bad Gateway",
        503: "Service Unavailable",
    }
    data = (body + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )


#: Server bytes read while telling whether its first message is a HelloRetryRequest; past it
#: undecided, a retry is assumed (the client's next hello is checked: fail closed).
_RETRY_WINDOW = 4096


async def _server_side(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, retry: asyncio.Future[bool]
) -> None:
    """Pipe the server's bytes to the client, telling ``retry`` on the way whether the server's
    first message was a TLS HelloRetryRequest (False when it ended or is no TLS)."""
    seen = b""
    try:
        while not retry.done():
            data = await reader.read(_CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            seen += data
            verdict = server_hello_retry(seen)
            if verdict is None and len(seen) > _RETRY_WINDOW:
                verdict = True
            if verdict is not None:
                retry.set_result(verdict)
    except OSError:
        writer.close()
        return
    finally:
        if not retry.done():
            retry.set_result(False)
    await _pipe(reader, writer)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


async def _copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int) -> None:
    """Copy the request body (``length`` bytes) upstream; whatever the client sends after is ignored."""
    try:
        while length > 0 and (data := await reader.read(min(_CHUNK, length))):
            length -= len(data)
            writer.write(data)
            await writer.drain()
    except OSError:
        writer.close()
