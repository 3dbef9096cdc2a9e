"""A caller's pydantic option as its validators would have made it, whatever built the object.

``X.model_construct(...)`` and ``x.model_copy(update=...)`` skip every validator, and a harness
may build a session's options that way (for speed, or to vary one field of a checked one). The
Runtime used what it was given: a `SandboxPolicy` with network ``"off"`` (not ``none``) gave bwrap's
commands the host's network, and a writable root through a repository's symlink (refused since
round 12) reached the backend (red team round 35). Options are taken once per session, so they
are validated afresh there (a few microseconds), by the expected class itself: a subclass does not
bring validators of its own.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["revalidated"]

M = TypeVar("M", bound=BaseModel)


def revalidated(value: Any, kinds: tuple[type[M], ...], what: str) -> M:
    """``value`` validated afresh as the first of ``kinds`` it is an instance of; `TypeError` when it
    is none of them, `ValueError` saying what is wrong and how to build one when it does not validate."""
    names = " or ".join(kind.__name__ for kind in kinds)
    kind = next((k for k in kinds if isinstance(value, k)), None)
    if kind is None:
        raise TypeError(f"{what} must be a {names}, got {type(value).__name__}")
    hint = (
        f"build it with {kind.__name__}(...) or {kind.__name__}.model_validate(...), not model_construct "
        "or model_copy(update=...), which skip the checks"
    )
    try:
        return kind.model_validate(value.model_dump(round_trip=True, warnings=False))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0] if exc.error_count() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(part) for part in first.get("loc", ())) or what
        raise ValueError(f"invalid {what} ({where}: {first.get('msg')}); {hint}") from None
    except Exception as exc:  # a field model_construct left out, a value no dump can read
        raise ValueError(f"invalid {what} ({type(exc).__name__}: {exc}); {hint}") from None
