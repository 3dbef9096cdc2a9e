"""``shellrt permissions list``: the effective rules, hooks and settings files, with their sources.

Apart from ``_permissions_check`` because listing needs only the merged settings and their hooks
(`governed_settings`): not the decision engine, the command analysis or the tools, which
``check`` loads (round 55: about half of ``list``'s start-up was theirs).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

__all__ = ["print_diagnostics", "run_list"]


def run_list(args: argparse.Namespace) -> int:
    """``shellrt permissions list``: effective rules, hooks and files, with their sources."""
    from shellrt.permissions.governance import governed_settings
    from shellrt.permissions.shown import for_person

    settings, _hooks = governed_settings(
        args.workspace.resolve(),
        settings_files=args.settings,
        mode=args.mode,
        allow=args.allow,
        deny=args.deny,
        trust_workspace=args.trust_workspace,
    )
    described = settings.describe()
    if args.json:
        print(json.dumps(described, indent=2))
        return 0
    print(f"mode: {described['mode']} (from {described['mode_source']})")
    if described["degraded"]:
        print("DEGRADED: a settings file could not be read; allow rules and bypass mode are off")
    for kind in ("deny", "ask", "allow"):
        rules = [r for r in described["rules"] if r["kind"] == kind]
        print(f"{kind}:" + ("" if rules else " (none)"))
        for r in rules:
            ignored = "  (ignored: managed policy allows managed allow rules only)" if r["ignored"] else ""
            print(for_person(f"  {r['rule']:<40} {r['source']}{ignored}"))
    if described["hooks"]:
        print("hooks:")
        for h in described["hooks"]:
            matcher = h["matcher"] or "*"
            print(for_person(f"  {h['event']:<18} {matcher:<16} {h['command']}  [{h['source']}]"))
    if described["additional_directories"]:
        print("additional directories: " + ", ".join(for_person(d) for d in described["additional_directories"]))
    print("settings files (highest precedence first):")
    for f in described["files"]:
        print(for_person(f"  {f['source']:<8} {f['path']}" + ("" if f["exists"] else "  (absent)")))
    print_diagnostics(settings.diagnostics)
    return 0


def print_diagnostics(diagnostics: Sequence[str]) -> None:
    """The settings' and hooks' diagnostics, escaped: they quote a repository's files and names (round 19)."""
    from shellrt.permissions.shown import for_person

    if diagnostics:
        print("diagnostics:")
        for line in diagnostics:
            print(f"  {for_person(line)}")
