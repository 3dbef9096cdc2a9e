"""Red-team attacks on Bash governance that no issue names, each run for real.

Every attack goes through a real Runtime, the real Bash tool and real files:
a held attack leaves no marker and prints no secret. Classes (not examples):
globs that expand onto a denied path, symlinks inside a recursively read tree,
git ``REV:path`` object names, and words of a rule-allowed part that reach
outside the workspace or into git metadata.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text as _text

pytestmark = pytest.mark.anyio

_GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **_GIT_ENV})


async def _run(tmp_path: Path, commands: list[str], *, mode: str = "dontAsk", **perms: Any) -> list[ResultEnvelope]:
    """dontAsk: whatever would ask is denied, so 'ran' means 'was allowed unasked'."""
    settings = tmp_path / "operator-settings.json"
    settings.write_text(json.dumps({"permissions": perms}))
    async with shellrt.Runtime(
        workspace=tmp_path / "ws",
        sandbox="local",
        session_dir=tmp_path / ".s",
        tools=[Bash()],
        settings_files=[settings],
        mode=mode,
    ) as rt:
        blocks = [ToolUseBlock(id=f"t{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        return await rt.run_envelopes(blocks)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secrets").mkdir()
    (ws / "secrets" / "a").write_text("TOPSECRET\n")
    (ws / "notes.txt").write_text("hello\n")
    return ws


def _deny(ws: Path) -> list[str]:
    return [f"Read(/{ws}/secrets/**)"]


def _leaked(envelope: ResultEnvelope) -> bool:
    """The secret printed as content: a line of its own or a ``file:line`` match."""
    return any(line == "TOPSECRET" or line.endswith(":TOPSECRET") for line in _text(envelope).splitlines())


@pytest.mark.parametrize("command", ["cat sec*/a", "cat s[e]crets/a", "cat secret?/a", "head -n1 */a"])
async def test_a_glob_that_expands_onto_a_denied_path_is_not_a_free_read(
    tmp_path: Path, ws: Path, command: str
) -> None:
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and not _leaked(envelope), _text(envelope)


async def test_a_glob_read_of_allowed_files_still_runs(tmp_path: Path, ws: Path) -> None:
    [envelope] = await _run(tmp_path, ["cat no*.txt"], deny=_deny(ws))
    assert not envelope.is_error and "hello" in _text(envelope), _text(envelope)


async def test_a_glob_reaching_outside_the_workspace_asks(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "outside.txt").write_text("OUTSIDE\n")
    [envelope] = await _run(tmp_path, ["cat ../out*.txt"])
    assert envelope.is_error and "OUTSIDE\n" not in _text(envelope), _text(envelope)


@pytest.mark.parametrize("command", ["grep -R TOPS sub", "rg -L TOPS sub", "grep -R TOPS ."])
async def test_a_symlink_inside_a_recursive_walk_is_followed_by_the_check(
    tmp_path: Path, ws: Path, command: str
) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "up").symlink_to("../secrets")
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and not _leaked(envelope), _text(envelope)


async def test_a_symlink_inside_a_recursive_walk_to_outside_asks(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("OUTSIDE\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "l").symlink_to(tmp_path / "outside")
    [envelope] = await _run(tmp_path, ["grep -R OUTSIDE sub"])
    assert envelope.is_error and "o.txt:OUTSIDE" not in _text(envelope), _text(envelope)


@pytest.mark.parametrize(
    "command",
    ["git show HEAD:secrets/a", "git show :secrets/a", "git cat-file -p HEAD:secrets/a", "git show HEAD:./secrets/a"],
)
async def test_git_object_paths_are_reads_of_that_path(tmp_path: Path, ws: Path, command: str) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and not _leaked(envelope), _text(envelope)


async def test_git_object_path_outside_the_deny_still_runs(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    [envelope] = await _run(tmp_path, ["git show HEAD:notes.txt"], deny=_deny(ws))
    assert not envelope.is_error and "hello" in _text(envelope), _text(envelope)


_RULES = ["Bash(git diff:*)", "Bash(cp:*)", "Bash(sort:*)", "Bash(touch:*)"]


@pytest.mark.parametrize(
    ("command", "marker"),
    [
        ("git diff --output=../PWN", "PWN"),
        ("git diff --output ../PWN", "PWN"),
        ("cp notes.txt ../PWN", "PWN"),
        ("sort -o ../PWN notes.txt", "PWN"),
        ("touch ~/PWN", "home/PWN"),
        ("cp notes.txt .git/hooks/PWN", "ws/.git/hooks/PWN"),
        ("git diff --output=.git/PWN", "ws/.git/PWN"),
        ("touch .git/PWN", "ws/.git/PWN"),
        ("git diff --output=.claude/settings.json", "ws/.claude/settings.json"),
        ("cp notes.txt .mcp.json", "ws/.mcp.json"),
        ("cp notes.txt .envrc", "ws/.envrc"),
        ("sort -o .bashrc notes.txt", "ws/.bashrc"),
    ],
)
async def test_an_allow_rule_does_not_reach_outside_the_workspace_or_into_git_metadata(
    tmp_path: Path, ws: Path, command: str, marker: str
) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    (ws / "notes.txt").write_text("hello\nchanged\n")
    (ws / ".claude").mkdir()
    [envelope] = await _run(tmp_path, [command], allow=_RULES)
    assert envelope.is_error, _text(envelope)
    assert not (tmp_path / marker).exists()


async def test_an_allow_rule_still_covers_work_inside_the_workspace(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    (ws / "notes.txt").write_text("hello\nchanged\n")
    results = await _run(
        tmp_path, ["git diff --output=d.txt", "cp notes.txt copy.txt", "git diff HEAD -- notes.txt"], allow=_RULES
    )
    assert not any(e.is_error for e in results), [_text(e) for e in results]
    assert (ws / "copy.txt").exists() and "+changed" in (ws / "d.txt").read_text()


@pytest.mark.parametrize("command", ["git diff", "git diff HEAD", "git diff --cached", "git status -vv", "git diff --stat -p"])
async def test_git_diff_of_a_changed_denied_file_is_a_read_of_it(tmp_path: Path, ws: Path, command: str) -> None:
    """The work tree and index are live files a ``Read(...)`` rule describes (history is not)."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    (ws / "secrets" / "a").write_text("TOPSECRET\nTOPSECRET\n")
    if "--cached" in command:
        _git(ws, "add", "-A")
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and "+TOPSECRET" not in _text(envelope), _text(envelope)


