"""Choosing and starting a session's sandbox backend (``auto``: bwrap where it works, else local).

``auto`` falls back to local only when bubblewrap fails on this host as such: a start that
fails for this session's workspace or policy (a repository's settings file listing thousands
of ``maskedPaths`` overflowed bwrap's argument limit; red team round 39 novel5) is refused,
since a workspace must never choose its own sandbox away (`sandbox_probe`).

Its own module so that ``shellrt run`` starts a backend without importing the
whole runtime (tools, orchestration, the command analysis).
"""

from __future__ import annotations

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
from shellrt.protocol.revalidated import revalidated

__all__ = ["SandboxChoice", "resolve_sandbox"]

SandboxChoice = Literal["auto", "local", "none", "bwrap", "docker"]


async def resolve_sandbox(
    sandbox: SandboxConfig | str,
    policy: SandboxPolicy,
    *,
    one_shot: bool = False,
    refuse_fallback: str | None = None,
) -> tuple[SandboxBackend, list[str]]:
    """Start the backend for ``sandbox``; ``auto`` means bwrap where it works, else local (with a warning).

    ``one_shot``: the sandbox will run a single command (``shellrt run``), so a
    bwrap chosen by name runs it without a session zygote that could not pay off.
    ``refuse_fallback``: why ``auto`` must not fall back to local here (a session whose every
    command runs unasked: the sandbox is all it has); raised as `BackendUnavailableError`.
    """
    warnings: list[str] = []

    def bwrap() -> BwrapConfig:  # built only when chosen: its validator costs a local run's start-up
        # network 'proxied' needs the session zygote (it hosts the proxy bridge), one command or not.
        return BwrapConfig(persistent=not one_shot or policy.network == "proxied")

    if isinstance(sandbox, str):
        if sandbox == "auto":
            backend = create_backend(bwrap(), policy)
            try:
                await backend.start()
                return backend, [*warnings, *_isolation_warnings(backend)]
            except SandboxPolicyError:
                await backend.close()
                raise  # local enforces no limit either: bwrap's refusal says what to do
            except BackendUnavailableError as exc:
                await backend.close()  # whatever its start made before refusing (a cgroup, a helper)
                from shellrt.runtime.sandbox_probe import bwrap_fails_for_this_session  # failure path only

                local_only = await bwrap_fails_for_this_session(exc)
                if local_only is not None:  # bwrap works here: what failed is this workspace/policy
                    raise local_only from exc
                if refuse_fallback is not None:
                    raise BackendUnavailableError(
                        f"bubblewrap is not usable here ({exc}); {refuse_fallback}"
                    ) from exc
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
    else:  # built by model_construct or model_copy(update=...)? validated again (round 35)
        from sandbox import DockerConfig

        checked = revalidated(sandbox, (LocalConfig, BwrapConfig, DockerConfig), "sandbox config")
        assert isinstance(checked, (LocalConfig, BwrapConfig, DockerConfig))  # one of the kinds asked for
        config = checked
    backend = create_backend(config, policy)
    await backend.start()
    return backend, [*warnings, *_isolation_warnings(backend)]


def _isolation_warnings(backend: SandboxBackend) -> list[str]:
    """Commands not (fully) isolated from each other on this host (docker: round 28 docker2; a bwrap
    session: round 30): the person running the session hears it with the other start warnings,
    never the model."""
    isolation = getattr(backend, "isolation_warning", None)
    return [isolation] if isinstance(isolation, str) else []
