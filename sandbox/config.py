"""Backend configurations: one pydantic model per backend, discriminated by ``type``.

The bwrap and docker configs are ``defer_build``: their validators are built when
one is first validated, so a process that runs another backend (``shellrt run
--sandbox local``) never pays for them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START, in_pool, pool_must_fit

__all__ = ["BwrapConfig", "DockerConfig", "LocalConfig", "PullPolicy", "SandboxConfig"]

#: `BwrapConfig.default_pids`: above a parallel build's needs, far below a host's pid_max.
DEFAULT_BWRAP_PIDS = 4096
#: The least `BwrapConfig.default_memory_bytes` may be (`sandbox._hostmem.MIN_DEFAULT_MEMORY`, which
#: this module does not import: a local run loads the config, never the host's memory probe).
MIN_DEFAULT_MEMORY = 256 << 20
#: `BwrapConfig.default_tmp_bytes`: 1 GiB.
DEFAULT_BWRAP_TMP_BYTES = 1 << 30

#: When the docker backend pulls its image: ``never``, when ``missing`` locally, or ``always``.
PullPolicy = Literal["never", "missing", "always"]


class LocalConfig(BaseModel):
    """No isolation: processes run as the caller, still in their own session/process group."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["local"] = "local"
    warm_shells: int = Field(
        default=1,
        ge=0,
        le=8,
        description=(
            "Pre-spawned shells: the next command's bash is started (exec'd and initialised) once "
            "the current command ends, shaped like it (argv, environment, cwd, stdio), and a matching "
            "command's text is handed to it: a fresh bash per command without its exec on the "
            "command's path. Faster calls on an idle or lightly loaded machine (full pipeline 1.10-1.16x "
            "a raw spawn against 1.49-1.64x without, load ~2.5), no better medians on a saturated one, "
            "and one bash (with its pipes) waiting per session (docs/performance.md, tenth round). "
            "0 disables."
        ),
    )


