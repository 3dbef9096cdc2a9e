"""Red team round 40 (trust3): files a host tool obeys at every command, by the project's or the
home's place (round 39 trust's question (b)).

``global.json``: the .NET host reads it from the directory it runs in or any parent, and .NET 10's
``sdk.paths`` name a directory (relative ones too) whose SDK runs at every ``dotnet`` command there
-- an editor's C# extension at folder open included -- as rustup's ``path`` toolchain (round 31,
guarded). In a home workspace: Gradle's user ``gradle.properties`` (``org.gradle.jvmargs=
-javaagent:…`` in every daemon of every project), Bazel's ``~/.bazelrc``
(``--workspace_status_command`` runs a program at every build), bun's global ``.bunfig.toml``
(``preload``), ``dotnet tool install -g``'s ``~/.dotnet/tools``; ``$GRADLE_USER_HOME`` moved.
Each was kept and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PROJECT = ["global.json", "src/App/global.json"]
HOME = [".gradle/gradle.properties", ".bazelrc", ".bunfig.toml", ".config/.bunfig.toml", ".dotnet/tools/r40"]
MOVED = ["gradle-home/gradle.properties", "gradle-home/init.d/r40.gradle"]
KEPT = ["src/App/App.csproj", "build.gradle", "gradle.properties", "src/main.py"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_sdk_selection_and_build_homes_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "src")
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GRADLE_USER_HOME", str(ws / "gradle-home"))
    plants = PROJECT + HOME + MOVED
    plant_and_check(ws, tmp_path / "s", plants, KEPT, "{}\n", backend=backend)
    assert_tools_ask(ws, plants)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
