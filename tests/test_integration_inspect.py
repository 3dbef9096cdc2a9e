"""The Inspect provider beyond Inspect's self-check: registration, config, lifecycle, cleanup, a real eval.

The end-to-end eval runs in a fresh interpreter whose only route to the
provider is the ``inspect_ai`` entry point declared in pyproject.toml (written
into a dist-info on its path, as pip would): the task imports nothing of shellrt.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.util import (
    OutputLimitExceededError,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
)
from inspect_ai.util._sandbox.limits import override_max_exec_output_size

from sandbox.docker import DockerBackend
from shellrt.integrations._inspect_config import load_config
from shellrt.integrations._inspect_leftovers import PREFIX, cleanup_leftovers
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment
from tests._docker_support import DEBIAN, container_exists, require_docker
from tests.conftest import require

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
TASK = "shellrt-integration-test"


def _sample_dirs(where: Path | None = None) -> set[Path]:
    return set((where or Path(tempfile.gettempdir())).glob(PREFIX + "*"))


def _require_bwrap() -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")


async def _env(settings: ShellrtSandboxConfig) -> ShellrtSandboxEnvironment:
    envs = await ShellrtSandboxEnvironment.sample_init(TASK, settings, {})
    return envs["default"].as_type(ShellrtSandboxEnvironment)


@pytest.fixture
async def local_env() -> AsyncIterator[ShellrtSandboxEnvironment]:
    env = await _env(ShellrtSandboxConfig(sandbox="local", env={"FROM_CONFIG": "yes"}))
    try:
        yield env
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, False)


# --- config -------------------------------------------------------------------------


def test_config_from_none_json_yaml_model_and_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Round 16: a file names an image and domains the operator lists.
    monkeypatch.setenv("SHELLRT_INSPECT_IMAGES", DEBIAN)
    monkeypatch.setenv("SHELLRT_INSPECT_ALLOWED_DOMAINS", "pypi.org")
    assert load_config(None) == ShellrtSandboxConfig()
    assert load_config(None).sandbox == "bwrap"  # the default backend: bubblewrap, never silently local
    (tmp_path / "ws").mkdir()
    (tmp_path / "c.json").write_text(json.dumps({"sandbox": "docker", "image": DEBIAN, "workspace": "ws"}))
    from_json = load_config(str(tmp_path / "c.json"))
    assert from_json.sandbox == "docker" and from_json.workspace == tmp_path / "ws"  # relative to the file
    (tmp_path / "c.yaml").write_text(
        "sandbox: bwrap\nnetwork: proxied\nallowed_domains: [pypi.org]\nlimits: {pids: 64}\nenv: {A: b}\n"
    )
    from_yaml = load_config(str(tmp_path / "c.yaml"))
    assert (
        from_yaml.allowed_domains == ("pypi.org",)
        and from_yaml.limits.pids == 64
        and from_yaml.env == {"A": "b"}
    )
    model = ShellrtSandboxConfig(sandbox="local")
    assert load_config(model) is model
    assert load_config({"sandbox": "local"}) == model
    # From an eval log: the same settings, marked as data (floored when a sample starts, round 16).
    logged = ShellrtSandboxEnvironment.config_deserialize({"sandbox": "local"})
    assert isinstance(logged, ShellrtSandboxConfig) and logged.model_dump() == model.model_dump()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"sandbox": "lxc"}, "sandbox"),
        ({"imgae": "x"}, "imgae"),
        ({"allowed_domains": ["pypi.org"]}, "network: proxied"),
        ({"sandbox": "bwrap", "network": "bridge"}, "only on the docker"),
        ({"allowed_domains": ["https://pypi.org/"], "network": "proxied"}, "not a domain name"),
    ],
)
def test_bad_config_says_what_is_wrong(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(config)


def test_bad_config_files_say_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not found"):
        load_config(str(tmp_path / "missing.yaml"))
    (tmp_path / "c.toml").write_text("x = 1")
    with pytest.raises(ValueError, match=r"\.json, \.yaml"):
        load_config(str(tmp_path / "c.toml"))
    (tmp_path / "c.yaml").write_text("- a list\n")
    with pytest.raises(ValueError, match="mapping"):
        load_config(str(tmp_path / "c.yaml"))


async def test_unusable_backend_is_a_prerequisite_error_before_any_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    # This process's temp dir only: a sample another test makes meanwhile (another worker) is not ours.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    settings = ShellrtSandboxConfig(sandbox="docker", image="shellrt-no-such-image:never")
    before = _sample_dirs(private)
    with pytest.raises(PrerequisiteError) as info:
        await ShellrtSandboxEnvironment.task_init(TASK, settings)
    assert "shellrt-no-such-image" in str(info.value.message)
    assert _sample_dirs(private) <= before


# --- exec semantics -------------------------------------------------------------------


async def test_env_layers_cwd_and_missing_program(
    local_env: ShellrtSandboxEnvironment, tmp_path: Path
) -> None:
    result = await local_env.exec(
        ["sh", "-c", 'echo "$FROM_CONFIG $PER_CALL $SHELLRT"'], env={"PER_CALL": "1"}
    )
    assert result.stdout == "yes 1 1\n"
    await local_env.exec(["mkdir", "-p", "sub/dir"])
    assert (await local_env.exec(["pwd"], cwd="sub/dir")).stdout.endswith("/sub/dir\n")
    missing = await local_env.exec(["shellrt-no-such-program"])
    assert (missing.success, missing.returncode) == (False, 127)
    assert "shellrt-no-such-program" in missing.stderr
    with pytest.raises(PermissionError):
        await local_env.exec(["/etc/passwd"])


async def test_output_over_the_limit_raises_with_the_tail(local_env: ShellrtSandboxEnvironment) -> None:
    with override_max_exec_output_size(1024), pytest.raises(OutputLimitExceededError, match="1 KiB") as info:
        await local_env.exec(["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; echo END"])
    assert info.value.truncated_output is not None and info.value.truncated_output.endswith("aEND\n")
    assert len(info.value.truncated_output) == 1024


async def test_user_on_a_one_identity_backend_is_inspects_unsupported_error(
    local_env: ShellrtSandboxEnvironment,
) -> None:
    with pytest.raises(SandboxUserUnsupportedError, match="local"):
        await local_env.exec(["id"], user="root")


async def test_exec_after_cleanup_is_sandbox_unavailable() -> None:
    env = await _env(ShellrtSandboxConfig(sandbox="local"))
    await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, False)
    with pytest.raises(SandboxUnavailableError):
        await env.exec(["true"])


async def test_workspace_is_copied_in_and_the_host_copy_is_untouched(tmp_path: Path) -> None:
    _require_bwrap()
    source = tmp_path / "src"
    source.mkdir()
    (source / "given.txt").write_text("from the host")
    env = await _env(ShellrtSandboxConfig(sandbox="bwrap", workspace=source))
    try:
        assert await env.read_file("given.txt") == "from the host"
        await env.write_file("given.txt", "changed inside")
        assert (await env.exec(["cat", "given.txt"])).stdout == "changed inside"
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, False)
    assert (source / "given.txt").read_text() == "from the host"
    assert sorted(p.name for p in source.iterdir()) == ["given.txt"]


# --- lifecycle -------------------------------------------------------------------------


async def test_interrupted_cleanup_under_cancellation_still_removes_everything() -> None:
    require_docker()
    env = await _env(ShellrtSandboxConfig(sandbox="docker", image=DEBIAN))
    container = env.backend.container_id
    sample_dir = env._dir.path
    assert container is not None and container_exists(container)
    with anyio.CancelScope() as scope:
        scope.cancel()  # what Inspect's cancelled sample looks like to its cleanup
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, True)
    assert not container_exists(container)
    assert not sample_dir.exists()


async def test_task_cleanup_closes_what_samples_left_open() -> None:
    env = await _env(ShellrtSandboxConfig(sandbox="local"))
    sample_dir = env._dir.path
    await ShellrtSandboxEnvironment.task_cleanup(TASK, None, True)
    assert not sample_dir.exists()
    with pytest.raises(SandboxUnavailableError):
        await env.exec(["true"])


async def test_connection_is_docker_exec_into_the_container_and_refused_elsewhere(
    local_env: ShellrtSandboxEnvironment,
) -> None:
    with pytest.raises(NotImplementedError, match="docker"):
        await local_env.connection()
    require_docker()
    env = await _env(ShellrtSandboxConfig(sandbox="docker", image=DEBIAN))
    try:
        connection = await env.connection()
        assert connection.container == env.backend.container_id
        assert isinstance(env.backend, DockerBackend)
        user = env.backend.user  # as root: the session's leased uid (the caller's otherwise)
        # Through shellrt's priv helper since round 13: docker exec as 0, then priv drop to the user.
        assert connection.command.startswith("docker exec -it --user 0 -w /workspace ")
        probe = [word for word in shlex.split(connection.command) if word != "-it"]
        probe[-1] = "id -u; pwd"  # the shell's -c script, instead of the interactive shell
        out = subprocess.run(probe, capture_output=True, text=True, timeout=60)
        assert out.stdout.split() == [user.split(":")[0], "/workspace"], out.stderr
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, False)


_CRASHING_RUN = """
import os, signal, sys
import anyio
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment

