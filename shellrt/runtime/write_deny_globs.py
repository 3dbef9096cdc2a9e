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
layer matches a deny. Names are also compared as a case- or normalisation-folding filesystem
reads them (`sandbox._namefold`, red team round 27 fold2): ``Edit(./Secrets/**)`` names the
``SECRETS/x`` a command makes there (fails closed where names do not fold). Docker's copy mode: the guard walks the session's private
copy; ``views`` maps it back to the workspace the rules are anchored at.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from sandbox._namefold import fold_path
from sandbox.confine import relative_to
from shellrt.permissions.globs import glob_matches
from shellrt.permissions.rules import WRITE_RULE_TOOLS, PermissionRule, _linked_anchors, pattern_base
from shellrt.permissions.ruleset import RuleSet

__all__ = ["WriteDenyGlobs"]

#: (anchor directory with a trailing ``/``, glob relative to it, its literal chunks, the rule as
#: described) per form of each rule.
_Compiled = tuple[tuple[str, str, tuple[str, ...], str], ...]
#: Directories remembered as covered or not (a matched directory covers all below it).
_MAX_COVERED = 20_000


class WriteDenyGlobs:
    """``match(path, root)``: the deny rule that keeps ``path`` from being written, or None."""

    def __init__(
        self, rules: RuleSet, views: Mapping[str, str] | None = None, *, keeps_content: bool = True
    ) -> None:
        self._rules = rules
        #: The backend binds existing matches read-only (bwrap, docker): the check need not read
        #: them to put them back (`shellrt.supervisor.protect.WriteDeny.keeps_content`).
        self.keeps_content = keeps_content
        #: A guard root (a host view) -> the path rules see there (docker copy -> the workspace).
        self._views = {os.path.realpath(k): str(v) for k, v in (views or {}).items()}
        self._key: tuple[PermissionRule, ...] | None = None
        self._compiled: _Compiled = ()
        #: The same rules with anchor and pattern folded (`fold_path`): matched against the folded path.
        self._folded: _Compiled = ()
        self._folded_changed: _Compiled = ()
        self._covered: dict[tuple[str, str], bool] = {}
        #: ((the rule list as last seen, managed_only), the deny rules that counted then).
        self._seen: tuple[tuple[tuple[PermissionRule, ...], bool], tuple[PermissionRule, ...]] | None = None

    def version(self) -> object:
        """Changes whenever the rules that count do (compared, not counted: the list is mutable);
        `match` uses the rules as of the last call (the guard asks once per scan)."""
        self._compile()
        return self._key

    def match(self, path: str, root: str) -> str | None:
        compiled = self._compiled if self._key is not None else self._compile()
        if not compiled:
            return None
        logical = self._views.get(root)
        if logical is not None:
            rel = relative_to(path, root)
            path = logical if rel in (None, "") else f"{logical}/{rel}"
        forms = [path]
        if not path.isascii():  # one name in two Unicode normal forms is the same name to a person
            forms.append(unicodedata.normalize("NFC", path))
        found = self._first(compiled, forms)
        if found is None:  # as a folding filesystem reads both (a path that folds to itself: only
            folded = fold_path(path)  # the rules that changed by folding are left to try)
            found = self._first(self._folded if folded != path else self._folded_changed, (folded,))
        return found

    def _first(self, compiled: _Compiled, forms: list[str] | tuple[str, ...]) -> str | None:
        """The first rule of ``compiled`` that names one of ``forms``."""
        for prefix, pattern, chunks, text in compiled:
            for form in forms:
                # Cheap first: a match holds every literal run of the pattern (``.pem``); the
                # glob itself is a linear NFA in Python, ~0.2 ms a path.
                if not form.startswith(prefix):
                    continue
                rel = form[len(prefix) :]
                if not rel or not all(chunk in rel for chunk in chunks):
                    continue
                parent = rel.rpartition("/")[0]
                if (parent and self._dir_covered(pattern, parent)) or glob_matches(pattern, rel):
                    return text
        return None

    def _dir_covered(self, pattern: str, parent: str) -> bool:
        key = (pattern, parent)
        found = self._covered.get(key)
        if found is None:
            if len(self._covered) >= _MAX_COVERED:
                self._covered.clear()
            found = self._covered[key] = glob_matches(pattern, parent)
        return found

    def _current(self) -> tuple[PermissionRule, ...]:
        # Asked ~4 times a command (each scan asks `version`); the filter below costs ~3 us over
        # a dozen rules, a copy of the list compared to the last one ~0.3 us. Sound: the deny
        # rules that count depend only on the list's rules (frozen) and ``managed_only``, and
        # the copy holds every rule it was taken of (a rule replaced in place, or the list
        # replaced, compares unequal). Another class of rule set is filtered every time.
        rules = self._rules
        if type(rules) is not RuleSet:
            return self._filter()
        seen = (tuple(rules.rules), rules.managed_only)
        if self._seen is not None and self._seen[0] == seen:
            return self._seen[1]
        current = self._filter()
        self._seen = (seen, current)
        return current

    def _filter(self) -> tuple[PermissionRule, ...]:
        return tuple(
            r
            for r in self._rules.of_kind("deny")
            if r.tool in WRITE_RULE_TOOLS and r.spec_kind == "path" and r.specifier is not None
        )

    def _compile(self) -> _Compiled:
        current = self._current()
        if current == self._key:
            return self._compiled
        out: list[tuple[str, str, tuple[str, ...], str]] = []
        for rule in current:
            assert rule.specifier is not None
            based = pattern_base(rule.specifier, rule.origin.root, self._rules.home)
            if based is None:
                continue
            base, pattern = based
            nfc = pattern if pattern.isascii() else unicodedata.normalize("NFC", pattern)
            text = rule.text
            for anchor in dict.fromkeys((os.path.realpath(base), os.path.normpath(base))):
                out.append((anchor.rstrip("/") + "/", nfc, _chunks(nfc), text))
            for anchor, rest in _linked_anchors(Path(base), pattern):  # a link in any normal form (round 56)
                glob = "/" + rest if rest else "**"
                out.append((anchor.rstrip("/") + "/", glob, _chunks(glob), text))
        self._key, self._compiled = current, tuple(out)
        folded = ((fold_path(a), fold_path(p), text) for a, p, _, text in out)
        self._folded = tuple(dict.fromkeys((a, p, _chunks(p), text) for a, p, text in folded))
        spelt = {(a, p) for a, p, _, _ in out}
        self._folded_changed = tuple(e for e in self._folded if (e[0], e[1]) not in spelt)
        self._covered.clear()
        return self._compiled


def _chunks(pattern: str) -> tuple[str, ...]:
    """The runs of literal characters of ``pattern`` outside classes and alternates, split at
    ``/`` (``**/`` may match nothing): each occurs in every path the pattern matches."""
    out: list[str] = []
    run: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            run.append(pattern[i + 1])
            i += 2
            continue
        if c in "*?[{/":
            if run:
                out.append("".join(run))
                run = []
            if c in "[{":  # skip the class or the alternates (what they match is not literal)
                close = _closing(pattern, i)
                if close is None:
                    return tuple(out)  # taken literally by the matcher; just stop filtering here
                i = close
        else:
            run.append(c)
        i += 1
    if run:
        out.append("".join(run))
    return tuple(x for x in out if x not in (".", ".."))


def _closing(pattern: str, i: int) -> int | None:
    """Where the class or alternates opened at ``pattern[i]`` close, as `shellrt.permissions.globs`
    reads them (a class: no escapes, a leading ``]`` is a member; alternates: ``\\x`` skipped)."""
    j = i + 1
    if pattern[i] == "[":
        if j < len(pattern) and pattern[j] in "!^":
            j += 1
        if j < len(pattern) and pattern[j] == "]":
            j += 1
        close = pattern.find("]", j)
        return close if close >= 0 else None
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "}":
            return j
        j += 1
    return None
