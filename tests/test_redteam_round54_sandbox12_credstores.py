"""Red team round 54 (sandbox12): credential stores of the home that no default mask covered.

The sandbox shows the caller's home read-only and masks `DEFAULT_MASKED_PATHS` in it: "the rest of
the home stays readable". A non-root caller's commands run as the caller, so every file of its home
is theirs to read; a root caller's leased uid reads what others may (a CI job's scratch ``HOME``).
The defaults knew ``~/.ssh``, ``~/.aws``, ``~/.docker`` and a dozen more, but not the stores of the
agents themselves (Claude Code's ``~/.claude/.credentials.json``, Codex's ``~/.codex/auth.json``,
Gemini's OAuth file, Copilot's tokens) nor their transcripts (every tool result of the operator's
other sessions, a file masked here that one of them read included), nor those of common tools (``~/.pgpass``, Hugging Face's
token, rclone, podman's registry logins, browsers' cookie stores, shell histories...): a command
printed each into its result. Each is now a default mask (`CREDENTIAL_STORES`).

Real bwrap, session and one bwrap per command, as root with ``home`` in ``/var/tmp`` (0755, files
0644: what the leased uid reads) and as uid 65534 (`tests._nonroot`), whose own home it is.
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

#: (path below the home, the file that holds the secret below it, or "" when the path is the file).
STORES: tuple[tuple[str, str], ...] = (
    (".claude/.credentials.json", ""),
    (".codex/auth.json", ""),
    (".gemini/oauth_creds.json", ""),
    (".claude/projects", "-work-app/5e1f.jsonl"),
    (".codex/sessions", "2026/12/07/rollout-1.jsonl"),
    (".codex/history.jsonl", ""),
    (".gemini/tmp", "0a1b/logs.json"),
    (".config/github-copilot", "hosts.json"),
    (".config/glab-cli", "config.yml"),
    (".config/containers/auth.json", ""),
    (".gem/credentials", ""),
    (".config/composer/auth.json", ""),
    (".composer/auth.json", ""),
    (".m2/settings-security.xml", ""),
    (".pulumi/credentials.json", ""),
    (".config/doctl", "config.yaml"),
    (".config/hcloud", "cli.toml"),
    (".oci", "config"),
    (".databrickscfg", ""),
    (".kaggle", "kaggle.json"),
    (".config/kaggle", "kaggle.json"),
    (".cache/huggingface/token", ""),
    (".huggingface/token", ""),
    (".config/rclone/rclone.conf", ""),
    (".s3cfg", ""),
    (".boto", ""),
    (".passwd-s3fs", ""),
    (".pgpass", ""),
    (".mylogin.cnf", ""),
    (".config/sops", "age/keys.txt"),
    (".cloudflared", "cert.pem"),
    (".config/ngrok", "ngrok.yml"),
    (".ngrok2", "ngrok.yml"),
    (".fly", "config.yml"),
    (".local/share/keyrings", "login.keyring"),
    (".mozilla", "firefox/p/cookies.sqlite"),
    (".config/google-chrome", "Default/Cookies"),
    (".config/chromium", "Default/Cookies"),
    (".Xauthority", ""),
    (".ICEauthority", ""),
    (".bash_history", ""),
    (".zsh_history", ""),
)
MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


def _secret(i: int) -> str:
    return f"RT54-CRED-{i:02d}"


@pytest.fixture
def home() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-home-", dir="/var/tmp"))
    try:
        base.chmod(0o755)  # readable, as a CI job's scratch home is (and a non-root caller's own)
        for i, (store, inner) in enumerate(STORES):
            path = base / store / inner if inner else base / store
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_secret(i) + "\n")
        for path in base.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (base / "notes.txt").write_text("home-visible\n")
        (base / "notes.txt").chmod(0o644)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_every_store_is_a_default_mask(home: Path, tmp_path: Path) -> None:
    policy, _ = derive_policy(SandboxPolicy(workspace=tmp_path), home=home)
    masked = set(policy.read_denied)
    missing = [store for store, _ in STORES if home / store not in masked]
    assert not missing, f"{len(missing)} of {len(STORES)} stores not masked: {missing}"


@pytest.mark.parametrize("persistent", MODES)
def test_a_command_reads_no_store(home: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-ws-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        ws = base / "ws"
        ws.mkdir(mode=0o777)
        ws.chmod(0o777)
        policy, _ = derive_policy(SandboxPolicy(workspace=ws), home=home)
        names = " ".join(f"'{home / s / i if i else home / s}'" for s, i in STORES)
        command = f"cat {home}/notes.txt; for f in {names}; do cat \"$f\" 2>/dev/null; done"
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        out = anyio.run(run_in, backend, ws, base / "session", command)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "home-visible" in out, out  # the home is shown: only the stores are hidden
    read = [STORES[i][0] for i in range(len(STORES)) if _secret(i) in out]
    assert not read, f"{len(read)} of {len(STORES)} stores read: {read}"


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_every_store_is_a_default_mask",
        "test_a_command_reads_no_store[per-command]",
        "test_a_command_reads_no_store[session]",
    )
