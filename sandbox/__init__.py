"""Sandbox backends: turn an exec request into a running, killable process under a policy.

This package is the lowest layer and imports nothing of ``shellrt``.

The public names load on first use (PEP 562): importing a private helper module
(``sandbox._proctree``, ``sandbox._ownerguard`` ...) must not build the pydantic
models of `base`, `config` and `policy`, which cost more than a whole lean
``shellrt run --sandbox local`` (issue 22).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Module of each public name.
_HOME = {
    **dict.fromkeys(
        (
            "ASPECTS",
            "Aspect",
            "ExecRequest",
            "ExitStatus",
            "Recyclable",
            "SandboxBackend",
            "SandboxProcess",
            "WorkspaceExporter",
            "check_enforceable",
            "requested_limits",
        ),
        "sandbox.base",
    ),
    **dict.fromkeys(("BwrapConfig", "DockerConfig", "LocalConfig", "SandboxConfig"), "sandbox.config"),
    **dict.fromkeys(
        (
            "BackendUnavailableError",
            "SandboxClosedError",
            "SandboxError",
            "SandboxExecError",
            "SandboxPolicyError",
            "UnsupportedRequestError",
        ),
        "sandbox.errors",
    ),
    **dict.fromkeys(("NetworkMode", "ResourceLimits", "SandboxPolicy"), "sandbox.policy"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
