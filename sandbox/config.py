"""Backend configurations: one pydantic model per backend, discriminated by ``type``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BwrapConfig", "DockerConfig", "LocalConfig", "SandboxConfig"]


class LocalConfig(BaseModel):
    """No isolation: processes run as the caller, still in their own session/process group."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["local"] = "local"


class BwrapConfig(BaseModel):
    """bubblewrap namespaces: read-only root, writable workspace, private /tmp, own pid namespace."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["bwrap"] = "bwrap"
    bwrap_path: str = "bwrap"
    persistent: bool = Field(
        default=True,
        description=(
            "One long-lived sandbox per session whose zygote forks each command into fresh pid, "
            "mount and IPC namespaces (about 3x faster per command; /tmp, /dev/shm and loopback "
            "are shared by the session's commands, as in a container). False: a new bwrap per "
            "command, with a private /tmp per command."
        ),
    )


class DockerConfig(BaseModel):
    """A long-lived hardened container per session, driven by a persistent in-container executor."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["docker"] = "docker"
    image: str = "debian:bookworm-slim"
    #: ``copy``: the workspace is copied into the container (host copy never modified);
    #: ``bind``: the host directory is bind-mounted read-write.
    workspace_mode: Literal["copy", "bind"] = "copy"
    #: Path of the workspace inside the container.
    container_workspace: str = "/workspace"
    user: str | None = Field(
        default=None, description="User to run as; None picks a non-root user when the image allows."
    )
    docker_host: str | None = Field(
        default=None, description="Docker daemon URL; None uses DOCKER_HOST or the default socket."
    )
    pull: bool = Field(default=False, description="Pull a missing image (never pulled otherwise).")


SandboxConfig = Annotated[LocalConfig | BwrapConfig | DockerConfig, Field(discriminator="type")]
