"""Red team round 5: the session directory inside the workspace was the sandbox's to write.

The default session directory is ``~/.local/state/shellrt/sessions/<id>``: with
the home directory as the workspace (``shellrt serve`` started in ``~``), or any
``session_dir`` inside a writable root, it was bind-mounted writable into the
sandbox. A command listed ``shell/``, planted symlinks at the next spool names
(``cmd-<tag>-0003.err -> /etc/...``) and shellrt, as root, truncated and wrote
the target on the host: any host file, from a sandboxed command. The same
directory holds the transcript, the resume state, persisted results the model
is pointed at, the audit log and the quarantine.

A session directory inside a writable root is now masked in the sandbox, as
secrets are (commands see an empty, read-only directory; it cannot be renamed
away), the file tools still read it; and the spools never follow a symlink.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shellrt
from tests.conftest import require

pytestmark = pytest.mark.anyio

KINDS = ["bwrap", "docker-bind"]


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A 0755 directory outside the workspace (and outside the sandbox's private /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="shellrt-rt5-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _runtime(kind: str, home: Path) -> shellrt.Runtime:
    sandbox: Any
    if kind == "bwrap":
        require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
        sandbox = "bwrap"
    else:
        from sandbox import DockerConfig
        from tests._docker_support import DEBIAN, require_docker

        require_docker()
        sandbox = DockerConfig(image=DEBIAN, workspace_mode="bind")
    return shellrt.Runtime(
        workspace=home,
        sandbox=sandbox,
        mode="bypassPermissions",
        session_dir=home / ".local/state/shellrt/sessions/s1",
        settings_files=(),
    )


async def _bash(rt: shellrt.Runtime, command: str) -> str:
    user = await rt.run(
        [
            {
                "type": "tool_use",
                "id": f"rt5-{os.urandom(4).hex()}",
                "name": "Bash",
                "input": {"command": command},
            }
        ]
    )
    content = user["content"][0]["content"]
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


#: Plants a symlink to the victim at every name the host will open next, in every place of the session.
_PLANT = r"""
s=.local/state/shellrt/sessions/s1
for d in "$s" "$s/shell" "$s/tasks" "$s/tool-results"; do
  mkdir -p "$d" 2>/dev/null
  tag=$(ls -a "$s/shell" 2>/dev/null | grep -o 'cmd-[0-9a-f]*' | head -1)
  for n in 0001 0002 0003 0004 0005 0006 0007 0008 0009; do
    for f in "$tag-$n.out" "$tag-$n.err" "t$n.out" "t$n.err"; do ln -sf "$VICTIM" "$d/$f" 2>/dev/null; done
  done
