"""Sandbox backends: turn an exec request into a running, killable process under a policy.

This package is the lowest layer and imports nothing of ``shellrt``.
"""

from __future__ import annotations

from sandbox.base import (
    ASPECTS,
    Aspect,
    ExecRequest,
    ExitStatus,
    Recyclable,
    SandboxBackend,
    SandboxProcess,
    WorkspaceExporter,
    check_enforceable,
    requested_limits,
)
from sandbox.config import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig
from sandbox.errors import (
    BackendUnavailableError,
    SandboxClosedError,
    SandboxError,
    SandboxExecError,
    SandboxPolicyError,
    UnsupportedRequestError,
)
from sandbox.policy import NetworkMode, ResourceLimits, SandboxPolicy

__all__ = [
    "ASPECTS",
    "Aspect",
    "BackendUnavailableError",
    "BwrapConfig",
    "DockerConfig",
    "ExecRequest",
    "ExitStatus",
    "LocalConfig",
    "NetworkMode",
    "Recyclable",
    "ResourceLimits",
    "SandboxBackend",
    "SandboxClosedError",
    "SandboxConfig",
    "SandboxError",
    "SandboxExecError",
    "SandboxPolicy",
    "SandboxPolicyError",
    "SandboxProcess",
    "UnsupportedRequestError",
    "WorkspaceExporter",
    "check_enforceable",
    "requested_limits",
]
