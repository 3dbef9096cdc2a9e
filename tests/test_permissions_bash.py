"""Rules see everything a Bash command does (issue 17, items 2-4), through the real Bash tool.

Each attack from the issue is a row: the command, the rules, the mode, and the
decision it must not get. The engine, the Bash tool and the command analysis
are the real ones; the repositories are real git repositories on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import Governance, PermissionDecision, build_governance
from shellrt.permissions.rules import SAFE_ENV_NAMES, git_metadata_reason, is_safe_env_name
from shellrt.protocol import ToolContext
from shellrt.tools.bash import Bash
from shellrt.tools.write import WriteTool

pytestmark = pytest.mark.anyio

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
GIT_RULES = ["Bash(git diff:*)", "Bash(ls:*)", "Bash(git log:*)", "Bash(git show:*)"]


def _gov(tmp_path: Path, mode: str = "default", **perms: Any) -> Governance:
    ws = tmp_path / "ws"
    (ws / ".shellrt").mkdir(parents=True, exist_ok=True)
    (ws / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": perms}))
    return build_governance(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json", mode=mode, trust_workspace=True)


def _ctx(ws: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=tmp_path / "session", workspace=ws, cwd=str(ws), allowed_roots=(ws,)
    )


async def _decide(gov: Governance, command: str, tmp_path: Path) -> PermissionDecision:
    bash = Bash()
    ws = gov.settings.workspace
    return await gov.engine.decide(bash, bash.parse_input({"command": command}), _ctx(ws, tmp_path))


# --- item 2: redirections, environment, background, compounds, static names -------------------------
@pytest.mark.parametrize(
    "command",
    [
        "git diff > ~/.bashrc",
        "git diff > out.txt",
        "ls >| f",
        "ls >> f",
        "git diff &",
        "ls & ls",
        "GIT_EXTERNAL_DIFF='touch x;true' git diff",
        "export GIT_EXTERNAL_DIFF='touch x;true'; git diff",
        "LD_PRELOAD=/tmp/evil.so ls",
        "PAGER='touch x' git log",
    ],
)
async def test_allow_rules_do_not_cover_what_the_words_hide(tmp_path: Path, command: str) -> None:
    gov = _gov(tmp_path, allow=GIT_RULES)
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior != "allow", decision.chain


@pytest.mark.parametrize("command", ["git diff", "ls -la", "LANG=C git diff", "TZ=UTC LC_ALL=C ls", "git diff 2>&1"])
async def test_allow_rules_still_allow_the_plain_commands(tmp_path: Path, command: str) -> None:
    gov = _gov(tmp_path, allow=GIT_RULES)
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior == "allow", decision.chain


async def test_redirect_writes_are_edits_in_accept_edits(tmp_path: Path) -> None:
    gov = _gov(tmp_path, mode="acceptEdits", allow=GIT_RULES)
    assert (await _decide(gov, "git diff > out.txt", tmp_path)).behavior == "allow"
    assert (await _decide(gov, "cat a.txt > out.txt", tmp_path)).behavior == "allow"
    # outside the workspace, or a shell start-up file: still asks
    assert (await _decide(gov, f"git diff > {tmp_path}/elsewhere.txt", tmp_path)).behavior == "ask"
    home_rc = await _decide(gov, "git diff > ~/.bashrc", tmp_path)
    assert home_rc.behavior == "ask"
    assert (await _decide(gov, "ls > .bashrc", tmp_path)).behavior == "ask"


def test_safe_env_list_is_the_documented_one() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "permissions.md").read_text()
    for name in SAFE_ENV_NAMES:
        assert f"`{name}`" in doc, name
    assert is_safe_env_name("LC_ALL") and not is_safe_env_name("LD_PRELOAD") and not is_safe_env_name("LC_")


async def test_compound_of_rule_allowed_and_read_only_parts(tmp_path: Path) -> None:
    gov = _gov(tmp_path, allow=["Bash(cp:*)"])
    d = await _decide(gov, "cat a && cp x y", tmp_path)
    assert d.behavior == "allow", d.chain
    assert "Bash(cp:*)" in d.reason
    assert (await _decide(gov, "cat a && rm y", tmp_path)).behavior == "ask"
    assert (await _decide(gov, "cat /etc/passwd && cp x y", tmp_path)).behavior == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "file * && cp x y",
        "uniq in* && cp x y",
        "case x in x) ls &;; esac; cp x y",
        "for a in b; do ls; done; cp x y",
        "(( a[$(touch p)] )); cp x y",
        "cat \"$HOME/x\" && cp x y",
        "cat <<EOF && cp x y\n$(id)\nEOF",
    ],
)
async def test_parts_are_judged_alone_only_when_the_command_is_flat(tmp_path: Path, command: str) -> None:
    """Re-judging one part's text loses globs, loops and expansions; those compounds ask."""
    gov = _gov(tmp_path, allow=["Bash(cp:*)"])
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior != "allow", decision.chain


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "command",
    ["/???/rm F", "$'rm' F", "rm${IFS}F", "\\rm F", "/bin/rm F", "r''m F", "\"rm\" F", "./rm F", "env rm F",
     "timeout 5 rm F", "xargs rm < list", "busybox rm F", "bash -c 'rm F'", "sh -c \"cd /; rm F\""],
)
async def test_deny_rules_match_the_normalised_name_in_every_mode(tmp_path: Path, mode: str, command: str) -> None:
    gov = _gov(tmp_path, mode=mode, deny=["Bash(rm:*)"], allow=["Bash"])
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior == "deny", (mode, command, decision.chain)


