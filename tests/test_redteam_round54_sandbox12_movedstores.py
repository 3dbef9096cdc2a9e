"""Red team round 54 (sandbox12): credential stores the operator's environment moves.

The default masks name the home's stores (``~/.gnupg``, ``~/.docker``, ``~/.config/gh``...), but
the programs obey variables that move them: ``GNUPGHOME``, ``DOCKER_CONFIG``, ``XDG_CONFIG_HOME``,
``CLAUDE_CONFIG_DIR``, ``HF_HOME``, and files named outright: ``GOOGLE_APPLICATION_CREDENTIALS``
(CI's service-account key), ``KUBECONFIG``, ``AWS_SHARED_CREDENTIALS_FILE``, ``PGPASSFILE``,
``HISTFILE``... shellrt's write guard already follows such variables (`_operator_places`); the
masks did not, and a command read each store where the variable put it. Now each default the
variable stands for is masked there too (`MOVED_STORE_DIRS`, `MOVED_STORE_FILES`); a value that is
or holds a writable root or a place the sandbox runs on is left with a note.

Real bwrap, session and one bwrap per command, as root (stores 0644 in a 0755 place in
``/var/tmp``) and as uid 65534 (`tests._nonroot`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.runtime.sandbox_policy import derive_policy
from tests import _nonroot
from tests._rt11_rules import run_in
from tests.conftest import require

pytestmark = [pytest.mark.bwrap]

#: variable -> (its value below the test's place, the secret files below the place it names).
MOVED: dict[str, tuple[str, tuple[str, ...]]] = {
    "XDG_CONFIG_HOME": ("cfg", ("cfg/gh/hosts.yml", "cfg/gcloud/credentials.db", "cfg/glab-cli/config.yml")),
    "GNUPGHOME": ("gpg", ("gpg/private-keys-v1.d/k.key",)),
    "DOCKER_CONFIG": ("dockercfg", ("dockercfg/config.json",)),
    "CLAUDE_CONFIG_DIR": ("claude", ("claude/.credentials.json",)),
    "CODEX_HOME": ("codex", ("codex/auth.json",)),
    "HF_HOME": ("hf", ("hf/token",)),
    "PASSWORD_STORE_DIR": ("pass", ("pass/site.gpg",)),
    "GOOGLE_APPLICATION_CREDENTIALS": ("sa-key.json", ("sa-key.json",)),
    "KUBECONFIG": ("kube/a:{base}/kube/b", ("kube/a", "kube/b")),
    "AWS_SHARED_CREDENTIALS_FILE": ("aws-creds", ("aws-creds",)),
    "PGPASSFILE": ("pgpass", ("pgpass",)),
    "NETRC": ("netrc", ("netrc",)),
    "HISTFILE": ("hist", ("hist",)),
    "XAUTHORITY": ("xauth", ("xauth",)),
}
SECRETS = [f for _, files in MOVED.values() for f in files]
MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-moved-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        for i, rel in enumerate(SECRETS):
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"RT54-MOVED-{i:02d}\n")
        for path in base.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        for name, (value, _) in MOVED.items():
            monkeypatch.setenv(name, f"{base}/{value.format(base=base)}")
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_moved_store_is_masked(place: Path, tmp_path: Path) -> None:
    policy, _ = derive_policy(SandboxPolicy(workspace=tmp_path))
    masked = set(policy.read_denied)
    # a file itself, or a directory above it that the variable names
    missing = [rel for rel in SECRETS if not any(p in masked for p in (place / rel, *(place / rel).parents))]
    assert not missing, f"{len(missing)} of {len(SECRETS)} moved stores not masked: {missing}"


@pytest.mark.parametrize("persistent", MODES)
def test_a_command_reads_no_moved_store(place: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-ws-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        ws = base / "ws"
        ws.mkdir(mode=0o777)
        ws.chmod(0o777)
        policy, _ = derive_policy(SandboxPolicy(workspace=ws))
        names = " ".join(f"'{place / rel}'" for rel in SECRETS)
        command = f"ls {place} >/dev/null && echo place-visible; for f in {names}; do cat \"$f\" 2>/dev/null; done"
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        out = anyio.run(run_in, backend, ws, base / "session", command)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "place-visible" in out, out
    read = [rel for i, rel in enumerate(SECRETS) if f"RT54-MOVED-{i:02d}" in out]
    assert not read, f"{len(read)} of {len(SECRETS)} moved stores read: {read}"


def test_a_value_the_sandbox_needs_is_a_note(tmp_path: Path) -> None:
    """An odd environment neither stops the session nor hides what commands run on."""
    ws = tmp_path / "ws"
    ws.mkdir()
    environ = {"GNUPGHOME": "/usr", "DOCKER_CONFIG": "/", "XDG_CONFIG_HOME": str(tmp_path), "KUBECONFIG": str(ws)}
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), environ=environ)
    for path in (Path("/usr"), Path("/"), ws, tmp_path):
        assert path not in policy.read_denied
    for name in ("$GNUPGHOME", "$DOCKER_CONFIG", "$KUBECONFIG"):
        assert any(n.startswith(name) for n in notes), notes
    assert tmp_path / "gh" in policy.read_denied  # below the value: masked as usual


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_every_moved_store_is_masked",
        "test_a_command_reads_no_moved_store[per-command]",
        "test_a_command_reads_no_moved_store[session]",
        "test_a_value_the_sandbox_needs_is_a_note",
    )
