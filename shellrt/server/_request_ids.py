"""JSON-RPC request ids as the MCP wires check them before the SDK sees a request.

The SDK reads a request whose id is not a string or an integer (``1.5``, ``null``, ``true``, an
object) as a notification and answers nothing, so the client waits forever; JSON-RPC 2.0 answers
it ``-32600`` with id null. A second request with the id of one still running overwrote the
first one's entry, so the client's ``notifications/cancelled`` stopped only the second and the
first call ran on out of its reach (red team round 25). `InFlight` refuses such a reuse.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["InFlight", "bad_id_reason", "bad_token_reason", "is_plain_id", "lenient_loads"]

#: Digits of an integer read as such by `lenient_loads` (Python refuses more than 4,300).
_MAX_INT_DIGITS = 4000


class _Unreadable:
    """Stands for a number Python will not convert (so the rest of the message is still read)."""


_UNREADABLE = _Unreadable()


def _parse_int(text: str) -> int | _Unreadable:
    return int(text) if len(text) <= _MAX_INT_DIGITS else _UNREADABLE


def lenient_loads(raw: bytes | str) -> Any:
    """JSON as Python reads it, a number too long to convert read as a placeholder: to find the
    id of a request refused for that number. Raises `ValueError` or `RecursionError`."""
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    return json.loads(text, parse_int=_parse_int)


def is_plain_id(value: Any) -> bool:
    """Whether ``value`` is an id MCP allows: a string or an integer (a bool is not)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def bad_id_reason(message: Any) -> str | None:
    """Why a parsed request (``method`` and ``id``) carries an id no answer can name, or None."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    msg_id = message["id"]
    if is_plain_id(msg_id):
        return None
    shown = "null" if msg_id is None else type(msg_id).__name__
    if isinstance(msg_id, float):
        shown = f"the number {msg_id!r}"
    return (
        f"Invalid Request: a request's id must be a string or an integer, not {shown}; "
        "the request was not run. Send it again with such an id (or without an id, as a notification)"
    )


def bad_token_reason(message: Any) -> str | None:
    """Why a request's ``params._meta.progressToken`` is not a string or an integer, or None.

    The SDK's pydantic model reads the token in lax mode: ``true`` became the token ``1`` (round
    27 wave 2), ``false`` ``0``, so a client's progress went out under another token it may use
    for another call. A token names a client's call as an id does: it is held to the same types.
    """
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or "progressToken" not in meta or is_plain_id(meta["progressToken"]):
        return None
    return (
        "Invalid params: _meta.progressToken must be a string or an integer, not "
        f"{json.dumps(meta['progressToken'])[:40]}; the request was not run. Send it with such a token "
        "(or without one)"
    )


def _key(msg_id: Any) -> Any:
    """The id as the SDK correlates it (``"7"`` and ``7`` are one id: its ``coerce_request_id``)."""
    if isinstance(msg_id, str):
        try:
            return int(msg_id)
        except ValueError:
            return msg_id
    return msg_id


class InFlight:
    """Ids of the client's requests not answered yet: a second request under one is refused."""

    def __init__(self) -> None:
        self._ids: set[Any] = set()

    def claim(self, msg_id: Any) -> bool:
        """Take ``msg_id`` for a new request; False when a request under it is still running."""
        key = _key(msg_id)
        if key in self._ids:
            return False
        self._ids.add(key)
        return True

    def __bool__(self) -> bool:
        return bool(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def release(self, msg_id: Any) -> None:
        """The request is answered, or the client cancelled it: its id may name a new one."""
        if is_plain_id(msg_id):
            self._ids.discard(_key(msg_id))

    @staticmethod
    def reuse_message(msg_id: Any) -> str:
        return (
            f"Invalid Request: the id {msg_id!r} is in use by a request still running; this request was "
            "not run. Give every request an id of its own (reuse one only after its answer came)"
        )
