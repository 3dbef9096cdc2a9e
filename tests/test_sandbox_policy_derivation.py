"""Read deny rules and default secrets become masked paths, derived in one place (shellrt.runtime.sandbox_policy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.settings import FileSettings
from shellrt.runtime.sandbox_policy import derive_policy
from tests.conftest import require


def _deny(text: str, root: Path) -> Any:
    return parse_rule(text, "deny", RuleOrigin("cli", None, None, root))


def _masked(tmp_path: Path, *rules: str, home: Path | None = None, **kw: Any) -> tuple[set[Path], list[str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws),
        rules=[_deny(r, ws) for r in rules],
        home=home or tmp_path / "home",
        **kw,
    )
    return set(policy.read_denied), notes


def test_static_rules_map_to_one_path(tmp_path: Path) -> None:
    masked, notes = _masked(
        tmp_path, "Read(./secrets/**)", "Read(~/.env)", "Read(//etc/hostname)", "Read(./a/b)"
    )
    ws, home = tmp_path / "ws", tmp_path / "home"
    assert {ws / "secrets", home / ".env", Path("/etc/hostname"), ws / "a" / "b"} <= masked
    assert notes == []


def test_glob_rules_expand_against_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "deep" / "er").mkdir(parents=True)
    for name in ("k.pem", "deep/er/x.pem", "deep/keep.txt"):
        (ws / name).write_text("x")
    masked, _ = _masked(tmp_path, "Read(**/*.pem)", "Read(./deep/*.txt)")
    assert {ws / "k.pem", ws / "deep/er/x.pem", ws / "deep/keep.txt"} <= masked
    assert not any(p.suffix == ".pem" and p not in masked for p in ws.rglob("*.pem"))


def test_a_rule_covering_the_workspace_is_reported_not_mounted(tmp_path: Path) -> None:
    masked, notes = _masked(tmp_path, f"Read(/{tmp_path}/**)")
    assert tmp_path not in masked
    assert any("cannot be masked" in n for n in notes)


def test_only_read_denies_count(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "y").write_text("")  # an Edit deny binds y read-only (write_denied), it masks nothing
    rules = [parse_rule("Read(./x)", "allow", RuleOrigin("cli", None, None, ws)), _deny("Edit(./y)", ws)]
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=rules, mask_defaults=False)
    assert policy.read_denied == ()


def test_default_masks_and_switch(tmp_path: Path) -> None:
    home = tmp_path / "home"
    masked, _ = _masked(tmp_path, home=home)
    assert {
        home / ".ssh",
        home / ".aws",
        home / ".netrc",
        Path("/etc/shadow"),
        Path("/etc/gshadow"),
    } <= masked
    off, _ = _masked(tmp_path, home=home, mask_defaults=False)
    assert off == set()


def test_workspace_settings_cannot_unmask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = FileSettings(path=tmp_path / "p.json", source="project", sandbox={"unmaskDefaults": True})
    masked, notes = _masked(tmp_path, home=home, settings_files=[project])
    assert home / ".ssh" in masked
    assert any("ignored" in n for n in notes)
    user = FileSettings(
        path=tmp_path / "u.json",
        source="user",
        sandbox={"unmaskedPaths": ["~/.ssh"], "maskedPaths": ["~/.mytoken"]},
    )
    masked, _ = _masked(tmp_path, home=home, settings_files=[user])
    assert home / ".ssh" not in masked and home / ".mytoken" in masked and home / ".aws" in masked


def test_derivation_is_idempotent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    once, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[_deny("Read(./s/**)", ws)], home=tmp_path)
    twice, _ = derive_policy(once, home=tmp_path)
    assert twice.read_denied == once.read_denied


# --- end to end on bwrap ----------------------------------------------------------------


def _bash(id_: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "Bash", "input": {"command": command}}


def _text(user: dict[str, Any]) -> str:
    content = user["content"][0]["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


@pytest.mark.anyio
async def test_bash_cannot_read_what_read_may_not_even_in_bypass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATEKEY\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "a").write_text("TOPSECRET\n")
    (ws / "id.pem").write_text("PEMSECRET\n")
    (ws / "ok.txt").write_text("visible\n")
    async with shellrt.Runtime(
        ws,
        "bwrap",
        mode="bypassPermissions",
        deny=["Read(./secrets/**)", "Read(**/*.pem)"],
        session_dir=tmp_path / "session",
    ) as rt:
        # Governance refuses a plain `cat secrets/a`, and a dynamic read, before they run; a script
        # file whose reads it cannot see (names built at run time, inside the script) meets the
        # sandbox, which must not show the masked files either.
        (ws / "reader.py").write_text(
            "for p in ('secr' + 'ets/a', 'id.' + 'pem', 'ok.txt'):\n"
            "    try: print(open(p).read())\n"
            "    except OSError as e: print(e)\n"
        )
        cat = _text(await rt.run(_bash("a", "python3 reader.py")))
        grep = _text(await rt.run(_bash("b", "grep -r SECRET . ; echo grep=$?")))
        key = _text(await rt.run(_bash("c", f"cat {home}/.ssh/id_ed25519; ls -A {home}/.ssh | wc -l")))
    assert "TOPSECRET" not in cat and "PEMSECRET" not in cat and "visible" in cat
    assert "TOPSECRET" not in grep and "PEMSECRET" not in grep  # no match printed, nothing read
    assert "PRIVATEKEY" not in key
    assert key.strip().endswith("0")


@pytest.mark.anyio
async def test_settings_sandbox_section_masks_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".mytoken").write_text("TOKENVALUE\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    settings = tmp_path / "extra.json"
    settings.write_text(json.dumps({"sandbox": {"maskedPaths": ["~/.mytoken"]}}))
    ws = tmp_path / "ws"
    ws.mkdir()
    async with shellrt.Runtime(
        ws, "bwrap", mode="bypassPermissions", settings_files=[settings], session_dir=tmp_path / "s"
    ) as rt:
        out = _text(await rt.run(_bash("a", f"cat {home}/.mytoken")))
        assert not any("unknown key" in d for d in rt.diagnostics)
    assert "TOKENVALUE" not in out
