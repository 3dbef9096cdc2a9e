"""A list option of the Runtime given as one string: refused, not taken letter by letter.

A ``str`` is a ``Sequence[str]`` to Python, so ``Runtime(..., deny="Bash")`` became the rules ``B``,
``a``, ``s``, ``h``: the deny the caller meant was lost, and in ``bypassPermissions`` mode the
command it should have refused ran (red team round 35). ``bytes`` iterate as ints: refused too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["refuse_bare_strings"]


def refuse_bare_strings(**options: Any) -> None:
    """`TypeError` naming the first option given as a ``str`` or ``bytes`` instead of a list of them."""
    for name, value in options.items():
        if isinstance(value, (str, bytes, bytearray)):
            raise TypeError(
                f"{name} must be a list, got the single {type(value).__name__} {value[:80]!r}: pass "
                f"{name}=[{value[:80]!r}] (a string is taken letter by letter, and a rule so split is lost)"
            )