class BwrapConfig(BaseModel):
    """bubblewrap namespaces: read-only root, writable workspace, private /tmp, own pid namespace."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    type: Literal["bwrap"] = "bwrap"
    bwrap_path: str = "bwrap"
    persistent: bool = Field(
        default=True,
        description=(
            "One long-lived sandbox per session whose zygote spawns each command into fresh pid, "
            "mount and IPC namespaces (a command starts ~2x faster; the session's commands share "
            "/dev/shm and loopback, as in a container). False: a new bwrap per command (no ~25 ms "
            "zygote start: better for sandboxes that run one or two commands). Either way /tmp is "
            "private to the sandbox and shared by its commands."
        ),
    )
    lock_view: bool = Field(
        default=True,
        description=(
            "Each session command sees the host's read-only directories through overlays of its own, so "
            "its advisory locks (flock, POSIX/OFD locks) and inotify/fanotify watches on host files never "
            "reach the host's inodes (a command holding a read lock on debconf's database or a sqlite file "
            "made host programs fail: red team round 37). Costs each prepared init ~0.1-0.2 ms per overlaid "
            "directory, off the command's path while the warm pool keeps up. False: commands share the host's "
            "inodes (and so can hold up host programs that lock files the sandbox can read)."
        ),
    )
    sandbox_uid: int | None = Field(
        default=None,
        ge=1,
        lt=2**32 - 1,
        description=(
            "When shellrt runs as root: a fixed host uid every session's commands run under (never "
            "root), shared by all sessions with that setting (and with it the kernel's per-user limits: "
            "inotify instances, pipe pages, processes). None (default): each session leases its own uid "
            "from the pool (uid_pool_start, uid_pool_size), held by no other live session on the host. "
            "The writable roots are shown to the uid through idmapped mounts (their owner appears as "
            "this uid; files it creates land owned by the root's owner)."
        ),
    )
    sandbox_gid: int | None = Field(
        default=None,
        ge=1,
        lt=2**32 - 1,
        description=(
            "When run as root with a fixed sandbox_uid: the host gid commands run under (None: the "
            "number of sandbox_uid). A leased uid gets the gid of its own number."
        ),
    )
    uid_pool_start: int = Field(
        default=DEFAULT_POOL_START,
        ge=1,
        lt=2**32 - 1,
        description=(
            "When run as root (sandbox_uid unset): the first uid of the pool sessions lease theirs from "
            "(default 0x7E000000, in the range systemd's UID table leaves unused, below 2^31; "
            "docs/security.md). Ids an account or an /etc/subuid range uses are skipped."
        ),
    )
    uid_pool_size: int = Field(
        default=DEFAULT_POOL_SIZE,
        ge=1,
        description="How many uids the pool holds: at most that many root-run sessions live at once.",
    )

    default_pids: int | None = Field(
        default=DEFAULT_BWRAP_PIDS,
        gt=0,
        description=(
            "The session's process/thread cap when the policy sets none (``--pids``): a fork bomb stops "
            "there instead of filling the host's process table. Held by the session cgroup where one can "
            "be made; else by RLIMIT_NPROC (per uid: a root caller's leased sandbox uid counts only this "
            "session; a fixed sandbox_uid counts every session sharing it; a non-root caller's uid counts "
            "all its processes on the host, so the cap is this plus those it has at the start). None: no "
            "default cap."
        ),
    )
    default_memory_bytes: int | Literal["auto"] | None = Field(
        default="auto",
        description=(
            "The session's memory ceiling (no swap) when the policy sets none (``--memory``), held by "
            "the session cgroup: what a command pins outside its processes (files in /tmp and /dev/shm, "
            "their inodes and dentries, pipe and socket buffers, shared memory) is charged to it, and "
            "past it the kernel's OOM killer ends a process of the session, not of the host. ``auto``: "
            "three quarters of the host's memory, or of the cgroup shellrt runs in when lower (as "
            "docker's default, `sandbox._hostmem`); a number: bytes (at least 256 MiB); the default-sized /tmp then takes at most a quarter of it; None: no default "
            "ceiling. Only where shellrt can make a memory cgroup (root, or a delegated cgroup v2 "
            "subtree); elsewhere the session runs without one, bounded by per-user limits only "
            "(docs/security.md)."
        ),
    )
    default_tmp_bytes: int | None = Field(
        default=DEFAULT_BWRAP_TMP_BYTES,
        gt=0,
        description=(
            "Size of the session's /tmp when the policy sets none (``tmp_bytes``): a tmpfs of this size "
            "(writing past it fails with ENOSPC). Only when shellrt runs as root (it mounts the tmpfs "
            "on the host); a non-root caller's /tmp is a host directory in the system temp directory, capped "
            "only by that filesystem (put TMPDIR on a size-limited one to bound it). None: "
            "no default cap."
        ),
    )

    require_command_isolation: bool = Field(
        default=False,
        description=(
            "Refuse to start a session sandbox whose commands could reach each other's abstract unix "
            "sockets: a kernel without Landlock's scopes (ABI 6, Linux 6.12, or Landlock off at boot), "
            "or network 'host' (which shares the host's abstract names by design). Off by default: such "
            "a session still runs, with a warning at the start and BwrapBackend.command_isolation saying "
            "'abstract-shared'. One bwrap per command (persistent=False) gives each command its own "
            "network namespace, so it meets this on any kernel (docs/security.md, round 30 bwrapiso)."
        ),
    )

    @field_validator("default_memory_bytes")
    @classmethod
    def _memory_floor(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < MIN_DEFAULT_MEMORY:
            raise ValueError(
                f"default_memory_bytes must be at least {MIN_DEFAULT_MEMORY} (256 MiB: an interpreter "
                "and the session's /tmp and /dev/shm need room), 'auto' or None"
            )
        return value

    @model_validator(mode="after")
    def _pool_fits(self) -> BwrapConfig:
        pool_must_fit(self.uid_pool_start, self.uid_pool_size)
        if self.sandbox_uid is not None and in_pool(
            self.sandbox_uid, self.uid_pool_start, self.uid_pool_size
        ):
            raise ValueError(
                f"sandbox_uid {self.sandbox_uid} lies in the uid lease pool, where a session may lease it "
                "while this fixed setting uses it: pick a uid outside uid_pool_start..+uid_pool_size, or "
                "leave sandbox_uid unset (each session then leases its own)"
            )
        if self.sandbox_gid is not None and self.sandbox_uid is None:
            raise ValueError(
                "sandbox_gid needs a fixed sandbox_uid (a leased uid gets the gid of its own number); "
                "set sandbox_uid too, or drop sandbox_gid"
            )
        return self


class DockerConfig(BaseModel):
    """A long-lived hardened container per session, driven by a persistent in-container executor."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    type: Literal["docker"] = "docker"
    image: str = "debian:bookworm-slim"
    #: ``copy``: the workspace is copied into the container (host copy never modified);
    #: ``bind``: the host directory is bind-mounted read-write.
    workspace_mode: Literal["copy", "bind"] = "copy"
    #: Path of the workspace inside the container.
    container_workspace: str = "/workspace"
    user: str | None = Field(
        default=None,
        description=(
            "Numeric uid[:gid] commands run as (the host cannot resolve the image's user names); None "
            "picks, when the host runs shellrt as root, a uid the session leases from the pool "
            "(uid_pool_start, uid_pool_size; no other live session on the host has it; in bind mode the "
            "workspace is idmapped to it); otherwise the caller's uid in copy mode and the workspace "
            "owner in bind mode."
        ),
    )
    uid_pool_start: int = Field(
        default=DEFAULT_POOL_START,
        ge=1,
        lt=2**32 - 1,
        description=(
            "As root, no user set: the first uid of the pool each container's commands lease "
            "theirs from (the same default pool as bwrap's: one lease directory for the host)."
        ),
    )
    uid_pool_size: int = Field(
        default=DEFAULT_POOL_SIZE,
        ge=1,
        description="How many uids the pool holds: at most that many such containers live at once.",
    )
    docker_host: str | None = Field(
        default=None, description="Docker daemon URL; None uses DOCKER_HOST or the default socket."
    )
    pull: PullPolicy = Field(
        default="never",
        description=(
            "When to pull the image: never (default), when missing locally, or always before starting "
            "(a registry must be reachable). true/false are read as missing/never."
        ),
    )

    root_can_administer: bool = Field(
        default=False,
        description=(
            "Let commands running as uid 0 administer the image (adduser, userdel, package files): the "
            "container's root becomes a writable layer, and uid-0 commands keep CAP_CHOWN, "
            "CAP_DAC_OVERRIDE and CAP_FOWNER (nothing else). Their reach to shellrt's executor and I/O is "
            "cut another way (docs/security.md). Needs copy mode and a root host; such a container is "
            "never recycled."
        ),
    )

    require_command_isolation: bool = Field(
        default=False,
        description=(
            "Refuse to start when the container cannot put each command in a Landlock domain of its own "
            "(Linux < 5.19, Landlock off, or a daemon seccomp profile refusing landlock_*), or when the "
            "probe for it fails. Off by default: such a host still runs, one trust domain per session "
            "(a background task can read and signal later commands), with a warning at the start and "
            "DockerBackend.command_isolation saying 'none' (docs/security.md, round 28 docker2)."
        ),
    )

    @model_validator(mode="after")
    def _docker_pool_fits(self) -> DockerConfig:
        pool_must_fit(self.uid_pool_start, self.uid_pool_size)
        uid = (self.user or "").partition(":")[0]
        if uid.isdigit() and in_pool(int(uid), self.uid_pool_start, self.uid_pool_size):
            raise ValueError(
                f"user {self.user!r} lies in the uid lease pool, where a session may lease it while this "
                "container uses it: pick a uid outside uid_pool_start..+uid_pool_size, or leave user unset"
            )
        return self

    @model_validator(mode="after")
    def _admin_needs_copy(self) -> DockerConfig:
        if self.root_can_administer and self.workspace_mode != "copy":
            raise ValueError(
                "root_can_administer needs workspace_mode 'copy': with CAP_CHOWN a root command could give "
                "files of the host directory to any host uid; use copy mode or leave it off"
            )
        return self

    @field_validator("pull", mode="before")
    @classmethod
    def _pull_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return "missing" if value else "never"
        return value


SandboxConfig = Annotated[LocalConfig | BwrapConfig | DockerConfig, Field(discriminator="type")]
