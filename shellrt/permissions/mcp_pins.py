"""What a person saw when they allowed an MCP tool, pinned beside the rule that allows it.

Why: a rule names a tool (``mcp__srv__weather``), and the server decides anew, in every listing,
what that name means (its description, title and input schema): a server run as
``npx pkg@latest``, or one that sends ``notifications/tools/list_changed`` mid-session, could
describe a new tool under an allowed name and run unasked (a rug pull; red team rounds 19-21).
An allow from such a rule now holds only while the server's current listing of the tool has
the digests pinned for that rule: a difference, or no pin at all (a rule written by hand, or
saved before round 21), asks, and the person's answer pins what the server lists now.

Session pins live in memory; saved pins ("always") in ``mcp-pins.json`` beside the trust store,
outside the workspace (a command rewrites workspace files), keyed by the rule's settings file,
the rule and the tool. A store inside a root the session's commands write is not read nor
written (a command could forge it). No digest covers the server's code.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from shellrt.permissions.private_json import UnusableStore, read_private_json, write_private_json
from shellrt.permissions.rules import PermissionRule
from shellrt.permissions.shown import model_claim
from shellrt.permissions.trust_paths import trust_store_path

__all__ = ["NO_ONE_TO_ASK", "NO_PIN", "PINS_ENV", "SHOWN_DESCRIPTION", "McpPins", "listing_digests", "pins_store_path"]

#: Said in the reason of an ask for a rule that has no pin (the gate pins it on any allow answer).
NO_PIN = "holds no record of what the server listed"

#: Whether no one can be asked for the call being decided (headless, or an MCP client that cannot
#: elicit): a rule with no pin then pins on first use for the session instead of asking. Set by the
#: gate per call (a context variable: two clients of one session decide side by side).
NO_ONE_TO_ASK: ContextVar[bool] = ContextVar("shellrt_mcp_no_one_to_ask", default=True)

#: Names another file for saved pins (tests; an operator's own layout).
PINS_ENV = "SHELLRT_MCP_PINS"

#: The fields pinned, as a person would name them in "… differ" (``server``: its command line
#: or URL from the session's settings, so a pin does not carry over to another program).
_FIELDS = ("name", "title", "description", "schema", "server")

#: A listing's key for the description's words (shown, escaped and cut, when it changed; not pinned).
SHOWN_DESCRIPTION = "shown description"

Listing = Mapping[str, str]


def pins_store_path() -> Path:
    """Where saved pins live: ``$SHELLRT_MCP_PINS``, else beside the trust store."""
    explicit = os.environ.get(PINS_ENV)
    return Path(explicit) if explicit else trust_store_path().parent / "mcp-pins.json"


def listing_digests(
    name: str, title: str | None, description: str | None, schema: Any, server: Any = None
) -> dict[str, str]:
    """SHA-256 of each field as the server listed it (canonical JSON: sorted keys, no spaces), and
    of how the server is reached (``server``: its command and arguments, or its URL)."""
    values = {"name": name, "title": title, "description": description, "schema": schema, "server": server}
    return {
        field: hashlib.sha256(
            json.dumps(values[field], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).hexdigest()
        for field in _FIELDS
    }


class McpPins:
    """Pins of one session: its own (memory) over the saved ones (read once, written on "always")."""

    def __init__(self, writable_roots: Sequence[Path] = (), store: Path | None = None) -> None:
        self.store = store if store is not None else pins_store_path()
        self._session: dict[str, dict[str, str]] = {}
        self._saved: dict[str, dict[str, str]] | None = None
        self._keys: dict[tuple[PermissionRule, str], str] = {}
        #: Why the store is not used (None: it is).
        self.store_refused = _inside(self.store, writable_roots)

    def key(self, rule: PermissionRule, tool_name: str) -> str:
        """The rule's identity (its file, else its source) with its text and the tool it allows
        (made once per rule and tool: resolving the file is most of a check's cost)."""
        found = self._keys.get((rule, tool_name))
        if found is None:
            origin = rule.origin
            where = os.path.realpath(origin.file) if origin.file is not None else f"({origin.source})"
            found = self._keys[(rule, tool_name)] = f"{where}\n{rule.text}\n{tool_name}"
        return found

    def check(self, rule: PermissionRule, tool_name: str, listing: Listing | None) -> str | None:
        """None when ``rule``'s pin for ``tool_name`` is ``listing``; else why the allow does not hold."""
        if listing is None:
            return (
                f"the MCP server does not list {tool_name} now (or could not be reached), so its listing "
                f"cannot be compared with what was allowed by {rule.describe()}"
            )
        key = self.key(rule, tool_name)
        pinned = self._session.get(key) or self._load().get(key)
        if pinned is None:
            return (
                f"{rule.describe()} names the MCP tool {tool_name} but {NO_PIN} "
                "when it was allowed (a rule written by hand, or saved before round 21); answer to "
                "pin what it lists now"
            )
        differ = [f for f in _FIELDS if pinned.get(f) != listing.get(f)]
        if differ:
            now = listing.get(SHOWN_DESCRIPTION)
            return (
                f"the server changed this tool since you allowed it: {'/'.join(differ)} differ "
                f"({tool_name}, allowed by {rule.describe()})"
                + (model_claim(now, "what the server says it does now") if now and "description" in differ else "")
            )
        return None

    def pin(self, rule: PermissionRule, tool_name: str, listing: Listing, *, save: bool) -> str | None:
        """Pin ``listing`` for this session, and in the store when ``save``; returns why it was not
        saved (None: saved or not asked to)."""
        key = self.key(rule, tool_name)
        listing = {f: listing[f] for f in _FIELDS if f in listing}  # digests only, never the words
        self._session[key] = dict(listing)
        if not save:
            return None
        if self.store_refused is not None:
            return self.store_refused
        try:
            saved = dict(self._read(strict=True))
            saved[key] = dict(listing)
            _write(self.store, saved)
        except OSError as exc:
            return f"could not write {self.store}: {exc}"
        self._saved = saved
        return None

    def _load(self) -> dict[str, dict[str, str]]:
        if self._saved is None:
            self._saved = {} if self.store_refused is not None else self._read()
        return self._saved

    def _read(self, *, strict: bool = False) -> dict[str, dict[str, str]]:
        """The store's pins; a missing or unusable file holds none (every rule then asks). Read as
        the trust store is (`read_private_json`: never through a link, only the operator's own,
        never blocking). ``strict``: an unusable one raises `OSError` (a save must not replace it)."""
        try:
            data = read_private_json(self.store)
        except UnusableStore as exc:
            if strict:
                raise OSError(f"it {exc}; not replaced") from exc
            return {}
        pins = data.get("pins") if data else None
        if not isinstance(pins, dict):
            return {}
        return {
            k: {f: str(d) for f, d in v.items()}
            for k, v in pins.items()
            if isinstance(k, str) and isinstance(v, dict)
        }


def _inside(store: Path, roots: Sequence[Path]) -> str | None:
    real = os.path.realpath(store)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip("/") + "/"):
            return (
                f"the MCP pin store {store} lies in {root}, which the session's commands write; pins are "
                f"kept for this session only (set ${PINS_ENV} to a file elsewhere)"
            )
    return None


def _write(path: Path, pins: dict[str, dict[str, str]]) -> None:
    """Atomically, readable by the owner only."""
    write_private_json(path, {"version": 1, "pins": pins})