@pytest.mark.parametrize("mode", MODES)
async def test_unparseable_command_is_denied_when_deny_rules_exist(tmp_path: Path, mode: str) -> None:
    gov = _gov(tmp_path, mode=mode, deny=["Bash(rm:*)"])
    decision = await _decide(gov, "$'rm' F\n)", tmp_path)
    assert decision.behavior == "deny", decision.chain


async def test_dynamic_name_without_deny_rules_is_only_asked(tmp_path: Path) -> None:
    gov = _gov(tmp_path, allow=["Bash"])
    # a tool-wide allow cannot allow a program whose name is not static
    assert (await _decide(gov, "$'rm' F", tmp_path)).behavior == "ask"
    bypass = _gov(tmp_path / "b", mode="bypassPermissions")
    assert (await _decide(bypass, "$'rm' F", tmp_path)).behavior == "allow"


# --- item 3: reads inside the allowed reads, Read(...) denies ---------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "cat < /etc/hostname",
        "date --file=/etc/hostname",
        "diff --from-file=/etc/hostname a",
        "wc --files0-from=/etc/hostname",
        "cat link/hostname",
        "cat link/../link/hostname",
    ],
)
async def test_reads_outside_the_workspace_are_not_auto_allowed(tmp_path: Path, command: str) -> None:
    gov = _gov(tmp_path)
    (gov.settings.workspace / "link").symlink_to("/etc")
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior != "allow", decision.chain


@pytest.mark.parametrize("command", ["cat secrets/a", "cat < secrets/a", "grep -r TOPSECRET .", "grep -r TOPSECRET",
                                     "head -n1 ./secrets/a", "rg TOPSECRET", "cat sub/../secrets/a", "cat alias/a"])
async def test_read_deny_rules_cover_what_bash_reads(tmp_path: Path, command: str) -> None:
    gov = _gov(tmp_path, deny=["Read(./secrets/**)"])
    ws = gov.settings.workspace
    (ws / "secrets").mkdir()
    (ws / "sub").mkdir()
    (ws / "secrets" / "a").write_text("TOPSECRET")
    (ws / "alias").symlink_to(ws / "secrets")
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior != "allow", decision.chain


@pytest.mark.parametrize("mode", MODES)
async def test_recursive_read_over_a_denied_tree_asks_in_every_mode(tmp_path: Path, mode: str) -> None:
    gov = _gov(tmp_path, mode=mode, deny=["Read(./secrets/**)"])
    (gov.settings.workspace / "secrets").mkdir()
    decision = await _decide(gov, "grep -r TOPSECRET .", tmp_path)
    assert decision.behavior in ("ask", "deny") and "recursively" in decision.reason, decision.chain


async def test_reads_elsewhere_still_allowed_with_read_denies(tmp_path: Path) -> None:
    gov = _gov(tmp_path, deny=["Read(./secrets/**)"])
    ws = gov.settings.workspace
    (ws / "secrets").mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x")
    for command in ("cat src/a.py", "grep -r x src", "ls"):
        decision = await _decide(gov, command, tmp_path)
        assert decision.behavior == "allow", (command, decision.chain)


# --- item 4: hostile repositories -------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def _repo(ws: Path) -> None:
    _git(ws, "init", "-q")
    (ws / "f.txt").write_text("one\n")
    _git(ws, "add", "f.txt")
    _git(ws, "commit", "-qm", "one")
    (ws / "f.txt").write_text("one\ntwo\n")


