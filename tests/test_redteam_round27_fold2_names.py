"""Red team round 27 (fold2): by-name checks that still compared names as spelt.

On a filesystem that folds names (macOS APFS/HFS+, Windows and SMB shares, vfat, an ext4 or tmpfs
directory with ``+F``) ``SECRETS/x`` is ``Secrets/x``, ``.VSCODE/MCP.json`` is ``.vscode/mcp.json``,
``~/.SSH/authorized_keys`` is the operator's, ``.HUSKY/pre-commit`` the hook git runs. This kernel
cannot mount one: the tests check the decisions by name and fail closed where names do not fold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox._hostcode import host_code_reason
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.runtime.write_deny_globs import WriteDenyGlobs
from shellrt.supervisor import _cd_loads, _hgrc_loads
from shellrt.supervisor._protect_home import home_reason
from shellrt.supervisor.protect import WorkspaceGuard, hooks_dir_reason, protected_reason

#: Table names spelt otherwise, each a file a host program obeys (a name with capitals folded,
#: a directory of the table, a tree of the table).
OBEYED = (
    ".idea/watcherTasks.XML",
    ".IDEA/WATCHERTASKS.xml",
    ".RPROFILE",
    ".VSCODE/MCP.json",
    ".Cursor/Hooks.json",
    ".HG/HGRC",
    ".hg./hgrc",
    ".SL/Config",
    ".Yarn/Releases/yarn-4.cjs",
    ".kiro/HOOKS/x.json",
    ".Idea/RunConfigurations/x.xml",
    "MISE/CONF.D/x.toml",
    "Mise.toml",
    "x.Code-Workspace",
)


def test_write_deny_globs_fold_rule_and_path(tmp_path: Path) -> None:
    root = str(tmp_path)
    rules = RuleSet(
        [
            parse_rule(t, "deny", RuleOrigin("session", root=tmp_path))
            for t in ("Edit(./Secrets/**)", "Write(**/*.PEM)")
        ],
        home=tmp_path,
    )
    deny = WriteDenyGlobs(rules)
    for rel in (
        "SECRETS/x",
        "secrets/x",
        "Secrets/x",
        "secrets./x",
        "s\u200decrets/x",
        "a/KEY.pem",
        "b/k.Pem",
    ):
        assert deny.match(f"{root}/{rel}", root) is not None, rel
    assert deny.match(f"{root}/docs/x", root) is None and deny.match(f"{root}/k.pm", root) is None


def test_obeyed_table_names_fold() -> None:
    missed = [rel for rel in OBEYED if protected_reason(Path("/w") / rel) is None]
    assert missed == []
    assert protected_reason("/w/src/Makefile.txt") is None


def test_home_names_fold() -> None:
    home = os.path.realpath(os.environ["HOME"])
    for rel in (
        ".SSH/authorized_keys",
        ".ssh/Authorized_Keys",
        ".Local/Bin/ls",
        ".CONFIG/systemd/user/x.service",
    ):
        assert home_reason(f"{home}/{rel}") is not None, rel
        assert protected_reason(f"{home}/{rel}") is not None, rel
    assert home_reason(f"{home}/Projects/x.txt") is None


def test_cd_and_hg_loads_fold() -> None:
    assert _cd_loads.loads_at_cd("/w/.ENVRC") is _cd_loads.envrc_loads
    assert _cd_loads.loads_at_cd("/w/.Mise.TOML") is _cd_loads.mise_loads
    assert _cd_loads.loads_at_cd("/w/.HG/HGRC") is _hgrc_loads.hgrc_loads
    assert _hgrc_loads.is_hg_config("/w/.Sl/CONFIG")
    assert _cd_loads.loads_at_cd("/w/readme.md") is None


def test_hooks_path_folds(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "config", "core.hooksPath", ".husky"], check=True)
    (tmp_path / ".husky").mkdir()
    assert hooks_dir_reason(tmp_path / ".husky" / "pre-commit") is not None
    assert hooks_dir_reason(tmp_path / ".HUSKY" / "pre-commit") is not None
    assert hooks_dir_reason(tmp_path / "src" / "pre-commit") is None


def test_host_code_folds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A root on the host's sys.path: a ``.PTH`` file or ``JSON.py`` there is what Python reads on
    a folding filesystem (fails closed elsewhere)."""
    root = os.path.realpath(tmp_path)
    monkeypatch.setattr(sys, "path", [root, *sys.path])
    for name in ("x.pth", "x.PTH", "x.pth.", "json.py", "JSON.py", "Json/__init__.py", "SiteCustomize.py"):
        assert host_code_reason(f"{root}/{name}", [root]) is not None, name
    assert host_code_reason(f"{root}/zz_not_a_module_q.py", [root]) is None


