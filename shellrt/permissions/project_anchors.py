"""What a committed command allow rule runs, pinned when the operator trusts the workspace.

Why (red team round 23; rounds 21 and 22 left it): a trusted ``.claude/settings.json`` with
``Bash(make test)`` was bound to its own bytes, not to the ``Makefile`` it runs: a teammate's
commit of another ``Makefile`` (or ``package.json`` scripts, ``conftest.py``, ``tox.ini``) ran
under the rule, unasked, in every later session. ``shellrt trust add`` now records, for each
``Bash``/``PowerShell`` allow rule of a committed project file, what the rule's own command runs
from the workspace root (`content_anchor.named_files`: the script it names, the manifests its
program reads; a glob such as ``./scripts/*`` expanded to the files there now) in the rule
anchor store (`rule_anchors`), and a session from the store's trust applies the rule only while
what a part names is among them, unchanged, as round 21 does for saved answers. A changed
``Makefile`` makes ``make test`` ask (a headless session: deny), saying to run
``shellrt trust add`` again; the rest of the file stays trusted.
"""

from __future__ import annotations

import glob
import os
import shlex
from pathlib import Path

from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.content_anchor import Fingerprint, named_files
from shellrt.permissions.interfaces import CommandPart
from shellrt.permissions.rule_anchors import ANCHORED_TOOLS, MAX_FINGERPRINTS, record_anchors
from shellrt.permissions.rules import PermissionRule

__all__ = ["PROJECT_FILES", "record_project_anchors", "record_project_anchors_of", "rule_files"]

#: The committed workspace settings files whose command rules are pinned (`discover_files`'s
#: ``project`` files that hold rules).
PROJECT_FILES = (".shellrt/settings.json", ".claude/settings.json")
_GLOB = frozenset("*?[")


def rule_files(rule: PermissionRule, workspace: Path) -> frozenset[Fingerprint]:
    """What ``rule``'s own command runs from ``workspace`` (its root), fingerprinted now; empty
    when its text is not a command (then it covers only parts that name no code)."""
    spec = (rule.specifier or "").strip()
    for suffix in (":*", " *"):  # a trailing "*" of a word (`./scripts/*`) is a glob: kept
        if spec.endswith(suffix):
            spec = spec[: -len(suffix)].rstrip()
            break
    try:
        words = shlex.split(spec)
    except ValueError:
        return frozenset()
    if not words:
        return frozenset()
    root = os.path.realpath(workspace)
    argvs = [words]
    globbed = [i for i, w in enumerate(words) if _GLOB & set(w)]
    if globbed:  # ``./scripts/*``: each file it matches now (one globbed word, bounded)
        index = globbed[0]
        matches = sorted(glob.glob(os.path.join(root, words[index])))[:MAX_FINGERPRINTS]
        argvs = [[*words[:index], "./" + os.path.relpath(m, root), *words[index + 1 :]] for m in matches]
    out: set[Fingerprint] = set()
    for argv in argvs:
        part = CommandPart(text=shlex.join(argv), argv=tuple(argv), name=os.path.basename(argv[0]), dirs=(root,))
        out |= named_files(part)
    return frozenset(out)


def record_project_anchors(workspace: Path, rules: dict[str, list[PermissionRule]]) -> None:
    """Record what each command allow rule of each committed file (rel -> its rules) runs, replacing
    what an earlier ``trust add`` recorded for it (an older ``Makefile`` is not approved too)."""
    for rel, file_rules in rules.items():
        for rule in file_rules:
            if rule.kind == "allow" and rule.tool in ANCHORED_TOOLS:
                record_anchors(workspace, rel, [rule.text], rule_files(rule, workspace), replacing=True)


def record_project_anchors_of(workspace: Path, recorded: dict[str, str | None]) -> None:
    """`record_project_anchors` for the committed files of ``workspace`` that trust recorded
    (``recorded``: rel -> digest, None when absent), read now."""
    from shellrt.permissions.settings import load_settings_file

    rules = {}
    for rel in PROJECT_FILES:
        if recorded.get(rel) is None:
            continue
        loaded = load_settings_file(workspace / rel, "project", home=caller_home(), inside=workspace)
        if loaded.exists:
            rules[rel] = list(loaded.rules)
    record_project_anchors(workspace, rules)
