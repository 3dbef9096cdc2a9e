"""Build a backend from its config; imports each backend module only when asked for.

Every backend class takes ``(config, policy)``. Importing lazily keeps the docker
SDK out of processes that never use docker.
"""

from __future__ import annotations

from sandbox.base import SandboxBackend
from sandbox.config import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig
from sandbox.policy import SandboxPolicy

__all__ = ["create_backend"]


def create_backend(config: SandboxConfig, policy: SandboxPolicy) -> SandboxBackend:
    """Return an unstarted backend for ``config`` (call ``start()`` or use ``async with``)."""
    if isinstance(config, LocalConfig):
        from sandbox.local import LocalBackend

        return LocalBackend(config, policy)
    if isinstance(config, BwrapConfig):
        from sandbox.bwrap import BwrapBackend

        return BwrapBackend(config, policy)
    if isinstance(config, DockerConfig):
        from sandbox.docker import DockerBackend

        return DockerBackend(config, policy)
    raise TypeError(f"unknown sandbox config {type(config).__name__}")
