"""``$"…"``: bash replaces the text with its translation from a message catalog, then expands that.

bash looks the string up in ``$TEXTDOMAINDIR/<locale>/LC_MESSAGES/$TEXTDOMAIN.mo`` and, unless
``noexpand_translation`` is set, expands the translation as a double-quoted string: a catalog
holding ``msgstr "$(rm x)"`` makes ``echo $"hello"`` run ``rm x``. The command picks the catalog
(``TEXTDOMAINDIR=loc TEXTDOMAIN=x LC_ALL=en_US.UTF-8 bash -c 'echo $"hello"'``), the repository
ships it, and no part shows the code (red team, round 33). Such a word is a part no rule matches.
"""

from __future__ import annotations

from .arith_flow import plan_words
from .nodes import CommandPlan

__all__ = ["translated_word"]


def translated_word(plan: CommandPlan) -> str:
    """The source text of the first ``$"…"`` word of ``plan`` ("" when it has none)."""
    for word in plan_words(plan):
        if "translated" in word.features:
            return word.raw
    return ""
