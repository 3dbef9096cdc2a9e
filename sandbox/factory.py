"""Build a backend from its config; imports each backend module only when asked for.

Every backend class takes ``(config, policy)``. Importing lazily keeps the docker
SDK out of processes that never use docker. Every route that starts a sandbox
(``shellrt run``/``serve``/``batch``, ``Runtime``) builds it here, so this is
where a limit the backend cannot enforce is refused (`check_enforceable`), and a sandbox's root that
is or holds a system temp place (`_systemroots`, round 31; the local backend confines nothing).
"""

from __future__ import annotations

import os
import weakref

from sandbox._hostpath import register_writable, unregister_writable
from sandbox.base import SandboxBackend, check_enforceable
from sandbox.config import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig
from sandbox.policy import SandboxPolicy

__all__ = ["create_backend"]


def create_backend(config: SandboxConfig, policy: SandboxPolicy) -> SandboxBackend:
    """Return an unstarted backend for ``config`` (call ``start()`` or use ``async with``).

    Raises `SandboxPolicyError` when ``policy`` sets a limit the backend cannot enforce here.
    """
    backend: SandboxBackend
    if not isinstance(config, LocalConfig):  # a sandbox's commands must not reach the system temp places
        from sandbox._systemroots import refuse_system_roots

        refuse_system_roots(os.path.realpath(r) for r in policy.allowed_roots())
    if isinstance(config, LocalConfig):
        from sandbox.local import LocalBackend

        backend = LocalBackend(config, policy)
    elif isinstance(config, BwrapConfig):
        from sandbox.bwrap import BwrapBackend

        backend = BwrapBackend(config, policy)
    elif isinstance(config, DockerConfig):
        from sandbox.docker import DockerBackend

        backend = DockerBackend(config, policy)
    else:
        raise TypeError(f"unknown sandbox config {type(config).__name__}")
    check_enforceable(backend)
    # Until the backend is gone, no host-side program is looked up where its commands write.
    weakref.finalize(backend, unregister_writable, register_writable(policy.allowed_roots()))
    return backend
