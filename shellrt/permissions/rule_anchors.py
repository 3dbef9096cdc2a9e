"""What a saved "allow always in this project" rule allowed: the content fingerprints of the code
the approved call ran (`content_anchor`), kept outside the workspace.

Why (red team round 21): a rule file names words (``Bash(make test)``), not what they run. The
session's copy of a remembered rule was anchored (round 18); once saved to
``.shellrt/settings.local.json`` it was obeyed by every later session after a command or a
teammate's commit rewrote the ``Makefile``, ``package.json`` or ``conftest.py`` it runs, and in
another checkout of the repository with other content. The fingerprints cannot live in the
settings file (a command in the workspace rewrites it), so they live next to the trust store,
keyed by the workspace's real path, the settings file and the rule's text.

A saved command rule with no record here (saved before this round, written by hand, copied from
another checkout) covers only parts that name no code: the first ``make test`` asks, and an
"always in this project" answer records what it ran. The store is read and written like the
trust store (0600, never through a link, never one inside the workspace, a bad one ignored: then
every such rule asks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from shellrt.permissions.content_anchor import Fingerprint
from shellrt.permissions.private_json import UnusableStore, read_private_json, write_private_json
from shellrt.permissions.rules import PermissionRule
from shellrt.permissions.trust_paths import rule_anchors_path

__all__ = ["ANCHORED_TOOLS", "MAX_FINGERPRINTS", "anchor_saved_rules", "load_anchors", "record_anchors"]

#: Tools whose rules cover command parts (the ones `content_anchor` fingerprints).
ANCHORED_TOOLS = frozenset({"Bash", "PowerShell"})
#: Fingerprints kept per rule: past this, only the newest answer's are kept.
MAX_FINGERPRINTS = 512
_MAX_BYTES = 8 << 20


def anchor_saved_rules(
    rules: Sequence[PermissionRule],
    workspace: Path,
    source: str,
    path: Path,
    anchored: frozenset[str] = frozenset({"local"}),
) -> list[PermissionRule]:
    """``rules`` of the settings file ``path``; a command allow rule of a file whose source is in
    ``anchored`` (``local``: where "always in this project" answers are saved; ``project`` too when
    trusted from the store, round 23: `project_anchors`) carries what it allowed (`load_anchors`),
    an empty record when none is kept: it then covers only parts that name no code (the engine asks)."""
    if source not in anchored or not any(r.kind == "allow" and r.tool in ANCHORED_TOOLS for r in rules):
        return list(rules)
    try:
        rel = Path(path).relative_to(workspace).as_posix()
    except ValueError:
        rel = Path(path).name
    recorded = load_anchors(workspace, rel)
    return [
        replace(r, origin=replace(r.origin, files=recorded.get(r.text, frozenset())))
        if r.kind == "allow" and r.tool in ANCHORED_TOOLS
        else r
        for r in rules
    ]


def load_anchors(workspace: Path, settings_rel: str) -> dict[str, frozenset[Fingerprint]]:
    """The recorded fingerprints of each rule of ``settings_rel`` in ``workspace`` (rule text ->
    fingerprints); empty when nothing is recorded or the store is not usable (every rule asks)."""
    data = _read(rule_anchors_path(), workspace)
    entry = _entry(data, workspace, settings_rel)
    out: dict[str, frozenset[Fingerprint]] = {}
    for rule, pairs in entry.items():
        if isinstance(rule, str) and isinstance(pairs, list):
            out[rule] = frozenset(
                (p[0], p[1])
                for p in pairs
                if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
            )
    return out


def record_anchors(
    workspace: Path,
    settings_rel: str,
    rules: Iterable[str],
    files: frozenset[Fingerprint],
    *,
    replacing: bool = False,
) -> Path | None:
    """Add ``files`` to what each of ``rules`` (saved in ``settings_rel``) allowed (``replacing``:
    instead of it, `project_anchors`); the store's path when written, None when it could not be
    (the rules then ask again next session: fail closed)."""
    path = rule_anchors_path()
    if _inside(path, workspace):
        return None
    data = _read(path, workspace)
    if data is None and os.path.lexists(path):
        return None  # unusable (a link, not ours, not JSON): not overwritten; the operator fixes it
    data = data or {}
    anchors = data.setdefault("anchors", {})
    if not isinstance(anchors, dict):
        return None
    per_file = anchors.setdefault(os.path.realpath(workspace), {})
    per_rule = per_file.setdefault(settings_rel, {}) if isinstance(per_file, dict) else None
    if not isinstance(per_rule, dict):
        return None
    for rule in rules:
        known = None if replacing else per_rule.get(rule)
        old = {(p[0], p[1]) for p in known if isinstance(p, list) and len(p) == 2} if isinstance(known, list) else set()
        merged = old | set(files)
        per_rule[rule] = sorted([list(f) for f in (merged if len(merged) <= MAX_FINGERPRINTS else files)])
    data["version"] = 1
    try:
        _write(path, data)
    except OSError:
        return None
    return path


def _entry(data: dict[str, Any] | None, workspace: Path, settings_rel: str) -> dict[str, Any]:
    anchors = data.get("anchors") if data else None
    per_file = anchors.get(os.path.realpath(workspace)) if isinstance(anchors, dict) else None
    per_rule = per_file.get(settings_rel) if isinstance(per_file, dict) else None
    return per_rule if isinstance(per_rule, dict) else {}


def _read(path: Path, workspace: Path) -> dict[str, Any] | None:
    """The store's JSON; None when absent or not to be used (inside the workspace, a link, not
    owned by us, writable by others, too big, nested too deeply, not a JSON object)."""
    if _inside(path, workspace):
        return None
    try:
        return read_private_json(path, _MAX_BYTES)
    except UnusableStore:
        return None


def _write(path: Path, data: dict[str, Any]) -> None:
    write_private_json(path, data)


def _inside(path: Path, workspace: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(workspace)
    return real == root or real.startswith(root + os.sep)
