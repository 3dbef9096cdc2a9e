"""Backends declare what they enforce and what extras they have, as typed members, never by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sandbox
from sandbox import (
    LocalConfig,
    Recyclable,
    ResourceLimits,
    SandboxBackend,
    SandboxPolicy,
    SandboxPolicyError,
    WorkspaceExporter,
    check_enforceable,
    requested_limits,
)
from sandbox.factory import create_backend

ROOT = Path(__file__).resolve().parent.parent


def test_exports_are_pinned() -> None:
    assert set(sandbox.__all__) >= {
        "ASPECTS",
        "Aspect",
        "Recyclable",
        "SandboxPolicyError",
        "WorkspaceExporter",
        "check_enforceable",
        "requested_limits",
    }


def test_local_declares_host_view_and_no_limits(tmp_path: Path) -> None:
    backend = create_backend(LocalConfig(), SandboxPolicy(workspace=tmp_path))
    assert backend.host_view is True
    assert backend.shell_path == "bash"
    assert backend.container_id is None
    assert not {"memory", "pids", "cpus", "tmp"} & backend.enforces()
    assert not isinstance(backend, WorkspaceExporter)
    assert not isinstance(backend, Recyclable)


def test_docker_declares_its_extras() -> None:
    docker = pytest.importorskip("sandbox.docker")
    cls = docker.DockerBackend
    assert cls.host_view is False
    assert hasattr(cls, "export_workspace") and hasattr(cls, "reset")


def test_check_enforceable_names_limit_backend_and_fix(tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(memory_bytes=1 << 26, pids=10))
    assert set(requested_limits(policy)) == {"memory", "pids"}
    from sandbox.local import LocalBackend

    backend = LocalBackend(LocalConfig(), policy)
    with pytest.raises(SandboxPolicyError) as info:
        check_enforceable(backend)
    text = str(info.value)
    for word in ("local", "memory", "pids", "--sandbox docker", "--memory", "--pids"):
        assert word in text
    check_enforceable(LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path)))  # no limits: fine


def _getattr_on_backend(path: Path) -> list[int]:
    """Lines where ``getattr(<something>backend…, …)`` looks a capability up by name."""
    tree = ast.parse(path.read_text())
    lines = []
    for node in ast.walk(tree):
        if (
            (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            )
            and node.args
            and "backend" in ast.unparse(node.args[0])
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize(
    "module",
    [
        "shellrt/supervisor/supervisor.py",
        "shellrt/cli/run.py",
        "shellrt/batch/pool.py",
        "shellrt/batch/worker.py",
        "shellrt/tools/powershell.py",
    ],
)
def test_no_capability_lookups_by_name(module: str) -> None:
    path = ROOT / module
    assert _getattr_on_backend(path) == []
    source = path.read_text()
    assert "backend.name in" not in source and "backend.name ==" not in source


def test_base_members_are_typed() -> None:
    assert SandboxBackend.host_view is True
    assert SandboxBackend.container_id is None


@pytest.mark.anyio
async def test_a_backend_built_directly_still_refuses(tmp_path: Path) -> None:
    from sandbox.local import LocalBackend

    backend = LocalBackend(LocalConfig(), SandboxPolicy(workspace=tmp_path, limits=ResourceLimits(cpus=1)))
    with pytest.raises(SandboxPolicyError, match="cpus"):
        async with backend:
            pass
