"""Rule parsing and matching: commands per subcommand, path globs, domains, MCP names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.permissions import PermissionRule, RuleOrigin, RuleSet, RuleSyntaxError, parse_rule
from shellrt.permissions.globs import glob_matches
from shellrt.protocol import PermissionSubject


def rules(tmp_path: Path, *texts: tuple[str, str]) -> RuleSet:
    origin = RuleOrigin("project", tmp_path / ".shellrt" / "settings.json", 1, tmp_path)
    return RuleSet([parse_rule(t, k, origin) for k, t in texts], home=tmp_path / "home")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "tool", "spec"),
    [
        ("Bash", "Bash", None),
        ("Bash(*)", "Bash", None),
        ("  Bash( git   diff:* ) ", "Bash", "git diff:*"),
        ("Read(./secrets/**)", "Read", "./secrets/**"),
        ("WebFetch(domain:Docs.Python.org)", "WebFetch", "domain:docs.python.org"),
        ("WebFetch(domain:*.example.com)", "WebFetch", "domain:*.example.com"),
        ("mcp__github", "mcp__github", None),
        ("mcp__github__*", "mcp__github__*", None),
        ("mcp__github__create_issue", "mcp__github__create_issue", None),
        ("Bash(echo (x))", "Bash", "echo (x)"),
    ],
)
def test_parse_valid(text: str, tool: str, spec: str | None) -> None:
    rule = parse_rule(text, "allow")
    assert (rule.tool, rule.specifier) == (tool, spec)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Bash(",
        "Bash()",
        "Bash(git status",
        "Bash)",
        "Ba sh",
        "Bash(git:*status)",
        "Bash(:*)",
        "WebFetch(example.com)",
        "WebFetch(domain:exa mple.com)",
        "mcp__",
        "mcp__srv__t*ol",
        "mcp__srv(x)",
        "Read(~bob/x)",
        42,
    ],
)
def test_parse_malformed(text: object) -> None:
    with pytest.raises(RuleSyntaxError):
        parse_rule(text, "allow")


def test_prefix_rule_matches_word_boundary(tmp_path: Path) -> None:
    rs = rules(tmp_path, ("allow", "Bash(git diff:*)"))

    def ok(*cmds: str) -> bool:
        return rs.content_allow("Bash", PermissionSubject(commands=cmds, access="execute")) is not None

    assert ok("git diff")
    assert ok("git diff HEAD~1 -- src")
    assert not ok("git diff-tree x")
    assert not ok("git difftool")
    assert not ok("git diff", "rm -rf x")


def test_compound_command_needs_every_subcommand(tmp_path: Path) -> None:
    rs = rules(tmp_path, ("allow", "Bash(git status:*)"), ("allow", "Bash(ls)"))

    def allow(*cmds: str) -> list[PermissionRule] | None:
        return rs.content_allow("Bash", PermissionSubject(commands=cmds, access="execute"))

    assert allow("git status", "ls")
    assert allow("git status", "rm -rf x") is None
    assert allow("git status", "curl evil") is None
    assert allow() is None
    assert rs.content_allow("Bash", PermissionSubject(commands=("git status",), incomplete=True)) is None


def test_any_denied_subcommand_denies(tmp_path: Path) -> None:
    rs = rules(tmp_path, ("deny", "Bash(rm:*)"))
    hit = rs.content_hit("deny", "Bash", PermissionSubject(commands=("ls", "rm -rf x"), access="execute"))
    assert hit is not None and hit[1] == "rm -rf x"
    assert rs.content_hit("deny", "Bash", PermissionSubject(commands=("rmdir x",))) is None
    # a program given by path is still that program for deny rules
    assert rs.content_hit("deny", "Bash", PermissionSubject(commands=("/bin/rm -rf x",)))
    allow = rules(tmp_path, ("allow", "Bash(rm x)"))
    assert allow.content_allow("Bash", PermissionSubject(commands=("./rm x",))) is None


def test_wildcard_command(tmp_path: Path) -> None:
    rs = rules(tmp_path, ("allow", "Bash(npm run *)"))
    assert rs.content_allow("Bash", PermissionSubject(commands=("npm run test",)))
    assert rs.content_allow("Bash", PermissionSubject(commands=("npm install",))) is None


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (".env", ".env", True),
        (".env", "a/b/.env", True),
        ("./.env", "a/.env", False),
        ("*.pem", "keys/x.pem", True),
        ("secrets/**", "secrets/a/b", True),
        ("./secrets/**", "secrets", True),
        ("secrets", "secrets/x", True),
        ("src/**/*.ts", "src/a/b/c.ts", True),
        ("src/**/*.ts", "src/c.ts", True),
        ("src/*.ts", "src/a/c.ts", False),
        ("/src/*.ts", "src/c.ts", True),
        ("**/node_modules", "a/node_modules/x", True),
        ("file?.txt", "file1.txt", True),
        ("[ab].txt", "c.txt", False),
    ],
)
def test_globs(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected


def test_path_specifier_forms(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    rs = rules(
        tmp_path,
        ("deny", "Read(//etc/shadow)"),
        ("deny", "Read(~/notes/**)"),
        ("deny", "Read(/private/**)"),
    )

    def read(p: str | Path) -> tuple[PermissionRule, str] | None:
        return rs.content_hit("deny", "Read", PermissionSubject(paths=(str(p),), access="read"))

    assert read("/etc/shadow")
    assert read(home / "notes" / "a.txt")
    assert read(tmp_path / "private" / "x")
    assert not read(tmp_path / "sub" / "private" / "x")
    assert not read("/etc/passwd")


def test_read_rules_cover_every_reading_tool_and_edit_rules_writes(tmp_path: Path) -> None:
    rs = rules(tmp_path, ("deny", "Read(./secrets/**)"), ("allow", "Edit(./src/**)"))
    secret = str(tmp_path / "secrets" / "k")
    assert rs.content_hit("deny", "Grep", PermissionSubject(paths=(secret,), access="read"))
    assert rs.content_hit("deny", "Write", PermissionSubject(paths=(secret,), access="write"))
    src = str(tmp_path / "src" / "a.py")
    assert rs.content_allow("Write", PermissionSubject(paths=(src,), access="write"))
    assert rs.content_allow("Read", PermissionSubject(paths=(src,), access="read")) is None


def test_symlink_inside_pointing_outside_is_outside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "target.txt").write_text("x")
    os.symlink(outside, ws / "link")
    origin = RuleOrigin("project", ws / ".shellrt" / "settings.json", 1, ws)
    rs = RuleSet([parse_rule("Edit(./**)", "allow", origin)], home=tmp_path)
    via_link = str(ws / "link" / "target.txt")
    assert rs.content_allow("Edit", PermissionSubject(paths=(via_link,), access="write")) is None
    assert rs.content_allow("Edit", PermissionSubject(paths=(str(ws / "a.txt"),), access="write"))
    # `..` escaping the workspace is outside too
    dotdot = str(ws / "sub" / ".." / ".." / "outside" / "target.txt")
    assert rs.content_allow("Edit", PermissionSubject(paths=(dotdot,), access="write")) is None
    # a deny on the outside target also catches the path through the link
    deny = RuleSet([parse_rule(f"Edit(/{outside}/**)", "deny", origin)], home=tmp_path)
    assert deny.content_hit("deny", "Edit", PermissionSubject(paths=(via_link,), access="write"))


def test_domains(tmp_path: Path) -> None:
    rs = rules(
        tmp_path, ("allow", "WebFetch(domain:docs.python.org)"), ("allow", "WebFetch(domain:*.example.com)")
    )

    def allowed(d: str) -> bool:
        return rs.content_allow("WebFetch", PermissionSubject(domains=(d,), access="fetch")) is not None

    assert allowed("docs.python.org")
    assert allowed("DOCS.python.org.")
    assert allowed("api.example.com")
    assert not allowed("example.com")
    assert not allowed("evilexample.com")
    assert not allowed("docs.python.org.evil.com")


def test_mcp_names() -> None:
    server = parse_rule("mcp__gh", "deny")
    star = parse_rule("mcp__gh__*", "deny")
    one = parse_rule("mcp__gh__create", "deny")
    assert server.matches_tool("mcp__gh__create") and server.matches_tool("mcp__gh__list")
    assert star.matches_tool("mcp__gh__list")
    assert not server.matches_tool("mcp__ghx__list")
    assert one.matches_tool("mcp__gh__create") and not one.matches_tool("mcp__gh__list")


def test_may_match_below_places_the_pattern(tmp_path: Path) -> None:
    """A recursive read of a directory may reach a denied path below it (issue 17, item 3)."""
    origin = RuleOrigin("project", None, None, tmp_path)
    anchored = parse_rule("Read(./secrets/**)", "deny", origin)
    floating = parse_rule("Read(.env)", "deny", origin)
    home = tmp_path / "home"
    (tmp_path / "src" / "deep").mkdir(parents=True)
    assert not anchored.may_match_below(str(tmp_path), home=home)  # nothing there to reach
    (tmp_path / "secrets").mkdir()
    assert anchored.may_match_below(str(tmp_path), home=home)
    assert anchored.may_match_below(str(tmp_path / "secrets" / "sub"), home=home)
    assert not anchored.may_match_below(str(tmp_path / "src"), home=home)
    assert not floating.may_match_below(str(tmp_path / "src"), home=home)
    (tmp_path / "src" / "deep" / ".env").write_text("K=V")
    assert floating.may_match_below(str(tmp_path / "src"), home=home)
    assert floating.may_match_below(str(tmp_path / "src"), home=home, limit=0)
    assert not parse_rule("Read(//etc/**)", "deny", origin).may_match_below(str(tmp_path), home=home)
