"""A workspace that is (or holds) the home directory: what a later host program runs from it is protected.

With ``~`` as the workspace a command could leave a program on the PATH
(``~/.local/bin/git``), a systemd user unit or autostart entry for the next login, an
``authorized_keys`` line, a fish or X session script, a ``.pth`` file every later
Python runs, package-manager and gpg-agent configuration naming programs. These
names are now protected below a home inside the workspace: reverted after the
command, quarantined, and named in the result (`shellrt.supervisor._protect_home`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

import shellrt
from sandbox import BwrapConfig
from shellrt.supervisor.protect import protected_reason
from tests import _nonroot
from tests.conftest import require

pytestmark = pytest.mark.anyio

#: Home-relative paths a command plants (none exists before).
PLANTS = [
    ".local/bin/git",
    "bin/ls",
    ".config/systemd/user/evil.service",
    ".config/systemd/user/default.target.wants/evil.service",
    ".local/share/systemd/user/evil.timer",
    ".config/autostart/evil.desktop",
    ".local/share/applications/evil.desktop",
    ".config/environment.d/50-evil.conf",
    ".config/fish/config.fish",
    ".config/fish/conf.d/evil.fish",
    ".ssh/authorized_keys",
    ".ssh/rc",
    ".ssh/config",
    ".xprofile",
    ".pam_environment",
    ".bash_aliases",
    ".config/git/attributes",
    ".config/pip/pip.conf",
    ".npmrc",
    ".cargo/config.toml",
    ".gnupg/gpg-agent.conf",
    ".local/lib/python3.11/site-packages/evil.pth",
    ".local/lib/python3.11/site-packages/usercustomize.py",
    ".vimrc",
]
#: Written too, and kept: ordinary files in the home.
KEPT = ["project/main.py", ".cache/tool/data", "notes.md", ".local/share/tool/state.json"]


@pytest.fixture
def homes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory of homes outside /tmp (bwrap's /tmp is private); HOME is ``<it>/alice``."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-homews-", dir="/var/tmp"))
    path.chmod(0o755)
    (path / "alice").mkdir()
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "SHELLRT_HOME",
        "SHELLRT_TRUST_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(path / "alice"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _runtime(kind: Literal["local", "bwrap"], workspace: Path) -> shellrt.Runtime:
    if kind == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    return shellrt.Runtime(workspace=workspace, sandbox=kind, mode="bypassPermissions", settings_files=())


async def _bash(rt: shellrt.Runtime, command: str) -> str:
    user = await rt.run(
        [
            {
                "type": "tool_use",
                "id": f"homews-{os.urandom(5).hex()}",
                "name": "Bash",
                "input": {"command": command},
            }
        ]
    )
    content: Any = user["content"][0]["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


def _plant(paths: list[str]) -> str:
    return "\n".join(
        f'mkdir -p "$HOME/{os.path.dirname(p) or "."}" && printf "#!/bin/sh\\necho pwned\\n" > "$HOME/{p}" '
        f'&& chmod +x "$HOME/{p}"'
        for p in paths
    )


@pytest.mark.parametrize("kind", ["local", "bwrap"])
@pytest.mark.parametrize("layout", ["home", "contains-home"])
async def test_what_a_later_host_program_runs_from_the_home_is_reverted(
    homes: Path, kind: Literal["local", "bwrap"], layout: str
) -> None:
    home = homes / "alice"
    workspace = home if layout == "home" else homes
    async with _runtime(kind, workspace) as rt:
        out = await _bash(rt, _plant(PLANTS + KEPT) + "\necho planted")
        session = rt.session_dir
    assert "planted" in out, out
    left = [p for p in PLANTS if os.path.lexists(home / p)]
    assert not left, f"{kind}/{layout}: still in the home after the command: {left}\n{out}"
    assert all((home / p).is_file() for p in KEPT), out
    quarantined = [str(p) for p in (session / "quarantine").rglob("*") if p.is_file()]
    assert all(any(q.endswith("/" + p) for q in quarantined) for p in PLANTS), quarantined
    assert ".local/bin/git" in out and "reverted" in out.lower(), out


async def test_a_symlink_redirecting_a_protected_directory_is_reverted(homes: Path) -> None:
    home = homes / "alice"
    async with _runtime("local", home) as rt:
        out = await _bash(
            rt,
            'mkdir -p "$HOME/payload" "$HOME/.config" && echo x > "$HOME/payload/evil.desktop" '
            '&& ln -s "$HOME/payload" "$HOME/.config/autostart" && ln -s "$HOME/payload" "$HOME/.ssh" && echo done',
        )
    assert "done" in out, out
    assert not os.path.lexists(home / ".config/autostart") and not os.path.lexists(home / ".ssh"), out
    assert (home / "payload/evil.desktop").is_file()


async def test_the_operators_own_files_stay_and_a_change_to_them_is_undone(homes: Path) -> None:
    home = homes / "alice"
    tool = home / ".local/bin/mytool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho mine\n")
    tool.chmod(0o755)
    async with _runtime("local", home) as rt:
        await _bash(rt, "true")
        out = await _bash(rt, f"echo 'echo pwned' >> {tool}")
    assert tool.read_text() == "#!/bin/sh\necho mine\n", out


def test_the_file_tools_ask_before_writing_there(homes: Path) -> None:
    home = homes / "alice"
    for path in (".local/bin/git", ".config/systemd/user/x.service", ".ssh/authorized_keys", ".npmrc"):
        assert protected_reason(home / path) is not None, path
    for path in ("project/main.py", ".local/share/tool/state.json", "bin.txt"):
        assert protected_reason(home / path) is None, path


def test_the_home_names_hold_for_an_unprivileged_caller() -> None:
    """The tests above as uid 65534: the caller owns its home, so only the check stands in the way."""
    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, the tests above are it)"
    )
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(shutil.which("setpriv") is not None, "setpriv is not installed")
    args = [
        "tests/test_home_workspace_protect.py",
        "--deselect",
        "tests/test_home_workspace_protect.py::test_the_home_names_hold_for_an_unprivileged_caller",
    ]
    collected, outcome = _nonroot.run_as_nobody(args)
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and not (outcome.failures or outcome.errors), summary
    assert outcome.skipped == 0 and outcome.tests == collected.items, summary


@pytest.mark.parametrize("persistent", [True, False])
async def test_on_bwrap_existing_home_names_are_read_only_and_masks_stay(
    homes: Path, persistent: bool
) -> None:
    """Where they exist when the session starts, bwrap binds them read-only (the check is the net
    for new ones); a default-masked one (``~/.ssh``) stays masked, never shown again."""
    home = homes / "alice"
    tool = home / ".local/bin/mytool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho mine\n")
    keys = home / ".ssh/authorized_keys"
    keys.parent.mkdir()
    keys.write_text("ssh-ed25519 AAAA operator\n")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    sandbox = BwrapConfig(persistent=persistent)  # per session (zygote) and one bwrap per command
    async with shellrt.Runtime(
        workspace=home, sandbox=sandbox, mode="bypassPermissions", settings_files=()
    ) as rt:
        out = await _bash(
            rt,
            'echo pwned >> "$HOME/.local/bin/mytool" || echo REFUSED; mv "$HOME/.local" "$HOME/.l2" || echo PINNED; '
            f"cat {keys} 2>&1; echo end",
        )
    assert "REFUSED" in out and "PINNED" in out and "operator" not in out, out
    assert tool.read_text() == "#!/bin/sh\necho mine\n" and (home / ".local").is_dir()
