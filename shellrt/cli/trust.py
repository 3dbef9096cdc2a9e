"""``shellrt trust``: say which workspaces' own settings files shellrt may obey.

    shellrt trust add ~/repo     # record ~/repo's settings files as they are now
    shellrt trust status ~/repo  # which files are trusted, which are not and why
    shellrt trust ls             # every trusted workspace
    shellrt trust rm ~/repo      # forget it

A recorded file that changes (a commit, a command an agent ran) is untrusted
again until the next ``trust add``. See docs/permissions.md, "Workspace trust".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "trust",
        help="trust a workspace's own settings files (hooks, allow rules, modes, MCP servers)",
        description="Manage the per-user store of trusted workspaces ($SHELLRT_TRUST_STORE, else "
        "$XDG_CONFIG_HOME/shellrt/trusted-workspaces.json).",
    )
    sub = parser.add_subparsers(dest="trust_command", metavar="SUBCOMMAND")
    add = sub.add_parser("add", help="trust DIR's settings files as they are now")
    add.add_argument("directory", type=Path)
    add.add_argument(
        "--settings",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="also trust FILE, a settings file inside DIR that sessions get with --settings "
        "(repeatable; a later `trust add` without it forgets it)",
    )
    add.set_defaults(func=_add)
    status = sub.add_parser("status", help="show which of DIR's settings files are trusted")
    status.add_argument("directory", type=Path, nargs="?", default=Path("."))
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=_status)
    ls = sub.add_parser("ls", help="list trusted workspaces")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_ls)
    rm = sub.add_parser("rm", help="forget DIR")
    rm.add_argument("directory", type=Path)
    rm.set_defaults(func=_rm)
    parser.set_defaults(func=lambda _args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _add(args: argparse.Namespace) -> int:
    from shellrt.permissions.caller_home import caller_home
    from shellrt.permissions.server_lines import host_commands
    from shellrt.permissions.settings import load_settings_file
    from shellrt.permissions.shown import for_person
    from shellrt.permissions.trust import (
        TrustStoreError,
        record_trust,
        settings_file_rel,
        trust_store_path,
        workspace_hook_files,
    )

    workspace = args.directory.resolve()
    refused = _links_out(workspace)
    if refused:
        for line in refused:
            print(f"shellrt trust: {for_person(line)}", file=sys.stderr)
        return 1
    loaded = _load_workspace_files(workspace)
    try:
        extra = {settings_file_rel(workspace, path): path for path in args.settings}
    except TrustStoreError as exc:
        print(f"shellrt trust: {for_person(str(exc))}", file=sys.stderr)
        return 1
    for rel, path in extra.items():
        loaded[rel] = load_settings_file(path, "cli", home=caller_home())
        if not loaded[rel].exists:
            print(for_person(f"shellrt trust: --settings {path} does not exist"), file=sys.stderr)
            return 1
    hooks = {
        rel: workspace_hook_files(workspace, host_commands(f, workspace))
        for rel, f in loaded.items()
        if f.exists
    }
    try:
        files = record_trust(workspace, digests={rel: f.digest for rel, f in loaded.items()}, hooks=hooks)
    except TrustStoreError as exc:
        print(f"shellrt trust: {for_person(str(exc))}", file=sys.stderr)
        return 1
    present = [rel for rel, digest in files.items() if digest is not None]
    print(for_person(f"trusted {workspace} ({', '.join(present) or 'no settings files yet'}) in {trust_store_path()}"))
    # The repository wrote these hook commands and rules: shown, never obeyed by the terminal.
    for line in _links_in(workspace, loaded):
        print(f"  {for_person(line)}")
    for line in _what_is_trusted(loaded, workspace):
        print(f"  {for_person(line)}")
    for line in _hook_files_lines(hooks):
        print(f"  {for_person(line)}")
    return 0


def _links_out(workspace: Path) -> list[str]:
    """A workspace settings file that is a symlink out of the workspace: refused, not recorded.

    Sessions do not read it (it is the repository's choice of a file elsewhere), so what the
    operator would review here is not what a session loads."""
    from shellrt.permissions.shown import for_person, shell_word
    from shellrt.permissions.trust import WORKSPACE_SETTINGS_FILES, link_out_of

    lines = []
    for rel in WORKSPACE_SETTINGS_FILES:
        real = link_out_of(workspace, rel)
        if real is not None:
            # The target is the repository's choice: quoted in the commands we suggest (round 19).
            target, link = shell_word(str(real)), shell_word(str(workspace / rel))
            lines.append(
                f"{for_person(str(workspace / rel))} is a symlink to {for_person(str(real))}, outside the "
                "workspace: sessions never read it, so it cannot be trusted; nothing was recorded. Copy the "
                f"file into the workspace (cp --remove-destination {target} {link}) or pass it to sessions "
                f"with --settings {target}, then run `shellrt trust add {shell_word(str(workspace))}` again"
            )
    return lines


def _links_in(workspace: Path, loaded: dict[str, Any]) -> list[str]:
    """Which recorded files are symlinks to another file of the workspace (what was read)."""
    import os

    lines = []
    root = os.path.realpath(workspace)
    for rel, f in loaded.items():
        real = os.path.realpath(workspace / rel)
        if f.exists and real != os.path.join(root, rel):
            shown = os.path.relpath(real, root)
            lines.append(f"{rel}: a symlink to {shown}: that file's content is what was shown and recorded")
    return lines


def _hook_files_lines(hooks: dict[str, Any]) -> list[str]:
    """Which workspace files the trusted hooks run (their digests are recorded too)."""
    lines = []
    for rel, record in hooks.items():
        for path, digest in record.files.items():
            state = (
                "absent now: a file created there later needs trust again" if digest is None else "recorded"
            )
            lines.append(f"{rel}: hook file {path} ({state})")
        for command in record.untrackable:
            watched = ", ".join(record.dirs)
            lines.append(
                f"{rel}: untrackable hook command {command}: any change below {watched} needs "
                "`shellrt trust add` again"
            )
        for problem in record.problems():
            lines.append(
                f"{rel}: WARNING: {problem}: its hooks, rules and modes stay untrusted until it is fixed"
            )
    return lines


def _load_workspace_files(workspace: Path) -> dict[str, Any]:
    """Each workspace settings file, read once: what is described is what gets recorded."""
    from shellrt.permissions.caller_home import caller_home
    from shellrt.permissions.settings import load_settings_file
    from shellrt.permissions.sources import as_sessions_read
    from shellrt.permissions.trust import WORKSPACE_SETTINGS_FILES

    # read as sessions read them: never through a symlink out of the workspace, '~' their home,
    # ./.mcp.json for its servers only (what is shown is what sessions obey; round 56)
    home = caller_home()
    return {
        rel: as_sessions_read(load_settings_file(workspace / rel, "project", home=home, inside=workspace))
        for rel in WORKSPACE_SETTINGS_FILES
    }


def _what_is_trusted(loaded_files: dict[str, Any], workspace: Path) -> list[str]:
    """What the operator just agreed to: hooks and servers that will run, rules and modes that widen."""
    lines = []
    for rel, loaded in loaded_files.items():
        if not loaded.exists:
            continue
        if loaded.broken:
            lines.append(f"{rel}: cannot be used ({'; '.join(loaded.diagnostics) or 'unreadable'})")
        for hook in loaded.hooks:
            lines.append(f"{rel}: {hook.event} hook runs on this machine: {hook.command}")
        allows = [r.text for r in loaded.rules if r.kind == "allow"]
        if allows:
            lines.append(f"{rel}: allow rules: {', '.join(allows)}")
        if loaded.default_mode:
            lines.append(f"{rel}: defaultMode {loaded.default_mode}")
        lines += [f"{rel}: {line}" for line in _server_lines(loaded.mcp_servers, workspace)]
        lines += [f"{rel}: {line}" for line in _widening_lines(loaded)]
    return lines


def _server_lines(servers: dict[str, Any], workspace: Path) -> list[str]:
    """What each MCP server is, as hooks are shown by their command (red team round 28): a name
    (``eslint``) said nothing of ``sh -c 'curl … | sh'`` or ``npx -y <package>``, and a URL's
    server was listed as started on this machine."""
    import shlex

    from shellrt.permissions.server_lines import server_lines

    lines = []
    for name, raw in sorted(servers.items()):
        url = raw.get("url") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and raw.get("enabled", True) is False:
            lines.append(f"MCP server {name} (disabled)")
        elif server_lines({name: raw}, [workspace]):  # a stdio server a session starts
            env = raw.get("env") if isinstance(raw.get("env"), dict) else {}
            assigned = [f"{key}={value}" for key, value in sorted(env.items())]  # LD_PRELOAD, PYTHONPATH…
            words = shlex.join([*assigned, raw["command"], *raw.get("args", [])])  # as written in the file
            where = _server_cwd(raw.get("cwd"))
            lines.append(f"MCP server {name} runs on this machine: {words}{where}")
        elif isinstance(url, str):
            lines.append(f"MCP server {name} is reached at {url}")
        else:
            lines.append(f"MCP server {name} (not startable as written: see `shellrt tools`)")
    return lines


def _server_cwd(cwd: object) -> str:
    """Where a stdio server starts, as the operator should read it: a relative ``cwd`` is resolved
    against the directory the serving process runs in, not the workspace (round 56 hostrepo2's
    Left: ``(in tools)`` read as the workspace's ``tools``)."""
    if not isinstance(cwd, str):
        return ""
    if os.path.isabs(cwd):
        return f" (in {cwd})"
    return f" (in {cwd}, relative to the directory shellrt is started from, not the workspace)"


def _widening_lines(loaded: Any) -> list[str]:
    """The rest of what trust turns on (what an untrusted file's ``_tighten_only`` drops)."""
    lines = []
    if loaded.additional_directories:
        dirs = ", ".join(str(d) for d in loaded.additional_directories)
        lines.append(f"additionalDirectories (commands may read and write there): {dirs}")
    sandbox = loaded.sandbox if isinstance(loaded.sandbox, dict) else {}
    for key in ("unmaskDefaults", "unmaskedPaths"):
        value = sandbox.get(key)
        if value:
            shown = ", ".join(map(str, value)) if isinstance(value, list) else json.dumps(value)
            lines.append(f"sandbox.{key} (secrets shown to commands): {shown}")
    network = sandbox.get("network")
    domains = network.get("allowedDomains") if isinstance(network, dict) else None
    if domains:
        shown = ", ".join(map(str, domains)) if isinstance(domains, list) else json.dumps(domains)
        lines.append(f"sandbox.network.allowedDomains (hosts commands may reach): {shown}")
    if loaded.web_fetch:
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(loaded.web_fetch.items()))
        lines.append(f"webFetch: {shown}")
    return lines


def _status(args: argparse.Namespace) -> int:
    from shellrt.permissions.server_lines import host_commands
    from shellrt.permissions.shown import for_person
    from shellrt.permissions.trust import assess_trust

    trust = assess_trust(args.directory)
    for rel, loaded in _load_workspace_files(trust.workspace).items():
        commands = host_commands(loaded, trust.workspace)  # hooks and stdio MCP servers (round 22)
        if rel in trust.trusted and commands:  # the files they run must be as trusted too
            trust.is_trusted_loaded(rel, loaded.digest, commands)
    if args.json:
        print(json.dumps(trust.describe(), indent=2))
        return 0
    for line in trust.diagnostics:
        print(f"shellrt trust: {for_person(line)}", file=sys.stderr)
    rows = [(rel, d) for rel, d in trust.digests.items() if d is not None]
    if not rows:
        print(for_person(f"{trust.workspace}: no workspace settings files"))
    for rel, _ in rows:
        verdict = "trusted" if rel in trust.trusted else f"NOT trusted ({trust.untrusted.get(rel)})"
        print(for_person(f"{trust.workspace / rel}: {verdict}"))
    return 0 if not trust.untrusted else 1


def _ls(args: argparse.Namespace) -> int:
    from shellrt.permissions.shown import for_person
    from shellrt.permissions.trust import TrustStoreError, list_trusted

    try:
        workspaces = list_trusted()
    except TrustStoreError as exc:
        print(f"shellrt trust: {for_person(str(exc))}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(workspaces, indent=2, sort_keys=True))
        return 0
    for path, entry in sorted(workspaces.items()):
        files = entry.get("files", {}) if isinstance(entry, dict) else {}
        present = [rel for rel, digest in files.items() if digest]
        trusted_at = entry.get("trusted_at", "?")
        print(for_person(f"{path}  (trusted {trusted_at}; {', '.join(present) or 'no settings files'})"))
    return 0


def _rm(args: argparse.Namespace) -> int:
    from shellrt.permissions.shown import for_person
    from shellrt.permissions.trust import TrustStoreError, revoke_trust

    try:
        found = revoke_trust(args.directory)
    except TrustStoreError as exc:
        print(f"shellrt trust: {for_person(str(exc))}", file=sys.stderr)
        return 1
    if not found:
        print(for_person(f"shellrt trust: {args.directory.resolve()} was not trusted"), file=sys.stderr)
        return 1
    return 0