@pytest.mark.parametrize(
    ("key", "value", "command"),
    [
        ("diff.evil.textconv", "touch PWNED; cat", "git diff"),
        ("diff.evil.command", "touch PWNED", "git log -p"),
        ("filter.evil.clean", "touch PWNED; cat", "git status"),
        ("diff.external", "touch PWNED", "git diff"),
        ("credential.https://x.test.helper", "!touch PWNED", "git status"),
    ],
)
@pytest.mark.parametrize("mode", ["default", "plan", "dontAsk", "acceptEdits", "bypassPermissions"])
async def test_hostile_repository_config_makes_git_ask(
    tmp_path: Path, key: str, value: str, command: str, mode: str
) -> None:
    gov = _gov(tmp_path, mode=mode)
    ws = gov.settings.workspace
    _repo(ws)
    _git(ws, "config", key, value)
    (ws / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior != "allow", decision.chain


async def test_remote_upload_pack_of_the_repository_asks(tmp_path: Path) -> None:
    gov = _gov(tmp_path, allow=["Bash(git ls-remote:*)"])
    ws = gov.settings.workspace
    _repo(ws)
    _git(ws, "remote", "add", "origin", str(ws))
    _git(ws, "config", "remote.origin.uploadpack", "touch PWNED; git-upload-pack")
    for command in ("git ls-remote origin", "git remote show origin"):
        decision = await _decide(gov, command, tmp_path)
        assert decision.behavior != "allow", decision.chain


async def test_plain_repository_git_reads_are_allowed(tmp_path: Path) -> None:
    gov = _gov(tmp_path)
    ws = gov.settings.workspace
    _repo(ws)
    for command in ("git diff", "git log -p", "git show", "git status"):
        decision = await _decide(gov, command, tmp_path)
        assert decision.behavior == "allow", (command, decision.chain)


@pytest.mark.parametrize(
    "relative",
    [".git/config", ".gitattributes", "sub/.gitattributes", ".gitmodules", "bare.git/config", "bare/HEAD",
     "bare/objects/info/alternates", "bare/config", ".git/info/attributes"],
)
@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
async def test_writing_git_metadata_asks_in_every_mode(tmp_path: Path, relative: str, mode: str) -> None:
    gov = _gov(tmp_path, mode=mode)
    ws = gov.settings.workspace
    (ws / "bare").mkdir()
    (ws / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    write = WriteTool()
    target = ws / relative
    tool_input = write.parse_input({"file_path": str(target), "content": "[diff \"x\"]\n"})
    ctx = _ctx(ws, tmp_path)
    await write.validate(tool_input, ctx)
    decision = await gov.engine.decide(write, tool_input, ctx)
    assert decision.behavior == "ask", decision.chain
    # the same write through a Bash redirection
    bash_decision = await _decide(gov, f"echo x > {relative}", tmp_path)
    assert bash_decision.behavior == "ask", bash_decision.chain


async def test_ordinary_writes_are_still_edits(tmp_path: Path) -> None:
    gov = _gov(tmp_path, mode="acceptEdits")
    ws = gov.settings.workspace
    write = WriteTool()
    tool_input = write.parse_input({"file_path": str(ws / "src" / "main.py"), "content": "x"})
    ctx = _ctx(ws, tmp_path)
    await write.validate(tool_input, ctx)
    assert (await gov.engine.decide(write, tool_input, ctx)).behavior == "allow"
    assert git_metadata_reason(str(ws / "src" / "main.py")) is None
    assert git_metadata_reason(str(ws / "src" / "configure.py")) is None


async def test_powershell_keeps_its_rules(tmp_path: Path) -> None:
    """PowerShell's analysis names no parts: its rules work as before, nothing is denied as dynamic."""
    from shellrt.tools.powershell import PowerShell

    gov = _gov(tmp_path, deny=["PowerShell(Remove-Item:*)"])
    ps = PowerShell()
    ws = gov.settings.workspace

    async def behavior(command: str) -> str:
        return (await gov.engine.decide(ps, ps.parse_input({"command": command}), _ctx(ws, tmp_path))).behavior

    assert await behavior("Get-ChildItem") == "allow"
    assert await behavior("Remove-Item x") == "deny"


async def test_common_env_deny_leaves_git_and_scoped_searches_alone(tmp_path: Path) -> None:
    gov = _gov(tmp_path, allow=["Bash(git diff:*)"], deny=["Read(./.env)"])
    ws = gov.settings.workspace
    _repo(ws)
    (ws / ".env").write_text("TOKEN=x\n")
    (ws / "src").mkdir()
    for command in ("git diff", "grep -r TOKEN src", "git status"):
        decision = await _decide(gov, command, tmp_path)
        assert decision.behavior == "allow", (command, decision.chain)
    for command in ("grep -r TOKEN .", "cat .env", "git grep TOKEN"):
        decision = await _decide(gov, command, tmp_path)
        assert decision.behavior != "allow", (command, decision.chain)


@pytest.mark.parametrize("command", ["cp x src/y", "rm -rf src", "tee src/out < a", "mv a src/b"])
async def test_edit_deny_rules_cover_what_programs_write(tmp_path: Path, command: str) -> None:
    gov = _gov(tmp_path, mode="bypassPermissions", allow=["Bash(cp:*)", "Bash(rm:*)", "Bash(tee:*)", "Bash(mv:*)"],
               deny=["Edit(./src/**)"])
    (gov.settings.workspace / "src").mkdir()
    decision = await _decide(gov, command, tmp_path)
    assert decision.behavior == "deny", decision.chain


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
async def test_hostile_repository_git_with_a_redirect_still_asks(tmp_path: Path, mode: str) -> None:
    gov = _gov(tmp_path, mode=mode)
    ws = gov.settings.workspace
    _repo(ws)
    _git(ws, "config", "diff.evil.textconv", "touch PWNED; cat")
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    decision = await _decide(gov, "git diff > out.txt", tmp_path)
    assert decision.behavior == "ask", decision.chain