async def main():
    settings = ShellrtSandboxConfig(sandbox=sys.argv[1], image=sys.argv[2])
    envs = await ShellrtSandboxEnvironment.sample_init("crash", settings, {})
    env = envs["default"]
    print(env._dir.path, env.backend.container_id or "", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

anyio.run(main)
"""


def _crash(kind: str) -> tuple[Path, str]:
    out = subprocess.run(
        [sys.executable, "-c", _CRASHING_RUN, kind, DEBIAN],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == -signal.SIGKILL, out.stderr
    path, _, container = out.stdout.strip().partition(" ")
    return Path(path), container


async def test_cli_cleanup_removes_what_a_killed_run_left_and_spares_live_sandboxes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _require_bwrap()
    live = await _env(ShellrtSandboxConfig(sandbox="bwrap"))
    try:
        dead_dir, _ = _crash("bwrap")
        assert dead_dir.is_dir()
        await anyio.sleep(2.5)  # past the grace period for freshly made directories
        await ShellrtSandboxEnvironment.cli_cleanup(None)
        assert not dead_dir.exists()
        assert live._dir.path.is_dir()  # its owner (this process) holds the lock
        assert str(dead_dir) in capsys.readouterr().out
        assert (await live.exec(["true"])).success
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": live}, False)


async def test_cli_cleanup_with_an_id_removes_that_container() -> None:
    require_docker()
    env = await _env(ShellrtSandboxConfig(sandbox="docker", image=DEBIAN))
    container = env.backend.container_id
    assert container is not None
    try:
        removed = await anyio.to_thread.run_sync(cleanup_leftovers, container[:12])
        assert len(removed) == 1 and container[:12] in removed[0]
        assert not container_exists(container)
        assert not env._dir.path.exists()
    finally:
        await ShellrtSandboxEnvironment.sample_cleanup(TASK, None, {"default": env}, True)


# --- a real eval, registered through the entry point only -----------------------------------

_TASK_FILE = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash
from inspect_ai.util import sandbox


@scorer(metrics=[accuracy()])
def file_matches():
    async def score(state: TaskState, target: Target) -> Score:
        text = await sandbox().read_file("out.txt")
        uid = (await sandbox().exec(["id", "-u"])).stdout.strip()
        return Score(value=CORRECT if text == target.text else INCORRECT, answer=text, metadata={"uid": uid})
    return score


@task
def shout():
    return Task(
        dataset=[Sample(input="shout data.txt into out.txt", target="HELLO\\n", files={"data.txt": "hello\\n"})],
        solver=[use_tools(bash(timeout=60)), generate()],
        scorer=file_matches(),
        sandbox=("shellrt", "shellrt.yaml"),
    )
"""

# The mock model calls the bash tool once, then answers. Every output carries its usage: the mock
# model would otherwise count tokens with tiktoken, which downloads its tables (no network here).
_RUN_EVAL = """
import json, sys
from inspect_ai import eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
call = ModelOutput.for_tool_call("mockllm/model", "bash", {"command": "tr a-z A-Z < data.txt > out.txt"})
done = ModelOutput.from_content("mockllm/model", "done")
call.usage = done.usage = usage
model = get_model("mockllm/model", custom_outputs=[call, done])
log = eval(sys.argv[1], model=model, display="none", log_dir=sys.argv[2])[0]
sample = log.samples[0]
tool_results = [m.text for m in sample.messages if m.role == "tool"]
print(json.dumps({"status": log.status, "error": str(log.error)[:2000] if log.error else None,
                  "scores": {k: v.value for k, v in (sample.scores or {}).items()},
                  "uid": [v.metadata["uid"] for v in (sample.scores or {}).values()], "tools": tool_results,
                  "sample_error": str(sample.error)[:2000] if sample.error else None}))
"""


def _entry_point_dist(site: Path) -> None:
    """What pip writes for this project's ``inspect_ai`` entry points (read from pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    points = project["entry-points"]["inspect_ai"]
    dist = site / "shellrt-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shellrt\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (dist / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")


@pytest.mark.parametrize("kind", ["bwrap", "docker"])
def test_a_real_eval_runs_on_the_shellrt_sandbox_with_no_import(kind: str, tmp_path: Path) -> None:
    if kind == "docker":
        require_docker()
    else:
        _require_bwrap()
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "shout.py").write_text(_TASK_FILE)
    (task_dir / "shellrt.yaml").write_text(f"sandbox: {kind}\nimage: {DEBIAN}\n")
    site = tmp_path / "site"
    _entry_point_dist(site)
    # The eval's own temp dir: other workers' Inspect tests make sample dirs in /tmp meanwhile
    # (CI: this test took a parallel test's two sample dirs for its own left-overs).
    own_tmp = Path(tempfile.mkdtemp(prefix="shellrt-test-eval-tmp-", dir="/tmp"))
    own_tmp.chmod(0o755)
    try:
        out = subprocess.run(
            [sys.executable, "-c", _RUN_EVAL, "task/shout.py", str(tmp_path / "logs")],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,  # not the task's directory: the config path resolves against the task
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
                "INSPECT_LOG_LEVEL": "warning",
                "TMPDIR": str(own_tmp),
                "SHELLRT_INSPECT_IMAGES": DEBIAN,  # round 16: the task file's image, the operator's opt-in
            },
        )
        left = _sample_dirs(own_tmp)
    finally:
        shutil.rmtree(own_tmp, ignore_errors=True)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["status"] == "success", report
    assert list(report["scores"].values()) == ["C"], report
    assert report["uid"] != ["0"]  # commands never run as root in either sandbox
    assert len(report["tools"]) == 1  # the model's bash call ran in the sandbox
    assert left == set()  # every sample's directory was removed


def test_provider_is_found_by_inspect_registry_through_the_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _entry_point_dist(site)
    probe = (
        "import sys\n"
        "from inspect_ai.util._sandbox.registry import registry_find_sandboxenv\n"
        "assert 'shellrt.integrations.inspect' not in sys.modules\n"
        "cls = registry_find_sandboxenv('shellrt')\n"
        "print(cls.__module__, cls.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["shellrt.integrations.inspect", "ShellrtSandboxEnvironment"]
