"""The session's tools, in a stable order, with deferral and discovery.

`tools[]` order never changes across calls (model prompt caches depend on
it): loaded tools in registration order (the runtime registers built-ins in
a fixed order, then MCP tools sorted by server and name), then discovered
deferred tools in discovery order — a newly found tool goes at the end, so
every earlier entry keeps its place.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from shellrt.protocol import Tool, ToolCatalog
from shellrt.protocol.definitions import anthropic_entry, openai_entry
from shellrt.runtime.listing import UnlistableTool, checked_entry
from shellrt.runtime.raised import answerable, quoted

_log = logging.getLogger(__name__)

__all__ = ["MAX_LISTING_DIAGNOSTICS", "DuplicateToolError", "ToolRegistrationError", "ToolRegistry"]

#: Failure lines kept (the newest): a tool re-registered at every reconnect may fail anew each time.
MAX_LISTING_DIAGNOSTICS = 256

T = TypeVar("T")

#: A name both model APIs take (Anthropic: 1-128 of these; OpenAI: 1-64); one tool outside it
#: makes the API refuse the whole request, every tool's.
_SENDABLE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class DuplicateToolError(ValueError):
    """Raised when two tools claim the same name or alias, or one tool object is registered twice."""


class ToolRegistrationError(ValueError):
    """Raised by `ToolRegistry.register` (so by a Runtime's start) when a tool's own ``name`` or
    ``aliases`` raise or are not plain strings; the message names the tool's class."""


def _registered_keys(tool: Tool[Any, Any]) -> tuple[str, ...]:
    """The tool's name and aliases, read once, each a plain non-empty ``str`` (a ``str`` subclass
    may compare or hash as another name than it is sent as; a ``str`` of aliases is one per letter)."""
    name = tool.name
    if type(name) is not str or not name:
        raise TypeError(f"its name is {name!r:.100}: a non-empty str is needed")
    aliases = tool.aliases
    if not isinstance(aliases, (tuple, list)):
        raise TypeError(f"its aliases are a {type(aliases).__name__}: a tuple of str is needed")
    for alias in aliases:
        if type(alias) is not str or not alias:
            raise TypeError(f"its alias {alias!r:.100} is not a non-empty str")
    return (name, *aliases)


def _unlistable_name(name: str) -> str | None:
    """Why ``name`` cannot be listed (None when it can): the APIs refuse it, or no rule can name it."""
    if not _SENDABLE_NAME.fullmatch(name):
        return (
            f"its name {name[:100]!r} is not 1 to 64 of A-Z, a-z, 0-9, _ and - "
            "(the model APIs refuse the whole request over one such tool): rename it"
        )
    from shellrt.permissions.rules import builtin_tool_named

    builtin = builtin_tool_named(name)
    if builtin is not None and builtin != name:
        return (
            f"its name {name!r} is the built-in {builtin!r} in another case, which no permission rule "
            "can name (rules refuse it as a typo): rename it"
        )
    return None


def _checked_only(_tool: Tool[Any, Any]) -> Callable[[str, str, dict[str, Any]], dict[str, Any]]:
    return lambda _n, _d, _s: {}


class ToolRegistry(ToolCatalog):
    """Ordered tool lookup by name or alias."""

    def __init__(self, tools: Iterable[Tool[Any, Any]] = ()) -> None:
        self._tools: list[Tool[Any, Any]] = []
        self._by_name: dict[str, Tool[Any, Any]] = {}
        #: id() of each tool whose own code failed the last listing or check: never callable.
        self._unlisted: dict[int, str] = {}
        #: id() of each tool -> the name and aliases it was registered under (its own ``name``
        #: property may answer differently later; removal and lookups use these).
        self._keys: dict[int, tuple[str, ...]] = {}
        #: One line per tool left out of ``tools[]`` (what it got wrong), for the caller to show.
        self.listing_diagnostics: list[str] = []
        self._said: set[str] = set()  # the lines of ``listing_diagnostics``, for a constant-time check
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any, Any]) -> None:
        """Add a tool at the end; names and aliases must be unique plain strings."""
        try:
            keys = _registered_keys(tool)
        except BaseException as exc:
            if not answerable(exc):
                raise
            raise ToolRegistrationError(
                f"tool {type(tool).__module__}.{type(tool).__qualname__} cannot be registered: "
                f"{quoted(exc, 300, one_line=True)}. Fix the tool, or leave it out of tools=[...]"
            ) from None
        if id(tool) in self._keys:  # its name may answer otherwise now: one object, one registration
            raise DuplicateToolError(
                f"tool {keys[0]!r:.100} is registered already (as {self._keys[id(tool)][0]!r}): give each "
                "tool object once, or unregister it first"
            )
        for key in keys:
            if key in self._by_name:
                raise DuplicateToolError(f"tool name {key!r} is already registered")
        self._tools.append(tool)
        self._unlisted.pop(id(tool), None)
        self._keys[id(tool)] = keys
        for key in keys:
            self._by_name[key] = tool
        problem = _unlistable_name(keys[0])
        if problem is not None:  # registered (its name stays taken) but never listed nor callable
            self._left_out(tool, UnlistableTool(problem))

    def unregister(self, name: str) -> None:
        """Remove a tool (e.g. an MCP server's tools on reconnect)."""
        tool = self._by_name.get(name)
        if tool is None:
            return
        self._tools.remove(tool)
        self._unlisted.pop(id(tool), None)
        for key in self._keys.pop(id(tool), ()):
            self._by_name.pop(key, None)

    # --- ToolCatalog ----------------------------------------------------------
    def all_tools(self) -> list[Tool[Any, Any]]:
        return [t for t in self._tools if self._callable(t)]

    def get(self, name: str) -> Tool[Any, Any] | None:
        tool = self._by_name.get(name)
        return tool if tool is not None and self._callable(tool) else None

    def _callable(self, tool: Tool[Any, Any]) -> bool:
        """Not left out, still answering the name it was registered under, and enabled.

        Rules, hooks and the listing judge a tool by its ``name``: one answering another name
        than it was registered (and listed, and called) under would be judged as that other
        tool (round 37: a tool denied outright ran as "Other"). Fail closed: left out for good.
        """
        if id(tool) in self._unlisted:
            return False  # a tool left out of the listing cannot be called either
        return self._asks(tool, lambda: self._named(tool)) and self._asks(tool, tool.is_enabled)

    def _named(self, tool: Tool[Any, Any]) -> bool:
        """Its name and aliases are still those it was registered under (ToolSearch reads both)."""
        name = tool.name
        registered = self._registered_name(tool)
        if type(name) is not str or name != registered:
            shown = repr(name[:100]) if type(name) is str else f"a {type(name).__name__}"
            raise UnlistableTool(f"its name is now {shown}, not {registered!r} it was registered under")
        aliases = tool.aliases
        if (
            not isinstance(aliases, (tuple, list))
            or any(type(alias) is not str for alias in aliases)
            or tuple(aliases) != self._keys[id(tool)][1:]
        ):
            raise UnlistableTool("its aliases are not those it was registered under")
        return True

    # --- a tool's own code, answered per tool ---------------------------------------
    def _left_out(self, tool: Tool[Any, Any], exc: BaseException) -> None:
        """Mark ``tool`` uncallable and say why (once per reason)."""
        if not answerable(exc):
            raise exc
        try:
            label = repr(self._registered_name(tool))
        except Exception:
            label = type(tool).__name__
        line = f"tool {label} left out of tools[] and refused: {quoted(exc, 300, one_line=True)}"
        self._unlisted[id(tool)] = line
        if line not in self._said:
            self._said.add(line)
            self.listing_diagnostics.append(line)
            _log.warning("%s", line)
            if len(self.listing_diagnostics) > MAX_LISTING_DIAGNOSTICS:
                self._said.discard(self.listing_diagnostics.pop(0))

    def _registered_name(self, tool: Tool[Any, Any]) -> str:
        return self._keys[id(tool)][0]

    def _asks(self, tool: Tool[Any, Any], question: Callable[[], Any]) -> bool:
        """``question()`` of the tool's own code; one that raises or answers a non-bool leaves the tool out."""
        try:
            answer = question()
            if not isinstance(answer, bool):
                raise TypeError(f"{getattr(question, '__name__', 'check')}() returned {type(answer).__name__}")
        except BaseException as exc:
            self._left_out(tool, exc)
            return False
        return answer

    def _deferred(self, tool: Tool[Any, Any]) -> bool:
        return self._asks(tool, tool.is_deferred) if id(tool) not in self._unlisted else False

    def deferred_tools(self) -> list[Tool[Any, Any]]:
        """Deferred tools whose entry checks: ToolSearch reads their prompt, hint and name, and a
        deferred tool is in no ``tools[]`` (so never checked) until it is found (round 37)."""
        return [t for t in self.all_tools() if self._deferred(t) and self._entries([t], _checked_only)]

    def names(self) -> list[str]:
        """The registered names of the callable tools (never a tool's answer of the moment)."""
        return [self._registered_name(t) for t in self.all_tools()]

    def names_where(self, question: Callable[[Tool[Any, Any]], Any]) -> frozenset[str]:
        """Registered names of the callable tools for which ``question(tool)`` (which reads the
        tool's own members) is true; a tool for which it raises is left out and not named."""
        def truth(tool: Tool[Any, Any]) -> bool:
            return bool(question(tool))  # its own __bool__ too is the tool's code

        return frozenset(
            self._registered_name(t) for t in self.all_tools() if self.asked(t, functools.partial(truth, t))
        )

    def asked(self, tool: Tool[Any, Any], question: Callable[[], T]) -> T | None:
        """``question()`` of the tool's own code; None (the tool left out of every listing, and
        refused) when it raises. For callers that read a tool's members beyond the listing's."""
        try:
            return question()
        except BaseException as exc:
            self._left_out(tool, exc)
            return None

    def shown(self, is_visible: Callable[[Tool[Any, Any]], bool]) -> list[Tool[Any, Any]]:
        """The callable tools ``is_visible`` keeps (deferred ones included, in registration order)."""
        return [t for t in self.all_tools() if self._asks(t, lambda t=t: is_visible(t))]  # type: ignore[misc]

    # --- what the model sees ------------------------------------------------------
    def visible(
        self,
        discovered: Iterable[str] = (),
        is_visible: Callable[[Tool[Any, Any]], bool] = lambda _t: True,
    ) -> list[Tool[Any, Any]]:
        """Tools for ``tools[]``: loaded ones, then discovered deferred ones in ``discovered`` order.

        Pass ``discovered`` in discovery order; a set (no order) falls back to
        registration order. Tools ``is_visible`` rejects (denied outright) are left out.
        """
        tools = [t for t in self.all_tools() if self._asks(t, lambda t=t: is_visible(t))]  # type: ignore[misc]
        flags = {id(t): self._deferred(t) for t in tools}
        tools = [t for t in tools if id(t) not in self._unlisted]
        deferred = {self._registered_name(t): t for t in tools if flags[id(t)]}
        if isinstance(discovered, (set, frozenset)):
            order = [name for name in deferred if name in discovered]
        else:
            order = list(dict.fromkeys(discovered))
        return [t for t in tools if not flags[id(t)]] + [deferred[n] for n in order if n in deferred]

    def for_anthropic(
        self, tools: list[Tool[Any, Any]], *, defer_loading: bool = False, strict: bool = False
    ) -> list[dict[str, Any]]:
        """Anthropic entries; a tool whose own code fails is left out (and refused), the rest stand."""

        def build(tool: Tool[Any, Any]) -> Callable[[str, str, dict[str, Any]], dict[str, Any]]:
            deferred = defer_loading and self._deferred(tool)
            return lambda n, d, s: anthropic_entry(n, d, s, deferred=deferred, strict=strict)

        return self._entries(tools, build)

    def for_openai(self, tools: list[Tool[Any, Any]], *, strict: bool = False) -> list[dict[str, Any]]:
        """OpenAI entries; a tool whose own code fails is left out (and refused), the rest stand."""
        return self._entries(tools, lambda _t: lambda n, d, s: openai_entry(n, d, s, strict=strict))

    def entries(
        self,
        tools: list[Tool[Any, Any]],
        build: Callable[[Tool[Any, Any]], Callable[[str, str, dict[str, Any]], dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        """``build(tool)(name, description, schema)`` of each tool whose entry passes the listing's
        checks (size, plain JSON, an object schema, its registered name); one that fails, or whose
        ``build`` raises, is left out and refused. For listings of other formats (``shellrt serve``)."""
        return self._entries(tools, build)

    def _entries(
        self,
        tools: list[Tool[Any, Any]],
        build: Callable[[Tool[Any, Any]], Callable[[str, str, dict[str, Any]], dict[str, Any]]],
    ) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for tool in tools:
            try:
                entry = checked_entry(tool, self._by_name.get, build(tool))
            except BaseException as exc:
                self._left_out(tool, exc)
                continue
            if id(tool) not in self._unlisted:
                entries.append(entry)
        return entries
