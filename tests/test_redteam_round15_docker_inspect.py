"""Red team round 15: a dataset chose its samples' shellrt sandbox (``sandbox: local``).

Inspect reads a sample's ``sandbox`` from the dataset (``"sandbox": ["shellrt", "cfg.yaml"]``,
the file resolved beside the dataset) and prefers it to the task's own config of the same
type. The provider took a config file as given: a downloaded dataset shipping ``sandbox:
local`` ran the model's commands on the host, unsandboxed, as the operator; ``network: host``
gave them the host's loopback services (a Ray head's GCS and dashboard, databases), and a
``workspace`` naming a root-only directory was copied in with root's rights (round 11 listed
the provider's missing floor as open). A config *file* may no longer widen the sandbox: code
gives such settings as a `ShellrtSandboxConfig` (or a dict), or the operator trusts every file
with ``SHELLRT_INSPECT_TRUST_CONFIG_FILES=1``. Holds for an unprivileged caller too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from inspect_ai._eval.task.sandbox import resolve_sandbox
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import json_dataset
from inspect_ai.util._sandbox.environment import SandboxEnvironmentSpec

from shellrt.integrations._inspect_config import load_config
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment

pytestmark = pytest.mark.anyio

TRUST_CONFIG_FILES_ENV = "SHELLRT_INSPECT_TRUST_CONFIG_FILES"


def _dataset(tmp_path: Path, config: str) -> Path:
    """A task directory whose own config is bwrap, and a dataset whose sample names ``config``."""
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "shellrt.yaml").write_text("sandbox: bwrap\n")
    data = tmp_path / "dataset"
    data.mkdir()
    (data / "evil.yaml").write_text(config)
    record = {"input": "hi", "target": "x", "sandbox": ["shellrt", "evil.yaml"]}
    (data / "samples.jsonl").write_text(json.dumps(record) + "\n")
    return data / "samples.jsonl"


async def test_a_dataset_sample_cannot_run_the_model_s_commands_unsandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TRUST_CONFIG_FILES_ENV, raising=False)
    [sample] = list(json_dataset(str(_dataset(tmp_path, "sandbox: local\n"))))
    task_spec = SandboxEnvironmentSpec("shellrt", str(tmp_path / "task" / "shellrt.yaml"))
    chosen = await resolve_sandbox(task_spec, sample)
    assert chosen is not None and str(chosen.config).endswith("evil.yaml")  # Inspect takes the sample's
    marker = tmp_path / "ran-on-the-host"
    try:
        envs = await ShellrtSandboxEnvironment.sample_init("t", chosen.config, {})
    except PrerequisiteError as exc:
        assert "sandbox: local" in str(exc) and TRUST_CONFIG_FILES_ENV in str(exc), exc
    else:  # the attack: the model's command on the host itself
        env = envs["default"]
        try:
            await env.exec(["sh", "-c", f"touch {marker}"])
        finally:
            await ShellrtSandboxEnvironment.sample_cleanup("t", chosen.config, envs, False)
        pytest.fail(f"a dataset's config file made a local (unsandboxed) sandbox: {marker.exists()=}")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("sandbox: bwrap\nnetwork: host\n", "network: host"),
        ("sandbox: docker\nnetwork: bridge\n", "network: bridge"),
    ],
)
def test_a_config_file_may_not_open_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, named: str
) -> None:
    monkeypatch.delenv(TRUST_CONFIG_FILES_ENV, raising=False)
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ValueError, match=named):
        load_config(str(tmp_path / "c.yaml"))


def test_code_and_a_trusting_operator_still_choose_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TRUST_CONFIG_FILES_ENV, raising=False)
    assert load_config({"sandbox": "local"}).sandbox == "local"
    assert load_config(ShellrtSandboxConfig(network="host")).network == "host"
    (tmp_path / "c.yaml").write_text("sandbox: bwrap\nnetwork: proxied\nallowed_domains: [pypi.org]\n")
    # Round 16: a file's allowed_domains only narrow what the operator lists.
    monkeypatch.setenv("SHELLRT_INSPECT_ALLOWED_DOMAINS", "pypi.org")
    assert load_config(str(tmp_path / "c.yaml")).network == "proxied"
    (tmp_path / "l.yaml").write_text("sandbox: local\n")
    monkeypatch.setenv(TRUST_CONFIG_FILES_ENV, "1")
    assert load_config(str(tmp_path / "l.yaml")).sandbox == "local"


@pytest.mark.skipif(os.geteuid() != 0, reason="root hosts copy with root's rights")
def test_a_config_file_may_not_copy_in_what_only_root_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TRUST_CONFIG_FILES_ENV, raising=False)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "key").write_text("secret")
    data = tmp_path / "dataset"
    data.mkdir(mode=0o755)
    (data / "own").mkdir(mode=0o755)
    (data / "own" / "f").write_text("fine")
    (data / "c.yaml").write_text(f"workspace: {private}\n")
    with pytest.raises(ValueError, match="workspace"):
        load_config(str(data / "c.yaml"))
    (data / "ok.yaml").write_text("workspace: own\n")  # the dataset's own directory, readable to all
    assert load_config(str(data / "ok.yaml")).workspace == data / "own"
