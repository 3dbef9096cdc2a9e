"""Round 37: an Inspect dataset's sandbox config file lifted the sandbox's own ceilings.

A dataset names its samples' config files (``"sandbox": ["shellrt", "cfg.yaml"]``), and round 15's
floor refuses what widens the sandbox there (``sandbox: local``, a host network, another image, a
private workspace) -- but not ``limits``. The backends cap a sandbox that names none (bwrap: 4,096
processes, 3/4 of the host's memory, a 1 GiB /tmp; docker: 2,048, the same memory, 256 MiB), and
a file's ``limits`` replaced those caps: ``pids: 4000000`` and ``memory_bytes: 1e15`` gave a sample
pids.max 4,000,000 and no memory ceiling (probed in its session cgroup, root bwrap, cgroup v1): a
fork bomb or an allocation then reaches the host's process table and memory, the eval's own
process with them. A config file (or an eval log's config) may now only lower them; the task's
code, or ``SHELLRT_INSPECT_TRUST_CONFIG_FILES=1``, may raise them.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from inspect_ai._util.error import PrerequisiteError

from sandbox._hostmem import default_memory_ceiling
from sandbox.config import DEFAULT_BWRAP_PIDS, DEFAULT_BWRAP_TMP_BYTES
from shellrt.integrations._inspect_config import (
    TRUST_CONFIG_FILES_ENV,
    ShellrtSandboxConfig,
    config_from_data,
    load_config,
)
from tests._bwrap_session import require_bwrap

_ABOVE = {
    "pids": DEFAULT_BWRAP_PIDS + 1,
    "memory_bytes": default_memory_ceiling() + (1 << 20),
    "tmp_bytes": DEFAULT_BWRAP_TMP_BYTES + 1,
}


@pytest.fixture(autouse=True)
def _untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_CONFIG_FILES_ENV, raising=False)


@pytest.mark.parametrize("key", sorted(_ABOVE))
def test_a_config_file_may_not_raise_a_default_ceiling(tmp_path: Path, key: str) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(f"limits:\n  {key}: {_ABOVE[key]}\n")
    with pytest.raises(ValueError, match=rf"limits\.{key}") as caught:
        load_config(str(path))
    assert TRUST_CONFIG_FILES_ENV in str(caught.value)
    with pytest.raises(ValueError, match=rf"limits\.{key}"):  # an eval log's (eval-retry) too
        load_config(config_from_data({"limits": {key: _ABOVE[key]}}))


def test_docker_ceilings_are_docker_s_own(tmp_path: Path) -> None:
    path = tmp_path / "cfg.json"
    path.write_text('{"sandbox": "docker", "limits": {"pids": 3000}}')  # above docker's 2,048
    with pytest.raises(ValueError, match=r"limits\.pids"):
        load_config(str(path))


def test_lower_limits_and_the_task_s_code_still_choose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("limits:\n  pids: 100\n  memory_bytes: 536870912\n  tmp_bytes: 1048576\n  cpus: 64\n")
    assert load_config(str(path)).limits.pids == 100
    code = ShellrtSandboxConfig.model_validate({"limits": _ABOVE})  # the task's own code
    assert load_config(code).limits.pids == _ABOVE["pids"]
    path.write_text(f"limits:\n  pids: {_ABOVE['pids']}\n")
    monkeypatch.setenv(TRUST_CONFIG_FILES_ENV, "1")
    assert load_config(str(path)).limits.pids == _ABOVE["pids"]


def test_a_sample_with_such_a_file_does_not_start(tmp_path: Path) -> None:
    require_bwrap()
    from shellrt.integrations.inspect import ShellrtSandboxEnvironment

    path = tmp_path / "cfg.yaml"
    path.write_text("limits:\n  pids: 4000000\n  memory_bytes: 1000000000000000\n")
    probe = (
        "p=$(grep -E ':pids:|^0::' /proc/self/cgroup | head -1 | cut -d: -f3); "
        "cat /sys/fs/cgroup/pids$p/pids.max 2>/dev/null || cat /sys/fs/cgroup$p/pids.max"
    )

    async def main() -> str:
        envs = await ShellrtSandboxEnvironment.sample_init("t", str(path), {})
        try:
            return (await envs["default"].exec(["sh", "-c", probe])).stdout.strip()
        finally:
            await ShellrtSandboxEnvironment.sample_cleanup("t", str(path), envs, False)

    with pytest.raises(PrerequisiteError, match=r"limits\.pids"):
        print("pids.max in the sample:", anyio.run(main))
