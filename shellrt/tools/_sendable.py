"""Every text a file tool gives is sendable, whatever bytes the paths it resolved hold.

The model names a path in UTF-8, but the place it resolves to may not be: a symbolic link a
sandboxed command made (``link -> $'d\\xff'``) turns ``link/a.txt`` into ``d\\udcff/a.txt`` (the
name decoded with ``surrogateescape``), and Read, Edit, Write, Glob and Grep name that canonical
path in their results, refusals and permission reasons. A lone surrogate makes a result no UTF-8
encoder takes -- the MCP SDK refuses it and the call's result is lost (red team, rounds 13-14).
`SendableText`, mixed into a tool class, passes each of those texts through
`shellrt.supervisor.text.sendable` (an undecoded byte shows as ``\\xNN``), in one place rather
than at each of the tools' messages.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from shellrt.protocol import (
    ContentBlock,
    PermissionResult,
    TextBlock,
    ToolExecutionError,
    ValidationResult,
)
from shellrt.supervisor.text import sendable

__all__ = ["SendableText", "sendable_content"]


def sendable_content(content: str | list[ContentBlock]) -> str | list[ContentBlock]:
    """``content`` with its text (a string or text blocks) made sendable; other blocks as they are."""
    if isinstance(content, str):
        return sendable(content)
    return [
        b.model_copy(update={"text": sendable(b.text)}) if isinstance(b, TextBlock) else b for b in content
    ]


def _async_texts(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``validate``/``check_permissions``/``call``: their messages and refusals made sendable."""

    @functools.wraps(method)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            result = await method(*args, **kwargs)
        except ToolExecutionError as exc:
            text = str(exc)
            if sendable(text) == text:
                raise
            raise type(exc)(sendable(text)) from None
        if isinstance(result, ValidationResult) and result.message:
            return ValidationResult(result.ok, sendable(result.message))
        if isinstance(result, PermissionResult) and result.reason:
            return result.model_copy(update={"reason": sendable(result.reason)})
        return result

    return wrapped


def _content(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        return sendable(result) if isinstance(result, str) else sendable_content(result)

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
