"""What a session denies WebFetch by address, range or name, applied where it connects.

Why: deny rules are judged by the permission engine on the URL's host, before any lookup, so an
allowed name whose DNS answers a denied address (``WebFetch(domain:10.9.8.7)``, a range
``WebFetch(domain:10.0.0.0/8)``, an operator's ``--deny-domain``) was fetched; a redirect's hop
and a cached answer likewise (red team round 28). The tool reads the rules' address entries from
the gate and the sandbox policy's deny-list at call time, and refuses a name on that list before
its lookup and every DNS answer in it, in any spelling it carries (`sandbox._addrdeny`), before it
connects, to the very addresses checked.

A deny naming a host (a rule ``WebFetch(domain:evil.example)`` or a name on the deny-list) denies
that name; and, as far as DNS tells at check time, the addresses it resolves to: `Barred.resolved`
looks the exact names up (not wildcards, not ask rules) on every hop, so another name pointing at
the same address is refused too (round 28, net2). DNS may answer otherwise a moment later, or
another way to another resolver: deny the address or range for what must never be reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

from sandbox._addrdeny import address_denied
from sandbox._denynames import MOST_NAMES, NAME_LOOKUP_SECONDS
from sandbox._lookup import lookup
from sandbox.base import SandboxBackend
from sandbox.policy import domain_matches
from shellrt.permissions.hosts import address_entry
from shellrt.permissions.interfaces import PermissionGate
from shellrt.protocol import ToolContext

__all__ = ["Barred", "barred_for"]

#: Denied names looked up per check, at most, and how long a check waits for their answers: the
#: proxy's bounds (`sandbox._denynames`), so a command and WebFetch are judged alike.
MOST_NAMES_RESOLVED = MOST_NAMES


@dataclass(frozen=True)
class Barred:
    """Deny entries: ``(address, range or name, where it comes from, whether an ask rule)``."""

    entries: tuple[tuple[str, str, bool], ...] = ()

    def name_refusal(self, host: str) -> str | None:
        """Why ``host`` (canonical) is denied by a name entry, before any lookup."""
        for entry, why, _asked in self.entries:
            if not address_entry(entry) and domain_matches(host, entry):
                return f"{host} is denied by {why}"
        return None

    def address_refusal(self, host: str, address: str) -> str | None:
        """Why the DNS answer ``address`` of ``host`` may not be connected to, or None."""
        # An ask rule was asked about a URL naming the address itself; through a name, no one was.
        literal = address_entry(host)
        entries = [(e, w) for e, w, asked in self.entries if address_entry(e) and not (asked and literal)]
        hit = address_denied(address, [e for e, _ in entries]) if entries else None
        if hit is None:
            return None
        why = next(w for e, w in entries if e == hit)
        shown = address.partition("%")[0]
        return f"{host} resolves to {shown}, denied by {why} (a denied address is denied whatever name leads to it)"

    async def resolved(self, session: str = "") -> Barred:
        """These entries and the addresses each exact name a deny names resolves to now, so a URL
        whose answers include one is refused as that name would be (ask rules: the name was asked
        about, not its address; wildcards: no name to look up). A name that does not resolve adds
        nothing.

        The lookups are ``session``'s, counted apart from its fetches' (`sandbox._lookup`: one
        thread per name however many calls ask, at most its `PER_SESSION` running; past it a name is
        judged by name only, as one not answered in time): whoever runs a denied name's zone can
        stall them, and every hop of every call started 8 threads that outlived it (round 37)."""
        names = [
            (e, w)
            for e, w, asked in self.entries
            if not asked and not address_entry(e) and not e.startswith("*.")
        ][:MOST_NAMES_RESOLVED]
        if not names:
            return self
        found: list[tuple[str, str, bool]] = []
        key = f"{session}\x00denied-names"

        async def look_up(name: str, why: str) -> None:
            try:
                infos = await lookup(name, 80, key)
            except OSError:  # no answer, or the session's lookups of denied names are all waiting
                return
            for address in dict.fromkeys(str(info[4][0]).partition("%")[0] for info in infos):
                found.append((address, f"{why}, as {name} resolves to {address} now", False))

        # A stalled resolver bounds the wait: past it the name is judged by name only (documented).
        with anyio.move_on_after(NAME_LOOKUP_SECONDS):
            async with anyio.create_task_group() as group:
                for name, why in names:
                    group.start_soon(look_up, name, why)
        return Barred((*self.entries, *dict.fromkeys(found)))


def barred_for(tool_name: str, ctx: ToolContext) -> Barred:
    """The deny entries of this call's session: the gate's address rules for ``tool_name`` and the
    sandbox policy's network deny-list (names, addresses, ranges)."""
    entries: list[tuple[str, str, bool]] = []
    if ctx.has_service(PermissionGate):  # looked up by its interface
        entries += ctx.service(PermissionGate).barred_addresses(tool_name)  # type: ignore[type-abstract]
    if ctx.has_service(SandboxBackend):
        policy = ctx.service(SandboxBackend).policy  # type: ignore[type-abstract]
        entries += [(d, "the session's network deny-list", False) for d in policy.denied_domains]
    return Barred(tuple(entries))