def _kept_after_scan(
    tmp_path: Path, planted: tuple[str, ...], ordinary: tuple[str, ...], *, envrc: str = "", deny: str = ""
) -> list[str]:
    """Plant ``planted`` and ``ordinary`` after the guard's first scan (an accepted ``.envrc``,
    a deny rule given); the planted files the reverting scan kept (every ordinary one must stay)."""
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    session.mkdir()
    if envrc:
        (ws / ".envrc").write_text(envrc)  # the operator's
    rules = RuleSet([parse_rule(deny, "deny", RuleOrigin("session", root=ws))] if deny else [], home=tmp_path)
    guard = WorkspaceGuard(ws, session, use_inotify=False, write_deny=WriteDenyGlobs(rules))
    try:
        assert guard.scan(revert=False) == []
        for rel in (*planted, *ordinary):
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text("planted\n")
        notes = "\n".join(guard.scan(revert=True))
    finally:
        guard.close()
    assert all((ws / rel).exists() for rel in ordinary), notes
    return [rel for rel in planted if (ws / rel).exists()]


def test_guard_reverts_folded_table_names(tmp_path: Path) -> None:
    kept = _kept_after_scan(tmp_path, (*OBEYED, "SECRETS/new"), ("Notes.TXT",), deny="Edit(./Secrets/**)")
    assert kept == []


def test_guard_folds_what_an_envrc_loads(tmp_path: Path) -> None:
    """``dotenv_if_exists .env.local`` and ``PATH_add bin``: on a folding filesystem a command's
    ``.ENV.Local`` is the file direnv loads and ``BIN/ls`` the operator's next ``ls``."""
    envrc = "dotenv_if_exists .env.local\nPATH_add bin\n"
    kept = _kept_after_scan(
        tmp_path, (".ENV.Local", "BIN/ls", ".env.local."), ("BIN/zz-not-a-program-q",), envrc=envrc
    )
    assert kept == []


def test_git_names_fold(tmp_path: Path) -> None:
    """``.CONFIG/Git/config`` is the operator's git config, a ``.GIT`` directory's work tree its
    parent (where a relative ``core.hooksPath`` lies) on a folding filesystem."""
    from shellrt.supervisor import protect

    assert protected_reason("/w/.CONFIG/Git/config") is not None
    assert protect._user_gitconfig("/w/.Config/GIT", "config", frozenset())
    assert protect._work_tree("/w/.GIT") == "/w" and protect._work_tree("/w/.git.") == "/w"
    assert _kept_after_scan(tmp_path, (".CONFIG/Git/config",), ("Config/x",)) == []


def test_file_tools_fold_what_an_envrc_loads(tmp_path: Path) -> None:
    """The file tools' question (`cd_loaded_reason`): ``.ENV.Local`` and ``BIN/ls`` are what an
    accepted ``.envrc`` loads on a folding filesystem; ``mise/conf.d/X.TOML`` a drop-in."""
    (tmp_path / ".envrc").write_text("dotenv_if_exists .env.local\nPATH_add bin\n")
    (tmp_path / "mise" / "conf.d").mkdir(parents=True)
    (tmp_path / "mise" / "conf.d" / "X.TOML").write_text('[env]\n_.source = "tools/env.sh"\n')
    for rel in (".env.local", ".ENV.Local", ".env.local.", "bin/ls", "BIN/ls", "Tools/Env.sh"):
        assert _cd_loads.cd_loaded_reason(tmp_path / rel) is not None, rel
    assert _cd_loads.cd_loaded_reason(tmp_path / "BIN" / "zz-not-a-program-q") is None


def test_home_inside_the_workspace_by_another_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HOME=/x/WS/home`` with the workspace ``/x/ws`` on a folding filesystem: the same home, so
    a command's ``home/.ssh/authorized_keys`` there is the operator's."""
    monkeypatch.setenv("HOME", str(tmp_path / "WS" / "home"))
    (tmp_path / "ws" / "home").mkdir(parents=True)
    from shellrt.supervisor._protect_home import HomeNames

    names = HomeNames(tmp_path / "ws")
    assert str(tmp_path / "ws" / "home") in names.homes
    assert names.relative(str(tmp_path / "ws" / "home" / ".ssh")) == ".ssh"
    assert names.relative(str(tmp_path / "ws" / "Home" / ".ssh")) == ".ssh"
    assert names.relative(str(tmp_path / "ws" / "src")) is None


def test_host_code_places_inside_a_root_spelt_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host imports from ``/x/ws/.venv/site``; the root is given as ``/x/WS`` (one directory
    on a folding filesystem): the place is inside it, to be bound read-only, as the root spells it."""
    from sandbox._hostcode import host_code_places

    site = tmp_path / "ws" / ".venv" / "site"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    inside, _ = host_code_places([tmp_path / "WS"])
    assert tmp_path / "WS" / ".venv" / "site" in inside
    assert host_code_places([tmp_path / "other"])[0] == []
