"""The session's ``Edit``/``Write`` deny rules as a predicate on names, for the post-command check.

A mount covers only what exists when the sandbox starts, so ``Edit(**/*.pem)`` or
``Write(**/.env)`` cannot keep a script (which the Bash analysis cannot look into)
from creating ``new.pem``; the supervisor's protected-files check
(`shellrt.supervisor.protect.WorkspaceGuard`) reverts such a file after the fact.
This is what it asks: which deny rule names a path it found. Read live from the
engine's rule set (rules added mid-session count), compiled once per rule set.

Paths are matched as the walk spells them (resolved directories, the entry's own
name), against the rule's base in its literal and resolved forms and, when the
rule names a place through a symbolic link, where that leads -- as the permission
layer matches a deny. Docker's copy mode: the guard walks the session's private
copy; ``views`` maps it back to the workspace the rules are anchored at.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from sandbox.confine import relative_to
from shellrt.permissions.globs import glob_matches
from shellrt.permissions.rules import WRITE_RULE_TOOLS, PermissionRule, _linked_anchor, pattern_base
from shellrt.permissions.ruleset import RuleSet

__all__ = ["WriteDenyGlobs"]

#: (anchor directory, glob relative to it, the rule as it is described) per form of each rule.
_Compiled = tuple[tuple[str, str, str], ...]


class WriteDenyGlobs:
    """``match(path, root)``: the deny rule that keeps ``path`` from being written, or None."""

    def __init__(self, rules: RuleSet, views: Mapping[str, str] | None = None) -> None:
        self._rules = rules
        #: A guard root (a host view) -> the path rules see there (docker copy -> the workspace).
        self._views = {os.path.realpath(k): str(v) for k, v in (views or {}).items()}
        self._key: tuple[PermissionRule, ...] | None = None
        self._compiled: _Compiled = ()

    def version(self) -> object:
        """Changes whenever the rules that count do (compared, not counted: the list is mutable)."""
        return self._current()

    def match(self, path: str, root: str) -> str | None:
        compiled = self._compile()
        if not compiled:
            return None
        logical = self._views.get(root)
        if logical is not None:
            rel = relative_to(path, root)
            path = logical if rel in (None, "") else f"{logical}/{rel}"
        forms = [path]
        if not path.isascii():  # one name in two Unicode normal forms is the same name to a person
            forms.append(unicodedata.normalize("NFC", path))
        for anchor, pattern, text in compiled:
            for form in forms:
                rel = relative_to(form, anchor)
                if rel and glob_matches(pattern, rel):
                    return text
        return None

    def _current(self) -> tuple[PermissionRule, ...]:
        return tuple(
            r
            for r in self._rules.of_kind("deny")
            if r.tool in WRITE_RULE_TOOLS and r.spec_kind == "path" and r.specifier is not None
        )

    def _compile(self) -> _Compiled:
        current = self._current()
        if current == self._key:
            return self._compiled
        out: list[tuple[str, str, str]] = []
        for rule in current:
            assert rule.specifier is not None
            based = pattern_base(rule.specifier, rule.origin.root, self._rules.home)
            if based is None:
                continue
            base, pattern = based
            nfc = pattern if pattern.isascii() else unicodedata.normalize("NFC", pattern)
            text = rule.text
            for anchor in dict.fromkeys((os.path.realpath(base), os.path.normpath(base))):
                out.append((anchor, nfc, text))
            linked = _linked_anchor(Path(base), pattern)
            if linked is not None:
                anchor, rest = linked
                out.append((anchor, "/" + rest if rest else "**", text))
        self._key, self._compiled = current, tuple(out)
        return self._compiled
