"""Sandbox backends: turn an exec request into a running, killable process under a policy.

This package is the lowest layer and imports nothing of ``shellrt``.
"""

from __future__ import annotations

from sandbox.base import ExecRequest, ExitStatus, SandboxBackend, SandboxProcess
from sandbox.config import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig
from sandbox.errors import BackendUnavailableError, SandboxClosedError, SandboxError, SandboxExecError
from sandbox.policy import NetworkMode, ResourceLimits, SandboxPolicy

__all__ = [
    "BackendUnavailableError",
    "BwrapConfig",
    "DockerConfig",
    "ExecRequest",
    "ExitStatus",
    "LocalConfig",
    "NetworkMode",
    "ResourceLimits",
    "SandboxBackend",
    "SandboxClosedError",
    "SandboxConfig",
    "SandboxError",
    "SandboxExecError",
    "SandboxPolicy",
    "SandboxProcess",
]
