"""Choosing and starting a session's sandbox backend (``auto``: bwrap where it works, else local).

Its own module so that ``shellrt run`` starts a backend without importing the
whole runtime (tools, orchestration, the command analysis).
"""

from __future__ import annotations

import shutil
from typing import Literal

from sandbox import (
    BackendUnavailableError,
    BwrapConfig,
    LocalConfig,
    SandboxBackend,
    SandboxConfig,
    SandboxPolicy,
    SandboxPolicyError,
)
from sandbox.factory import create_backend

__all__ = ["SandboxChoice", "resolve_sandbox"]

SandboxChoice = Literal["auto", "local", "none", "bwrap", "docker"]


async def resolve_sandbox(
    sandbox: SandboxConfig | str, policy: SandboxPolicy, *, one_shot: bool = False
) -> tuple[SandboxBackend, list[str]]:
    """Start the backend for ``sandbox``; ``auto`` means bwrap where it works, else local (with a warning).

    ``one_shot``: the sandbox will run a single command (``shellrt run``), so a
    bwrap chosen by name runs it without a session zygote that could not pay off.
    """
    warnings: list[str] = []

    def bwrap() -> BwrapConfig:  # built only when chosen: its validator costs a local run's start-up
        # network 'proxied' needs the session zygote (it hosts the proxy bridge), one command or not.
        return BwrapConfig(persistent=not one_shot or policy.network == "proxied")

    if isinstance(sandbox, str):
        if sandbox == "auto":
            try:
                backend = create_backend(_system_bwrap(bwrap()), policy)
                await backend.start()
                return backend, warnings
            except SandboxPolicyError:
                raise  # local enforces no limit either: bwrap's refusal says what to do
            except BackendUnavailableError as exc:
                warnings.append(
                    f"bubblewrap is not usable here ({exc}); running without isolation (local backend)"
                )
                sandbox = "local"
        if sandbox in ("local", "none"):
            config: SandboxConfig = LocalConfig()
        elif sandbox == "bwrap":
            config = bwrap()
        elif sandbox == "docker":
            from sandbox import DockerConfig

            config = DockerConfig()
        else:
            raise ValueError(f"unknown sandbox {sandbox!r}; use one of auto, local, none, bwrap, docker")
    else:
        config = sandbox
    if isinstance(config, BwrapConfig):
        config = _system_bwrap(config)
    backend = create_backend(config, policy)
    await backend.start()
    return backend, warnings


def _system_bwrap(config: BwrapConfig) -> BwrapConfig:
    """``config`` with bubblewrap named by the absolute path found outside what commands write.

    Found through ``PATH`` (the backend's own lookup), a directory there inside the workspace (an
    activated ``.venv/bin``, direnv's ``bin``) or a relative entry let one session's command plant
    ``bwrap`` and the next session run it on the host, as the caller, before any sandbox existed
    (red team, round 15). The lookup skips every root a running session writes (`host_path`;
    the session registers its roots before starting its backend). Found only there: refused.
    """
    from shellrt.permissions.host_path import host_path, host_which

    name = config.bwrap_path
    if "/" in name:
        return config  # the caller named the program itself
    found = host_which(name)
    if found is None:
        planted = shutil.which(name)
        if planted is not None:
            raise BackendUnavailableError(
                f"bubblewrap ({name!r}) was found only at {planted}, on a PATH entry that is relative "
                "or lies where the session's commands write; shellrt does not run a program from there "
                f"on the host. Fix: install bubblewrap in a system directory ({host_path()}), or pass "
                "its absolute path"
            )
        return config  # not installed at all: the backend says so
    return config.model_copy(update={"bwrap_path": found})
