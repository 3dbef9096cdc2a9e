"""A caller's pydantic object as its validators would have made it, whatever built the object.

``X.model_construct(...)`` and ``x.model_copy(update=...)`` skip every validator, and a harness
may build a session's options, a batch task or an approver's answer that way (for speed, or to vary
one field of a checked one). What was used as given did harm: a `SandboxPolicy` with network
``"off"`` (not ``none``) gave bwrap's commands the host's network, a task id ``../x`` named
directories outside the run's own, an answer ``behavior="no"`` ran the call it meant to refuse (red
team round 35). Such objects are validated afresh where they are taken (a few microseconds, once per
session, task or answer), by the expected class itself: a subclass does not bring validators of its
own. In `shellrt.protocol`, the lowest layer, so the permission gate and the batch runner use the
same check and the same message as the Runtime.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["revalidated", "validated"]

M = TypeVar("M", bound=BaseModel)


def revalidated(value: Any, kinds: tuple[type[M], ...], what: str) -> M:
    """``value`` validated afresh as the first of ``kinds`` it is an instance of; `TypeError` when it
    is none of them, `ValueError` saying what is wrong and how to build one when it does not validate."""
    kind = next((k for k in kinds if isinstance(value, k)), None)
    if kind is None:
        names = " or ".join(k.__name__ for k in kinds)
        raise TypeError(f"{what} must be a {names}, got {type(value).__name__}")
    try:
        fields = value.model_dump(round_trip=True, warnings=False)
    except Exception as exc:  # a field model_construct left out, a value no dump can read
        raise ValueError(f"invalid {what} ({type(exc).__name__}: {exc}); {_hint(kind)}") from None
    return validated(kind, fields, what)


def validated(kind: type[M], data: Any, what: str) -> M:
    """``data`` (fields, or an instance to check afresh) as a ``kind``; `ValueError` naming the first
    wrong field and how to build a valid one."""
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0] if exc.error_count() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(part) for part in first.get("loc", ())) or what
        raise ValueError(f"invalid {what} ({where}: {first.get('msg')}); {_hint(kind)}") from None
    except Exception as exc:  # a validator that raised something else
        raise ValueError(f"invalid {what} ({type(exc).__name__}: {exc}); {_hint(kind)}") from None


def _hint(kind: type[BaseModel]) -> str:
    name = kind.__name__
    return (
        f"build it with {name}(...) or {name}.model_validate(...), not model_construct "
        "or model_copy(update=...), which skip the checks"
    )
