"""Red team round 16 (left-overs): Inspect config files and eval logs never widen the sandbox.

Round 15 floored a config *file* (a dataset names its samples' files) for ``sandbox: local``,
``network: host|bridge`` and private workspaces, but a file still chose the docker ``image`` (any
image on the daemon: its files become the sample's, its ``/bin/sh`` runs the executor) and, with
``network: proxied``, its own ``allowed_domains``. And ``eval-retry`` rebuilds the sandbox from
the eval log through ``config_deserialize``, which took a dict as code: a log edited between runs
ran the retried samples with ``sandbox: local``, on the host. Now a file or a log may name
another image only when the operator lists it (``SHELLRT_INSPECT_IMAGES``), may list only
domains the operator allows (``SHELLRT_INSPECT_ALLOWED_DOMAINS``), and a log's config is
floored like a file when a sample starts (reading the log still works);
``SHELLRT_INSPECT_TRUST_CONFIG_FILES=1`` trusts them all, as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai._eval.task.sandbox import resolve_sandbox
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.dataset import json_dataset
from inspect_ai.util._sandbox.environment import SandboxEnvironmentSpec

from shellrt.integrations._inspect_config import load_config
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment

pytestmark = pytest.mark.anyio

TRUST = "SHELLRT_INSPECT_TRUST_CONFIG_FILES"
IMAGES = "SHELLRT_INSPECT_IMAGES"
DOMAINS = "SHELLRT_INSPECT_ALLOWED_DOMAINS"


@pytest.fixture(autouse=True)
def _operator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (TRUST, IMAGES, DOMAINS):
        monkeypatch.delenv(name, raising=False)


async def _sample_config(tmp_path: Path, config: str) -> object:
    """The config Inspect chooses for a dataset sample naming a file with ``config``."""
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "shellrt.yaml").write_text("sandbox: bwrap\n")
    (tmp_path / "evil.yaml").write_text(config)
    record = {"input": "hi", "target": "x", "sandbox": ["shellrt", "evil.yaml"]}
    (tmp_path / "samples.jsonl").write_text(json.dumps(record) + "\n")
    [sample] = list(json_dataset(str(tmp_path / "samples.jsonl")))
    chosen = await resolve_sandbox(
        SandboxEnvironmentSpec("shellrt", str(tmp_path / "task" / "shellrt.yaml")), sample
    )
    assert chosen is not None and str(chosen.config).endswith("evil.yaml")
    return chosen.config


async def test_a_dataset_file_cannot_choose_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = await _sample_config(tmp_path, "sandbox: docker\nimage: attacker/tools:latest\n")
    with pytest.raises(ValueError, match=f"image: attacker/tools:latest.*{IMAGES}") as caught:
        load_config(config)
    assert TRUST in str(caught.value)
    monkeypatch.setenv(IMAGES, "python:3.12-slim, attacker/tools:latest")
    assert load_config(config).image == "attacker/tools:latest"  # the operator's opt-in
    (tmp_path / "default.yaml").write_text("sandbox: docker\nimage: debian:bookworm-slim\n")
    monkeypatch.delenv(IMAGES)
    assert load_config(str(tmp_path / "default.yaml")).sandbox == "docker"  # the default needs none


async def test_a_dataset_file_only_narrows_the_allowed_domains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = await _sample_config(
        tmp_path, "network: proxied\nallowed_domains: [exfil.example, a.pypi.org]\n"
    )
    with pytest.raises(ValueError, match=f"allowed_domains: exfil.example, a.pypi.org.*{DOMAINS}"):
        load_config(config)
    monkeypatch.setenv(DOMAINS, "*.pypi.org")
    with pytest.raises(ValueError, match="allowed_domains: exfil.example \\("):
        load_config(config)
    monkeypatch.setenv(DOMAINS, "*.pypi.org,exfil.example")
    assert load_config(config).allowed_domains == ("exfil.example", "a.pypi.org")


async def test_an_edited_eval_log_cannot_choose_the_sandbox_for_eval_retry(tmp_path: Path) -> None:
    # What eval-retry does with the log's `eval.sandbox`: Inspect's own deserialisation.
    spec = SandboxEnvironmentSpec.model_validate({"type": "shellrt", "config": {"sandbox": "local"}})
    assert isinstance(spec.config, ShellrtSandboxConfig)  # reading the log still works
    try:
        envs = await ShellrtSandboxEnvironment.sample_init("t", spec.config, {})
    except PrerequisiteError as exc:
        assert "sandbox: local" in str(exc) and "eval log" in str(exc) and TRUST in str(exc), exc
    else:
        for env in envs.values():
            await env.as_type(ShellrtSandboxEnvironment)._close()
        pytest.fail("a config from an edited eval log ran the samples unsandboxed (sandbox: local)")
    logged = SandboxEnvironmentSpec.model_validate(
        {"type": "shellrt", "config": {"image": "attacker/tools:latest"}}
    )
    with pytest.raises(ValueError, match="image: attacker/tools"):
        load_config(logged.config)


async def test_code_and_the_operator_s_trust_are_not_floored(monkeypatch: pytest.MonkeyPatch) -> None:
    code = ShellrtSandboxConfig(sandbox="docker", image="attacker/tools:latest")
    assert load_config(code) is code  # the task's code chose it
    assert load_config({"network": "proxied", "allowed_domains": ["x.example"]}).allowed_domains == (
        "x.example",
    )
    monkeypatch.setenv(TRUST, "1")
    spec = SandboxEnvironmentSpec.model_validate({"type": "shellrt", "config": {"sandbox": "local"}})
    assert load_config(spec.config).sandbox == "local"