async def test_git_diff_of_allowed_changes_still_runs_beside_a_denied_file(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    (ws / "notes.txt").write_text("hello\nagain\n")
    [envelope] = await _run(tmp_path, ["git diff"], deny=_deny(ws))
    assert not envelope.is_error and "+again" in _text(envelope), _text(envelope)


def _hostile_hooks(ws: Path, tmp_path: Path) -> None:
    """A repository whose own .git/hooks run on index writes (no config key names them)."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    for hook in ("post-index-change", "reference-transaction"):
        path = ws / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {tmp_path}/PWN-{hook}\n")
        path.chmod(0o755)
    os.utime(ws / "notes.txt", (1, 1))  # stale stat data: git refreshes (writes) the index


@pytest.mark.parametrize(
    ("command", "mode", "allow"),
    [
        ("git status > s.txt", "acceptEdits", []),
        ("git status --porcelain >> s.txt", "acceptEdits", []),
        ("git diff --output=d.txt", "dontAsk", ["Bash(git diff:*)"]),
        ("git diff > d.txt", "acceptEdits", []),
    ],
)
async def test_repository_hooks_do_not_run_for_git_reads_that_are_not_read_only_as_a_whole(
    tmp_path: Path, ws: Path, command: str, mode: str, allow: list[str]
) -> None:
    _hostile_hooks(ws, tmp_path)
    await _run(tmp_path, [command], mode=mode, allow=allow)
    assert not list(tmp_path.glob("PWN-*")), "a hook the repository planted ran"


async def test_repository_hooks_still_run_for_git_commands_that_run_hooks(tmp_path: Path, ws: Path) -> None:
    _hostile_hooks(ws, tmp_path)
    [envelope] = await _run(tmp_path, ["git add notes.txt"], allow=["Bash(git add:*)"])
    assert not envelope.is_error, _text(envelope)


@pytest.mark.parametrize(
    ("command", "mode", "allow"),
    [
        ("git status > s.txt", "acceptEdits", []),
        ("git diff > d.txt", "acceptEdits", []),
        ("git diff --output=d.txt", "dontAsk", ["Bash(git diff:*)"]),
    ],
)
async def test_overridden_config_keys_count_when_the_command_is_not_hardened(
    tmp_path: Path, ws: Path, command: str, mode: str, allow: list[str]
) -> None:
    """core.fsmonitor is neutralised only for read-only commands (the override environment)."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    _git(ws, "config", "core.fsmonitor", f"touch {tmp_path}/PWN-fsmonitor; true")
    await _run(tmp_path, [command], mode=mode, allow=allow)
    assert not (tmp_path / "PWN-fsmonitor").exists(), "the repository's core.fsmonitor ran"


async def test_overridden_config_keys_do_not_block_read_only_git(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    _git(ws, "config", "core.fsmonitor", f"touch {tmp_path}/PWN-fsmonitor; true")
    [envelope] = await _run(tmp_path, ["git status"])
    assert not envelope.is_error and not (tmp_path / "PWN-fsmonitor").exists(), _text(envelope)


@pytest.mark.parametrize(
    "command",
    [
        "jq -n 'import \"secrets/a\" as $a; $a'",
        "jq -n 'import \"./secrets/a\" as $a; $a | .s'",
        "jq -n 'include \"secrets/m\"; f'",
        "jq -nr 'import \"../out\" as $o; $o | .[0].s'",
        "jq -n 'import \"secrets/m\" as m; m::f'",
        "jq -n -L secrets 'include \"m\"; f'",
    ],
)
async def test_jq_modules_a_filter_imports_are_reads(tmp_path: Path, ws: Path, command: str) -> None:
    """``import "path" as $x`` loads path.json, ``include`` path.jq: reads the filter names."""
    (ws / "secrets" / "a.json").write_text('{"s": "TOPSECRET"}\n')
    (ws / "secrets" / "m.jq").write_text('def f: "TOPSECRET";\n')
    (tmp_path / "out.json").write_text('{"s": "TOPSECRET"}\n')
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and "TOPSECRET" not in _text(envelope).split("(dontAsk")[0].split("reads")[0], _text(envelope)


async def test_jq_without_modules_still_runs(tmp_path: Path, ws: Path) -> None:
    (ws / "d.json").write_text('{"k": "v"}\n')
    [envelope] = await _run(tmp_path, ["jq -r .k d.json"], deny=_deny(ws))
    assert not envelope.is_error and "v" in _text(envelope), _text(envelope)


async def test_jq_keys_named_like_directives_still_run(tmp_path: Path, ws: Path) -> None:
    (ws / "d.json").write_text('{"import": "v1", "include": "v2"}\n')
    [envelope] = await _run(tmp_path, ["jq -r '.import, .include' d.json"], deny=_deny(ws))
    assert not envelope.is_error and "v2" in _text(envelope), _text(envelope)


async def test_jq_directive_hidden_behind_a_comment_fails_closed(tmp_path: Path, ws: Path) -> None:
    (ws / "secrets" / "m.jq").write_text('def f: "TOPSECRET";\n')
    [envelope] = await _run(tmp_path, ["jq -n 'include #x\n\"secrets/m\"; f'"], deny=_deny(ws))
    assert envelope.is_error and '"TOPSECRET"' not in _text(envelope), _text(envelope)


@pytest.mark.parametrize("command", ["cat /proc/self/cwd/../outside.txt", "cat /proc/thread-self/cwd/../outside.txt"])
async def test_proc_self_paths_are_not_resolved_in_the_checking_process(
    tmp_path: Path, ws: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/proc/self`` is the command's process, not shellrt's: resolving it here judges another path."""
    (tmp_path / "outside.txt").write_text("OUTSIDE\n")
    (ws / "deep").mkdir()
    monkeypatch.chdir(ws / "deep")  # shellrt's own cwd is deeper than the command's
    [envelope] = await _run(tmp_path, [command])
    assert envelope.is_error and "OUTSIDE\n" not in _text(envelope), _text(envelope)


@pytest.mark.parametrize("command", ["git log -p", "git show HEAD", "git log --stat -p -1"])
async def test_a_repository_above_the_workspace_is_a_read_outside_it(tmp_path: Path, ws: Path, command: str) -> None:
    """git finds the repository by walking up: one above the workspace holds files outside it."""
    (tmp_path / "outside-secret.txt").write_text("OUTSIDESECRET\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "outside-secret.txt")
    _git(tmp_path, "commit", "-qm", "one")
    [envelope] = await _run(tmp_path, [command])
    assert envelope.is_error and "+OUTSIDESECRET" not in _text(envelope), _text(envelope)


async def test_a_repository_at_the_workspace_root_still_reads(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "notes.txt")
    _git(ws, "commit", "-qm", "one")
    [envelope] = await _run(tmp_path, ["git log -p"])
    assert not envelope.is_error and "+hello" in _text(envelope), _text(envelope)


_UNKNOWN_WRAPPERS = [
    "fakeroot rm {f}", "eatmydata rm {f}", "prlimit rm {f}", "setpriv rm {f}", "sg root rm {f}",
    "script -qc 'rm {f}' /dev/null", "dbus-run-session rm {f}", "nocache rm {f}", "rlwrap rm {f}",
    "direnv exec . rm {f}", "uv run rm {f}", "npm exec rm {f}", "numactl -C0 rm {f}",
]


@pytest.mark.parametrize("shape", _UNKNOWN_WRAPPERS)
async def test_a_deny_rule_sees_the_command_an_unknown_wrapper_runs(tmp_path: Path, ws: Path, shape: str) -> None:
    """bypassPermissions skips asking, never deny rules: ``Bash(rm:*)`` must catch rm behind any wrapper."""
    (ws / "victim").write_text("x")
    [envelope] = await _run(tmp_path, [shape.format(f="victim")], mode="bypassPermissions", deny=["Bash(rm:*)"])
    assert (ws / "victim").exists(), _text(envelope)


async def test_a_deny_rule_does_not_catch_a_read_only_mention(tmp_path: Path, ws: Path) -> None:
    results = await _run(tmp_path, ["grep rm notes.txt", "echo rm -rf x"], mode="bypassPermissions", deny=["Bash(rm:*)"])
    assert not results[1].is_error and "rm -rf x" in _text(results[1]), _text(results[1])
    assert "denied" not in _text(results[0]), _text(results[0])


@pytest.mark.parametrize("mode", ["default", "plan", "dontAsk", "acceptEdits"])
async def test_printf_attached_v_cannot_rewrite_the_git_hardening(tmp_path: Path, ws: Path, mode: str) -> None:
    """``printf -vNAME`` assigns NAME; GIT_CONFIG_VALUE_0 (core.fsmonitor=false) is exported by the
    hardening environment, so rewriting it made the next read-only ``git status`` run a program."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    command = f"printf -vGIT_CONFIG_VALUE_0 'touch {tmp_path}/PWN-printf;false'; git status"
    [envelope] = await _run(tmp_path, [command], mode=mode)
    assert envelope.is_error and not (tmp_path / "PWN-printf").exists(), _text(envelope)


def test_analysis_printf_attached_v_is_not_read_only() -> None:
    from shellrt.analysis import analyze

    assert not analyze("printf -vGIT_CONFIG_VALUE_0 x").read_only


@pytest.mark.parametrize("command", ["man -M . x", "man --manpath=. x", "man -M. x", "man --manp . x"])
async def test_man_pages_from_a_chosen_manpath_are_not_free_reads(tmp_path: Path, ws: Path, command: str) -> None:
    """A page's ``.so FILE`` makes man print FILE: a manpath in the workspace reads anywhere."""
    import shutil

    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    (tmp_path / "outside.txt").write_text("OUTSIDEMARK\n")
    (ws / "man1").mkdir()
    (ws / "man1" / "x.1").write_text(f".so {tmp_path}/outside.txt\n")
    [envelope] = await _run(tmp_path, [command])
    assert envelope.is_error and "OUTSIDEMARK" not in _text(envelope), _text(envelope)


def test_analysis_man_with_a_manpath_is_not_read_only() -> None:
    from shellrt.analysis import analyze

    assert not analyze("man -M . x").read_only


async def test_the_permission_check_itself_runs_no_repository_filter(tmp_path: Path, ws: Path) -> None:
    """Judging ``git diff`` lists the changed files; that listing must not run a clean filter."""
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    _git(ws, "config", "filter.x.clean", f"touch {tmp_path}/PWN-filter; cat")
    (ws / ".gitattributes").write_text("* filter=x\n")
    (ws / "notes.txt").write_text("hello\nchanged\n")
    os.utime(ws / "notes.txt", (1, 1))
    [envelope] = await _run(tmp_path, ["git diff"], deny=_deny(ws))
    assert envelope.is_error and not (tmp_path / "PWN-filter").exists(), _text(envelope)


async def test_tilde_minus_is_oldpwd_not_a_path_below_home(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~-`` is $OLDPWD (inherited from whoever started shellrt), ``~+`` is $PWD."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("OUTSIDEMARK\n")
    monkeypatch.setenv("HOME", str(ws / "h"))
    (ws / "h-").mkdir()
    monkeypatch.setenv("OLDPWD", str(tmp_path / "outside"))
    [envelope] = await _run(tmp_path, ["cat ~-/o.txt"])
    # Denied by the check (the shell may or may not have OLDPWD: either way it is not a known path).
    assert envelope.is_error and "dontAsk" in _text(envelope), _text(envelope)


@pytest.mark.parametrize(
    "command",
    ["git cat-file --batch < list", "git cat-file --batch <<< HEAD:secrets/a", "git show --stdin < list",
     "echo HEAD:secrets/a | git cat-file --batch-command"],
)
async def test_git_object_names_on_stdin_are_unknown_reads(tmp_path: Path, ws: Path, command: str) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "one")
    (ws / "list").write_text("HEAD:secrets/a\n")
    if "batch-command" in command:
        (ws / "list").write_text("contents HEAD:secrets/a\n")
        command = "git cat-file --batch-command < list"
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and not _leaked(envelope), _text(envelope)


@pytest.mark.parametrize(
    "command",
    [
        "declare -i TZ='a[$(touch {m})]'; ls",
        "declare -i TZ; TZ='a[$(touch {m})]'; ls",
        "typeset -i LANG='x[$(touch {m})]'; ls",
        "local -i TZ='a[$(touch {m})]' 2>/dev/null; ls",
        "declare -ix COLUMNS='a[$(touch {m})]'; ls",
        "export -i TZ='a[$(touch {m})]' 2>/dev/null; ls",
        "declare -n LANG=PATH; LANG=.; ls",
        "typeset -n TZ=PATH; export TZ=.; ls",
    ],
)
async def test_declare_integer_and_nameref_are_not_safe_assignments(tmp_path: Path, ws: Path, command: str) -> None:
    """``declare -i`` evaluates the value as arithmetic (``a[$(cmd)]`` runs cmd); ``declare -n``
    makes a listed name an alias of any variable (PATH): neither keeps a part matchable."""
    (ws / "ls").write_text(f"#!/bin/sh\n/usr/bin/touch {tmp_path}/PWN-ls\n")
    (ws / "ls").chmod(0o755)
    [envelope] = await _run(tmp_path, [command.format(m=f"{tmp_path}/PWN-declare")], allow=["Bash(ls:*)"])
    assert envelope.is_error, _text(envelope)
    assert not list(tmp_path.glob("PWN-*")), _text(envelope)


async def test_declare_export_of_a_listed_name_still_matches(tmp_path: Path, ws: Path) -> None:
    [envelope] = await _run(tmp_path, ["declare -x LANG=C; ls"], allow=["Bash(ls:*)"])
    assert not envelope.is_error, _text(envelope)


@pytest.mark.parametrize(
    "command",
    ["tar -cf out.tar . && tar -xOf out.tar", "tar -czf out.tgz secrets/.. && tar -xzOf out.tgz",
     "cp -a . ../copy && cat ../copy/secrets/a", "git add -A && git show :secrets/a"],
)
async def test_an_allow_rule_for_an_archiver_or_stager_does_not_read_a_denied_tree(
    tmp_path: Path, ws: Path, command: str
) -> None:
    """tar/cp -a/git add walk the tree they are given: packing it copies the denied files out."""
    _git(ws, "init", "-q")
    rules = ["Bash(tar:*)", "Bash(cp:*)", "Bash(git add:*)", "Bash(git show:*)", "Bash(cat:*)"]
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws), allow=rules)
    assert envelope.is_error and "TOPSECRET" not in _text(envelope).split("(dontAsk")[0].replace("TOPSECRET'", ""), _text(envelope)
    assert not (ws / "out.tar").exists() and not (ws / "out.tgz").exists()


async def test_an_allow_rule_for_an_archiver_still_packs_allowed_files(tmp_path: Path, ws: Path) -> None:
    _git(ws, "init", "-q")
    results = await _run(
        tmp_path, ["tar -cf out.tar notes.txt", "git add notes.txt", "mkdir -p src && git add src"], deny=_deny(ws),
        allow=["Bash(tar:*)", "Bash(git add:*)", "Bash(mkdir:*)"],
    )
    assert not any(e.is_error for e in results), [_text(e) for e in results]


@pytest.mark.parametrize("command", ["jq -n -f prog.jq", "jq -n --from-file=prog.jq", "jq -n 'include \"lib\"; f'"])
async def test_jq_directives_in_filter_files_and_modules_fail_closed(tmp_path: Path, ws: Path, command: str) -> None:
    (ws / "secrets" / "m.jq").write_text('def f: "TOPSECRET";\n')
    (ws / "prog.jq").write_text('include "secrets/m"; f\n')
    (ws / "lib.jq").write_text('include "secrets/m";\n')
    [envelope] = await _run(tmp_path, [command], deny=_deny(ws))
    assert envelope.is_error and '"TOPSECRET"' not in _text(envelope), _text(envelope)


async def test_a_quoted_pattern_is_not_globbed_onto_a_denied_path(tmp_path: Path, ws: Path) -> None:
    """``grep '.*' notes.txt``: bash does not expand a quoted pattern, so neither does the check."""
    (ws / ".env").write_text("K=V\n")
    results = await _run(tmp_path, ["grep '.*' notes.txt", "grep -E 'h.*' notes.txt"], deny=[f"Read(/{ws}/.env)"])
    for envelope in results:
        assert not envelope.is_error and "hello" in _text(envelope), _text(envelope)


@pytest.mark.parametrize("command", [
    "git diff --output=out", "sort -o out a", "uniq a out", "git log --output out", "sort --out=out a",
    "sort -ruoout a", "uniq -f 1 a out", "xxd a out", "tree -o out .", "find . -fprint out", "sed -i s/a/b/ out",
    "git format-patch -o out HEAD~1", "git archive -o out HEAD", "/usr/bin/time -o out ls", "timeout 5 sort -o out a",
    "sort -T out a", "git config -f out a.b c", "strace -o out ls",
])
def test_analysis_option_writes_are_write_targets(command: str) -> None:
    from shellrt.analysis import analyze

    analysis = analyze(command)
    # Like the files `cp` writes: an allow rule for the program covers them only inside the workspace.
    assert "out" in analysis.write_targets
    assert not analysis.read_only


@pytest.mark.parametrize("command", ["sort $opts a", "git log $(cat args)", "uniq a \"$out\"", "sed -n 'w out' a",
                                     "file -C -m magic", "find . -name $x"])
def test_analysis_a_dynamic_word_of_a_writing_program_is_an_unknown_write(command: str) -> None:
    from shellrt.analysis import analyze

    analysis = analyze(command)
    assert analysis.writes_unknown and any("" in part.writes for part in analysis.subcommands)


async def test_an_allow_rule_for_a_program_does_not_cover_the_files_its_options_write(tmp_path: Path, ws: Path) -> None:
    """``Bash(sort:*)`` allows sorting, not writing ~/.bashrc with ``sort -o``."""
    (ws / "a").write_text("x\n")
    target = tmp_path / "home" / ".bashrc"
    results = await _run(tmp_path, [f"sort -o {target} a", "sort a", f"git diff --output={target}"],
                         allow=["Bash(sort:*)", "Bash(git diff:*)"])
    assert results[0].is_error and results[2].is_error, [_text(e) for e in results]
    assert not results[1].is_error, _text(results[1])
    assert not target.exists()
