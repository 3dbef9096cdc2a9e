"""The addresses the names on a deny-list resolve to, for the filtering proxy.

Why: a deny of ``internal.example`` is judged on the name a command sends, before DNS, so
``alias.example`` (allowed, or under an allowed wildcard), whose DNS answers internal.example's
address, was tunnelled (red team round 28's Left; round 29). WebFetch already refuses such answers
(`shellrt.tools._fetch_denies`); the proxy now does the same: the exact names on its deny-list are
looked up, and a connection whose answers include one of their addresses, in any spelling
(`sandbox._addrdeny.address_denied`), is refused before it is made.

Bounded: the lookups run in a small pool of their own (never on the proxy's event loop, never in
the pool its own connections resolve in), at most `MOST_NAMES` names, and a connection waits for
them at most `NAME_LOOKUP_SECONDS`: a name not answered by then adds nothing to that connection's
check (judged by name only, as WebFetch does). Answers are kept `ANSWER_SECONDS` (and a failed
lookup as no answer), so a burst of connections asks the resolver once per name. As good as DNS at
that moment: deny the address or range for what must never be reached.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from sandbox._addrdeny import address_denied, is_address_entry

__all__ = ["ANSWER_SECONDS", "MOST_NAMES", "NAME_LOOKUP_SECONDS", "DeniedNames", "answers_of"]

#: Denied names looked up, at most (a longer list: the rest are judged by name only).
MOST_NAMES = 64
#: How long one connection waits for the denied names' answers.
NAME_LOOKUP_SECONDS = 2.0
#: How long a denied name's answer (or its failure) is kept before it is asked again.
ANSWER_SECONDS = 10.0
#: Lookups at once: a stalled resolver holds at most this many threads.
_WORKERS = 4


class DeniedNames:
    """The exact names of a deny-list (no wildcard, address or range) and what they resolve to."""

    def __init__(self, denied: Iterable[str]) -> None:
        self.names = tuple(e for e in denied if not e.startswith("*.") and not is_address_entry(e))[
            :MOST_NAMES
        ]
        self._answers: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._pending: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Let the pool's threads end (a lookup under way ends when the resolver answers)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def denying(self, addresses: Iterable[str]) -> tuple[str, str] | None:
        """``(answer, name)``: the first of ``addresses`` that a denied name resolves to (any spelling),
        or None. Waits at most `NAME_LOOKUP_SECONDS` for names not answered lately."""
        if not self.names:
            return None
        known = await self._known()
        for address in addresses:
            for name, answers in known.items():
                if answers and address_denied(address, answers) is not None:
                    return address, name
        return None

    async def _known(self) -> dict[str, tuple[str, ...]]:
        """Each name's answers kept or looked up now; a name not answered in time is left out."""
        now = time.monotonic()
        known: dict[str, tuple[str, ...]] = {}
        waiting: dict[str, asyncio.Future[tuple[str, ...]]] = {}
        for name in self.names:
            kept = self._answers.get(name)
            if kept is not None and kept[0] > now:
                known[name] = kept[1]
            else:
                waiting[name] = self._pending.get(name) or self._look_up(name)
        if waiting:
            await asyncio.wait(waiting.values(), timeout=NAME_LOOKUP_SECONDS)
            known.update({n: f.result() for n, f in waiting.items() if f.done() and not f.cancelled()})
        return known

    def _look_up(self, name: str) -> asyncio.Future[tuple[str, ...]]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="shellrt-proxy-denied-dns")
        future = asyncio.get_running_loop().run_in_executor(self._pool, answers_of, name)
        self._pending[name] = future

        def keep(done: asyncio.Future[tuple[str, ...]]) -> None:
            self._pending.pop(name, None)
            if not done.cancelled():
                self._answers[name] = (time.monotonic() + ANSWER_SECONDS, done.result())

        future.add_done_callback(keep)
        return future


def answers_of(name: str) -> tuple[str, ...]:
    """``name``'s addresses now (none when it does not resolve; no scope suffix). WebFetch's denied-name
    check (`shellrt.tools._fetch_denies`) uses it too, with the same bounds."""
    try:
        infos = socket.getaddrinfo(name, 80, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return ()
    return tuple(dict.fromkeys(str(info[4][0]).partition("%")[0] for info in infos))
