"""Settings sources: discovery, precedence, managed policy, .claude compatibility, diagnostics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shellrt.permissions import InvalidModeError, build_governance

from .test_permissions_support import Bash, ReadTool, make_ctx

pytestmark = pytest.mark.anyio


class Layout:
    """A workspace, a home and a managed file in a tmp dir, with every settings file writable."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.ws = tmp_path / "ws"
        self.home = tmp_path / "home"
        self.managed = tmp_path / "etc" / "managed-settings.json"
        self.ws.mkdir()
        self.home.mkdir()

    def write(self, where: str, data: dict[str, Any] | str) -> Path:
        path = {
            "managed": self.managed,
            "local": self.ws / ".shellrt" / "settings.local.json",
            "project": self.ws / ".shellrt" / "settings.json",
            "claude": self.ws / ".claude" / "settings.json",
            "claude-local": self.ws / ".claude" / "settings.local.json",
            "user": self.home / ".shellrt" / "settings.json",
        }.get(where, self.tmp / where)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
        return path

    def gov(self, **kw: Any) -> Any:
        kw.setdefault("trust_workspace", True)  # these tests are about merging, not workspace trust
        return build_governance(self.ws, home=self.home, managed_path=self.managed, **kw)

    async def decide(self, gov: Any, command: str) -> Any:
        tool = Bash()
        return await gov.engine.decide(
            tool, tool.parse_input({"command": command}), make_ctx(self.ws, self.tmp)
        )


def perms(**kw: Any) -> dict[str, Any]:
    return {"permissions": kw}