done
for f in transcript.jsonl state.json audit.jsonl; do rm -f "$s/$f" 2>/dev/null; ln -sf "$VICTIM" "$s/$f" 2>/dev/null; done
ls -A "$s" "$s/shell" 2>&1 | head -5
touch "$s/shell/planted" 2>/dev/null && echo PLANTED || echo REFUSED
"""


@pytest.mark.parametrize("kind", KINDS)
async def test_a_command_cannot_make_the_host_write_through_the_session_directory(
    kind: str, tmp_path: Path, host_dir: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    victim = host_dir / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o666)  # writable for anyone: only the host's own write through a link is tested
    async with _runtime(kind, home) as rt:
        planted = await _bash(rt, f"export VICTIM={victim}\n{_PLANT}")
        for n in range(4):
            await _bash(rt, f"echo output-{n}; echo errors-{n} >&2")
            await _bash(rt, "true")
        session = home / ".local/state/shellrt/sessions/s1"
        big = await rt.run(
            [{"type": "tool_use", "id": "rt5-big", "name": "Bash", "input": {"command": "seq 1 40000"}}]
        )
        assert "saved" in str(big["content"][0]["content"]), big
        moved = await _bash(
            rt,
            "mv .local .moved 2>/dev/null && echo MOVED; mv .local/state .local/st2 2>/dev/null && echo MOVED",
        )
        listing = sorted(p.name for p in session.iterdir()) if session.is_dir() else ["(gone)"]
    assert victim.read_text() == "precious\n", (planted, listing)
    assert "PLANTED" not in planted and "MOVED" not in moved, (planted, moved)
    assert not any(n.endswith((".jsonl", ".json")) and (session / n).is_symlink() for n in listing), listing
    assert not (home / ".moved").exists()


async def test_the_file_tools_still_read_a_masked_session_directory(tmp_path: Path) -> None:
    """Persisted output the model is pointed at stays readable with Read, on the masked session dir."""
    home = tmp_path / "home"
    home.mkdir()
    async with _runtime("bwrap", home) as rt:
        big = await rt.run(
            [{"type": "tool_use", "id": "rt5-big2", "name": "Bash", "input": {"command": "seq 1 40000"}}]
        )
        text = str(big["content"][0]["content"])
        path = next(word for word in text.split() if "/tool-results/" in word or "/shell/" in word)
        read = await rt.run(
            [
                {
                    "type": "tool_use",
                    "id": "rt5-read",
                    "name": "Read",
                    "input": {"file_path": path.strip("().,`'\""), "limit": 3},
                }
            ]
        )
        block = read["content"][0]
        assert not block.get("is_error"), block
        assert "1" in str(block["content"]), block


def test_a_spool_never_writes_through_a_symlink_at_its_name(tmp_path: Path, host_dir: Path) -> None:
    """Where a command could still reach a spool directory (the `Supervisor` API given a session
    directory inside a writable root: only the `Runtime` masks it), a symlink at the next spool
    name is refused, never followed."""
    from shellrt.supervisor.spool import OutputSpool, SpoolFiles

    victim = host_dir / "victim.txt"
    victim.write_text("precious\n")
    spool_dir = tmp_path / "shell"
    spool_dir.mkdir()
    files = SpoolFiles(spool_dir, "cmd-x")
    for name in ("cmd-x-0001.out", "cmd-x-0001.err", "task.out"):
        (spool_dir / name).symlink_to(victim)
    name = files.take()
    out = OutputSpool(spool_dir / f"{name}.out", files=files)
    out.write(b"through the link?")  # a spare renamed over the link (the link goes, the target stays)
    out.close()
    with pytest.raises(OSError):
        files.place_empty(spool_dir / f"{name}.err")
    with pytest.raises(OSError):
        OutputSpool(spool_dir / "task.out")
    files.close()
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("kind", KINDS)
async def test_shellrts_own_state_in_a_home_workspace_is_out_of_the_sandboxs_reach(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the home directory as the workspace, a command wrote shellrt's trust store (trusting a
    hostile repository's hooks for the next session, which ran them on the host), the in-flight
    records a later session restores from, and the cached docker identity helper."""
    home = tmp_path / "home"
    home.mkdir()
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "SHELLRT_HOME",
        "SHELLRT_TRUST_STORE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    targets = [
        ".config/shellrt/trusted-workspaces.json",
        ".local/state/shellrt/inflight/forged",
        ".local/state/shellrt/sessions/other/state.json",
        ".cache/shellrt/priv-0123456789abcdef",
    ]
    plant = "\n".join(
        f"mkdir -p {os.path.dirname(t)} 2>/dev/null; echo forged > {t} 2>/dev/null && echo PLANTED {t}"
        for t in targets
    )
    async with _runtime(kind, home) as rt:
        out = await _bash(
            rt, plant + "\nmv .config .c2 2>/dev/null && echo MOVED; mv .cache .c3 2>/dev/null && echo MOVED"
        )
        read = await rt.run(
            [
                {
                    "type": "tool_use",
                    "id": "rt5-ts",
                    "name": "Write",
                    "input": {"file_path": str(home / targets[0]), "content": "{}"},
                }
            ]
        )
    assert "PLANTED" not in out and "MOVED" not in out, out
    assert read["content"][0].get("is_error"), read
    assert not any((home / t).exists() for t in targets)
