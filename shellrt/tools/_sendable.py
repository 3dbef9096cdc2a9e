"""Every text a file tool gives is sendable, whatever bytes the paths it resolved hold.

The model names a path in UTF-8, but the place it resolves to may not be: a symbolic link a
sandboxed command made (``link -> $'d\\xff'``) turns ``link/a.txt`` into ``d\\udcff/a.txt`` (the
name decoded with ``surrogateescape``), and Read, Edit, Write, Glob and Grep name that canonical
path in their results, refusals and permission reasons. A lone surrogate makes a result no UTF-8
encoder takes -- the MCP SDK refuses it and the call's result is lost (red team, rounds 13-14).
`SendableText`, mixed into a tool class, passes each of those texts through
`shellrt.supervisor.text.sendable` (an undecoded byte shows as ``\\xNN``), in one place rather
than at each of the tools' messages.

Every other tool had the same hole (left-overs, round 15): an MCP server's result (JSON's
``\\ud800`` decodes to a lone surrogate), a plugin tool's, a refusal or a permission prompt
naming such a path. So the runtime passes every result envelope it hands out
(`sendable_envelope`, in `shellrt.runtime.orchestration`: every tool, every error, every path
to Runtime.run, the JSONL and MCP servers) and every approval request (`sendable_approver`,
wrapped once around the session's approver) through `sendable_text`: an undecoded byte as
``\\xNN``, any other lone surrogate as U+FFFD.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from shellrt.protocol import (
    ContentBlock,
    PermissionResult,
    ResultEnvelope,
    TextBlock,
    ToolExecutionError,
    ValidationResult,
)
from shellrt.supervisor.text import sendable

__all__ = [
    "SendableText",
    "sendable_approver",
    "sendable_content",
    "sendable_envelope",
    "sendable_text",
    "sendable_value",
]

#: Code points no UTF-8 encoder takes: lone surrogates (Python strings hold code points, so a
#: surrogate in one is never half of a pair).
_SURROGATE = re.compile("[\ud800-\udfff]")
_T = TypeVar("_T")


def sendable_text(text: str) -> str:
    """``text`` as UTF-8 takes it: an undecoded byte (``surrogateescape``) as ``\\xNN``, as
    `sendable` shows it; any other lone surrogate as U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", sendable(text))


def sendable_value(value: _T) -> _T:
    """``value`` (JSON-like: strings, lists, dicts) with every string, keys too, made sendable;
    the same object when nothing had to change."""
    if isinstance(value, str):
        return sendable_text(value)  # type: ignore[return-value]
    if isinstance(value, list):
        items = [sendable_value(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items  # type: ignore[return-value]
    if isinstance(value, dict):
        pairs = [(sendable_value(k), sendable_value(v)) for k, v in value.items()]
        same = all(k is k2 and v is v2 for (k, v), (k2, v2) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)  # type: ignore[return-value]
    return value


def sendable_content(content: str | list[ContentBlock]) -> str | list[ContentBlock]:
    """``content`` with its text (a string or text blocks) made sendable; other blocks as they are."""
    if isinstance(content, str):
        return sendable_text(content)
    return [
        b.model_copy(update={"text": sendable_text(b.text)})
        if isinstance(b, TextBlock) and _SURROGATE.search(b.text)
        else b
        for b in content
    ]


def _unsendable(content: str | list[ContentBlock]) -> bool:
    if isinstance(content, str):
        return _SURROGATE.search(content) is not None
    return any(isinstance(b, TextBlock) and _SURROGATE.search(b.text) for b in content)


def sendable_envelope(envelope: ResultEnvelope) -> ResultEnvelope:
    """``envelope`` with its model, UI and audit faces sendable (the same object when they are).
    Its ``tool_use_id`` is the client's own and pairs the result: left as it came."""
    model = envelope.model
    update: dict[str, Any] = {}
    if _unsendable(model.content):
        update["model"] = model.model_copy(update={"content": sendable_content(model.content)})
    for face in ("ui", "audit", "tool_name", "persisted_path"):
        text = getattr(envelope, face)
        if isinstance(text, str) and _SURROGATE.search(text):
            update[face] = sendable_text(text)
    return envelope.model_copy(update=update) if update else envelope


def sendable_approver(approver: Callable[[Any], Awaitable[_T]]) -> Callable[[Any], Awaitable[_T]]:
    """``approver`` given requests (`ApprovalRequest`) whose every text is sendable: the prompt
    names the call's paths and input, which an MCP elicitation or a JSONL client must encode."""

    @functools.wraps(approver)
    async def asking(request: Any) -> _T:
        fields = request.model_dump()
        clean = sendable_value(fields)
        if clean is not fields:
            request = type(request).model_validate(clean)
        return await approver(request)

    return asking


def _async_texts(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``validate``/``check_permissions``/``call``: their messages and refusals made sendable."""

    @functools.wraps(method)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            result = await method(*args, **kwargs)
        except ToolExecutionError as exc:
            text = str(exc)
            if sendable_text(text) == text:
                raise
            raise type(exc)(sendable_text(text)) from None
        if isinstance(result, ValidationResult) and result.message:
            return ValidationResult(result.ok, sendable_text(result.message))
        if isinstance(result, PermissionResult) and result.reason:
            return result.model_copy(update={"reason": sendable_text(result.reason)})
        return result

    return wrapped


def _content(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        return sendable_text(result) if isinstance(result, str) else sendable_content(result)

    return wrapped


class SendableText:
    """Mixin (before `Tool` in the bases): wraps the methods a tool class defines itself."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        for name in ("validate", "check_permissions", "call"):
            if name in own:
                setattr(cls, name, _async_texts(own[name]))
        for name in ("to_model_content", "render_result"):
            if name in own:
                setattr(cls, name, _content(own[name]))