async def test_deny_from_any_source_beats_allow_from_any_higher_source(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("managed", perms(allow=["Bash(make:*)"]))
    lay.write("user", perms(deny=["Bash(make install)"]))
    gov = lay.gov(allow=["Bash(make install)"])
    d = await lay.decide(gov, "make install")
    assert d.behavior == "deny" and d.source is not None and d.source.startswith("user settings (")
    assert (await lay.decide(gov, "make test")).source == "managed settings (" + str(lay.managed) + ":4)"


async def test_ask_from_any_source_beats_allow(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("project", perms(ask=["Bash(git push:*)"]))
    gov = lay.gov(allow=["Bash(git push:*)"])
    assert (await lay.decide(gov, "git push")).behavior == "ask"


async def test_every_source_contributes_rules_with_its_name(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("managed", perms(allow=["Bash(a)"]))
    extra = lay.write("extra/custom.json", perms(allow=["Bash(b)"]))
    lay.write("local", perms(allow=["Bash(c)"]))
    lay.write("claude-local", perms(allow=["Bash(d)"]))
    lay.write("project", perms(allow=["Bash(e)"]))
    lay.write("claude", perms(allow=["Bash(f)"]))
    lay.write("user", perms(allow=["Bash(g)"]))
    gov = lay.gov(settings_files=[extra], allow=["Bash(h)"])
    listed = [(r["rule"], r["source"].split(" ")[0]) for r in gov.settings.describe()["rules"]]
    assert listed == [
        ("Bash(a)", "managed"),
        ("Bash(h)", "command-line"),
        ("Bash(b)", "cli"),
        ("Bash(c)", "local"),
        ("Bash(d)", "local"),
        ("Bash(e)", "project"),
        ("Bash(f)", "project"),
        ("Bash(g)", "user"),
    ]
    for cmd in "abcdefgh":
        assert (await lay.decide(gov, cmd)).behavior == "allow", cmd


async def test_managed_can_forbid_lower_sources_from_allowing(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write(
        "managed", {"allowManagedPermissionRulesOnly": True, "permissions": {"allow": ["Bash(make test)"]}}
    )
    lay.write("project", perms(allow=["Bash", "Bash(make:*)"], deny=["Bash(make test)"]))
    gov = lay.gov(allow=["Bash(curl:*)"])
    assert (await lay.decide(gov, "make build")).behavior == "ask"
    assert (await lay.decide(gov, "curl x")).behavior == "ask"
    # lower sources may still narrow
    assert (await lay.decide(gov, "make test")).behavior == "deny"
    assert any("managed allow rules only" in d for d in gov.diagnostics)
    # session rules (remembered answers) cannot widen either
    gov.gate.remember("session", ["Bash(make build)"])
    assert (await lay.decide(gov, "make build")).behavior == "ask"


async def test_managed_hooks_only(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    hook = {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}]}
    lay.write("managed", {"allowManagedHooksOnly": True})
    lay.write("project", {"hooks": hook})
    gov = lay.gov()
    assert gov.settings.hook_specs == [] and any("hooks ignored" in d for d in gov.diagnostics)


async def test_mode_precedence(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("user", perms(defaultMode="plan"))
    assert lay.gov().mode == "plan"
    lay.write("project", perms(defaultMode="acceptEdits"))
    assert lay.gov().mode == "acceptEdits"
    assert lay.gov(mode="dontAsk").mode == "dontAsk"
    lay.write("managed", perms(defaultMode="default"))
    gov = lay.gov(mode="dontAsk")
    assert (gov.mode, gov.settings.mode_source) == ("default", "managed")
    with pytest.raises(InvalidModeError):
        lay.gov(mode="yolo")


async def test_claude_settings_are_compatible_input(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write(
        "claude",
        {
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "model": "opus",
            "env": {"X": "1"},
            "permissions": {
                "allow": ["Bash(npm run test:*)"],
                "deny": ["Read(./.env)", "Read(./secrets/**)"],
            },
            "hooks": {
                "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "true"}]}]
            },
        },
    )
    gov = lay.gov()
    assert gov.diagnostics == []
    assert (await lay.decide(gov, "npm run test -- --watch")).behavior == "allow"
    secret = lay.ws / "secrets" / "token"
    tool = ReadTool()
    d = await gov.engine.decide(
        tool, tool.parse_input({"file_path": str(secret)}), make_ctx(lay.ws, tmp_path)
    )
    assert d.behavior == "deny" and d.rule == "Read(./secrets/**)"
    assert [h.event for h in gov.settings.hook_specs] == ["PostToolUse"]


async def test_malformed_rules_reported_with_file_and_line_and_ignored(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    path = lay.write(
        "project",
        '{\n  "permissions": {\n    "allow": [\n      "Bash(git status:*)",\n      "Bash(git status",\n'
        '      "WebFetch(example.com)",\n      7\n    ],\n    "deny": ["Bash()"],\n    "defaultMode": "yolo"\n  },\n'
        '  "whatever": 1\n}\n',
    )
    gov = lay.gov()
    by_line = {d.split(": ")[0]: d for d in gov.diagnostics}
    assert f"{path}:5" in by_line and "'Bash(git status'" in by_line[f"{path}:5"]
    assert f"{path}:6" in by_line and f"{path}:7" in by_line and f"{path}:9" in by_line
    assert f"{path}:10" in by_line and "defaultMode" in by_line[f"{path}:10"]
    assert f"{path}:12" in by_line and "whatever" in by_line[f"{path}:12"]
    assert [r.text for r in gov.settings.rules.rules] == ["Bash(git status:*)"]
    # the malformed allow never widened anything
    assert (await lay.decide(gov, "git status; rm -rf x")).behavior == "ask"
    # the malformed deny rule (line 9) may have been the one that mattered: the session degrades
    assert gov.mode == "default" and gov.settings.degraded


async def test_malformed_cli_rules_and_missing_settings_file(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    gov = lay.gov(allow=["Bash(oops"], settings_files=[tmp_path / "missing.json"])
    assert any("--allow 'Bash(oops'" in d for d in gov.diagnostics)
    assert any("--settings file not found" in d for d in gov.diagnostics)


async def test_managed_path_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lay = Layout(tmp_path)
    managed = lay.write("policy.json", perms(deny=["Bash"]))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(managed))
    monkeypatch.setenv("HOME", str(lay.home))
    gov = build_governance(lay.ws, trust_workspace=True)
    assert (await lay.decide(gov, "ls")).behavior == "deny"
    assert gov.settings.files[0].path == managed


async def test_settings_model_dump_and_mcp_servers(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("user", {"mcpServers": {"gh": {"command": "gh-mcp"}, "fs": {"command": "user-fs"}}})
    lay.write(
        "project",
        {
            "mcpServers": {"fs": {"command": "project-fs"}},
            "permissions": {"additionalDirectories": ["../shared", "~/notes"]},
        },
    )
    gov = lay.gov()
    assert gov.settings.mcp_servers == {"fs": {"command": "project-fs"}, "gh": {"command": "gh-mcp"}}
    dumped = gov.settings.model_dump(by_alias=True)
    assert dumped["mcpServers"]["gh"] == {"command": "gh-mcp"}
    assert dumped["permissions"]["defaultMode"] == "default"
    assert gov.allowed_roots() == (lay.ws, tmp_path / "shared", lay.home / "notes")


async def test_relative_rules_in_settings_file_are_anchored_at_its_project(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    other = tmp_path / "elsewhere"
    lay.write("elsewhere/policy.json", perms(deny=["Read(/data/**)"]))
    lay.write("user", perms(deny=["Read(/.ssh/**)"]))
    gov = lay.gov(settings_files=[other / "policy.json"])
    tool = ReadTool()
    ctx = make_ctx(lay.ws, tmp_path)

    async def behavior(path: Path) -> str:
        decision = await gov.engine.decide(tool, tool.parse_input({"file_path": str(path)}), ctx)
        return str(decision.behavior)

    assert await behavior(other / "data" / "x") == "deny"
    assert await behavior(lay.home / ".ssh" / "id_rsa") == "deny"
    assert await behavior(lay.ws / "data" / "x") == "allow"


async def test_web_fetch_section_merged_by_precedence(tmp_path: Path) -> None:
    lay = Layout(tmp_path)
    lay.write("user", {"webFetch": {"upgradeHttp": True, "maxBytes": 1000}})
    lay.write("project", {"webFetch": {"allowPrivateHosts": ["127.0.0.1"], "maxBytes": 2000}})
    lay.write("local", {"webFetch": "nonsense"})
    gov = lay.gov()
    dumped = gov.settings.model_dump(by_alias=True)
    assert dumped["webFetch"] == {"allowPrivateHosts": ["127.0.0.1"], "maxBytes": 2000, "upgradeHttp": True}
    assert any("webFetch must be an object" in d for d in gov.diagnostics)
