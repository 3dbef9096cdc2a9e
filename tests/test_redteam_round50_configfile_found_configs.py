"""Red team, round 50 (configfile): programs an allow rule covers that obey a configuration file they
find from their directory, where that file names code.

Checked with the real programs installed here (cargo 1.95 and rustup 1.29, mypy 2.4, npm 11):

* ``cargo tree``/``cargo metadata`` run ``rustc -vV`` through ``.cargo/config(.toml)``'s
  ``build.rustc-wrapper``, from the cwd or any parent (round 49's Left);
* the rustup proxies (``cargo --version``, ``rustfmt --version``) run ``<path>/bin/<program>`` of a
  ``rust-toolchain(.toml)`` found upward;
* ``mypy`` imports a ``plugins`` file and runs ``python_executable`` of a ``mypy.ini``/``setup.cfg``
  found upward;
* ``npm config edit`` runs a project ``.npmrc``'s ``editor``.

The engine allowed each under the program's prefix rule; now the part carries a hazard naming the file
(`shellrt.tools._configfiles`), so no allow rule covers it. The end-to-end case runs real cargo through
the real runtime on the local backend: before, the workspace's wrapper made a marker outside it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import shellrt
from shellrt.protocol import ToolUseBlock
from shellrt.tools.bash import Bash
from tests._governance import envelope_text
from tests.test_redteam_round26_analysis3_pwsh_rule_case import decide

pytestmark = pytest.mark.anyio

ALLOW = [
    "Bash(cargo tree:*)", "Bash(cargo metadata:*)", "Bash(cargo --version:*)", "Bash(rustfmt:*)",
    "Bash(mypy:*)", "Bash(npm config:*)", "Bash(npm ls:*)", "Bash(pylint:*)", "Bash(flake8:*)", "Bash(yarn:*)",
    "Bash(cd:*)", "Bash(timeout:*)", "Bash(cargo fmt:*)", "Bash(python3 -m mypy:*)", "Bash(python3 -Im mypy:*)",
]
#: (directory below the workspace, file, text): each names code the program runs.
PLANTED = [
    ("a", ".cargo/config.toml", '[build]\nrustc-wrapper = "./q"\n'),
    ("b", ".cargo/config", '[target.x86_64-unknown-linux-gnu]\nrunner = "./q"\n'),
    ("c", "rust-toolchain.toml", '[toolchain]\npath = "/work/tmpws/tc"\n'),
    ("d", "rust-toolchain", "/work/tmpws/tc\n"),
    ("e", "mypy.ini", "[mypy]\nplugins = evil.py\n"),
    ("f", "setup.cfg", "[metadata]\nname = f\n[mypy]\npython_executable = ./q\n"),
    ("g", "pyproject.toml", '[tool.mypy]\nplugins = ["evil.py"]\n'),
    ("h", ".npmrc", "registry=https://r/\neditor=./q\n"),
    ("i", ".pylintrc", "[MAIN]\ninit-hook='import os; os.system(\"./q\")'\n"),
    ("j", "tox.ini", "[flake8:local-plugins]\nextension =\n  X = evil:P\npaths = .\n"),
    ("k", ".yarnrc.yml", "yarnPath: ./q.cjs\n"),
    ("l", ".cargo/config.toml", "[build]\nrustc-wrapper = 'ok'\n\x00"),  # unparseable: fail closed
    ("n", ".cargo/config.toml", '[alias]\nfmt = "run --bin q"\n'),  # shadows the external `cargo fmt`
]
ATTACKS = [
    "cd a && cargo tree", "cd a && cargo metadata --format-version 1", "cd a && timeout 60 cargo tree",
    "cd a/sub && cargo tree", "cd b/sub && cargo metadata", "cd c/sub && cargo --version",
    "cd d && rustfmt --version", "cd c && /root/.cargo/bin/cargo tree", "cd e/sub && mypy x.py",
    "cd f && mypy .", "cd g && mypy .", "cd h && npm config edit", "cd h/sub && npm config edit", "cd i && pylint x",
    "cd j && flake8 .", "cd k && yarn --version", "cd l && cargo tree",
    "cargo tree --config 'build.rustc-wrapper=\"./q\"'", "mypy --config-file e/mypy.ini x.py",
    "cd e && python3 -m mypy .", "cd e/sub && python3 -Im mypy x.py", "cd m && cargo tree",
    "cd n && cargo fmt --check",
]
#: Files that name no code: the rules still allow.
CLEAN = [
    (".cargo/config.toml", '[build]\njobs = 2\n[term]\nverbose = true\n[alias]\nxtask = "run -p xtask --"\n'),
    ("rust-toolchain.toml", '[toolchain]\nchannel = "stable"\ncomponents = ["rustfmt"]\n'),
    ("pyproject.toml", '[tool.mypy]\nstrict = true\n[tool.poetry.plugins."x"]\na = "b:c"\n'),
    ("setup.cfg", "[options.entry_points]\nplugins = x\n"),
    (".npmrc", "registry=https://r/\nsave-exact=true\n"),
]
KEPT = ["cargo tree", "cargo metadata --format-version 1", "cargo --version", "mypy .", "npm config get registry",
        "npm ls", "rustfmt --version", "python3 -m mypy .", "cd n && cargo tree"]


async def test_a_config_naming_code_keeps_the_allow_rule_off(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for directory, name, text in PLANTED:
        path = ws / directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        (ws / directory / "sub").mkdir(exist_ok=True)
    # `m/.cargo` is a link to a directory outside the workspace whose config names a wrapper.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "config.toml").write_text('[build]\nrustc-wrapper = "/bin/true"\n')
    (ws / "m").mkdir()
    (ws / "m" / ".cargo").symlink_to(tmp_path / "elsewhere")
    for name, text in CLEAN:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    got = await decide(tmp_path, Bash(), ATTACKS + KEPT, "default", ws=ws, allow=ALLOW)
    allowed = [c for c, d in zip(ATTACKS, got[: len(ATTACKS)], strict=True) if d == "allow"]
    refused = [c for c, d in zip(KEPT, got[len(ATTACKS) :], strict=True) if d != "allow"]
    assert (allowed, refused) == ([], [])
    # Planted after a first decision of the same command text: seen (no remembered split or decision).
    from shellrt.permissions import build_governance
    from shellrt.protocol import ToolContext

    ws2 = tmp_path / "ws2"
    (ws2 / ".shellrt").mkdir(parents=True)
    (ws2 / ".shellrt" / "settings.json").write_text(json.dumps({"permissions": {"allow": ALLOW}}))
    gov = build_governance(ws2, home=tmp_path / "home", managed_path=tmp_path / "m.json", trust_workspace=True)
    ctx = ToolContext(session_id="s", session_dir=tmp_path / "s", workspace=ws2, cwd=str(ws2), allowed_roots=(ws2,))
    tool = Bash()
    first = await gov.engine.decide(tool, tool.parse_input({"command": "cargo tree"}), ctx)
    (ws2 / ".cargo").mkdir()
    (ws2 / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./q"\n')
    second = await gov.engine.decide(tool, tool.parse_input({"command": "cargo tree"}), ctx)
    assert (first.behavior, second.behavior) == ("allow", "ask"), second.reason
    assert "config.toml" in (second.reason or "")

@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo not installed")
async def test_real_cargo_tree_under_its_rule_runs_no_workspace_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole call on the local backend in ``dontAsk`` mode (an ask is refused): before, real cargo
    ran the workspace's wrapper, which made a marker outside the workspace."""
    cargo = shutil.which("cargo") or "cargo"
    home = tmp_path / "home"
    home.mkdir()
    # The command's environment is the host's, HOME this test's: rustup and cargo find their homes there.
    (home / ".rustup").symlink_to(os.environ.get("RUSTUP_HOME") or Path.home() / ".rustup")
    (home / ".cargo").symlink_to(os.environ.get("CARGO_HOME") or Path(cargo).resolve().parent.parent)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    ws = tmp_path / "ws"
    for crate in ("hostile", "clean"):
        (ws / crate / "src").mkdir(parents=True)
        (ws / crate / "Cargo.toml").write_text(f'[package]\nname = "{crate}"\nversion = "0.1.0"\nedition = "2021"\n')
        (ws / crate / "src" / "lib.rs").write_text("")
    marker = tmp_path / "PWNED"
    (ws / "hostile" / "q").write_text(f'#!/bin/sh\ntouch {marker}\nexec "$@"\n')
    (ws / "hostile" / "q").chmod(0o755)
    (ws / "hostile" / ".cargo").mkdir()
    (ws / "hostile" / ".cargo" / "config.toml").write_text('[build]\nrustc-wrapper = "./q"\n')
    settings = tmp_path / "operator-settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(cargo tree:*)", "Bash(cd:*)"]}}))
    async with shellrt.Runtime(
        workspace=ws, sandbox="local", session_dir=tmp_path / ".s", tools=[Bash()],
        settings_files=[settings], mode="dontAsk",
    ) as rt:
        commands = ["cd hostile && cargo tree --offline", "cd clean && cargo tree --offline"]
        blocks = [ToolUseBlock(id=f"t{i}", name="Bash", input={"command": c}) for i, c in enumerate(commands)]
        hostile, clean = await rt.run_envelopes(blocks)
    assert not marker.exists(), envelope_text(hostile)
    assert hostile.is_error and "rustc-wrapper" in envelope_text(hostile)
    assert not clean.is_error and "clean v0.1.0" in envelope_text(clean), envelope_text(clean)
