"""An Inspect (inspect-ai) sandbox provider on shellrt's backends: ``sandbox=("shellrt", config)``.

Registered as ``"shellrt"`` through Inspect's ``inspect_ai`` entry point (the
``inspect`` extra installs it), so a task needs no import. Each sample gets a
fresh sandbox from `sandbox.factory` (bwrap by default, docker or local on
request; see `ShellrtSandboxConfig`) with a private workspace; commands run by
argv (no shell in between), files move through the sandbox itself
(`SandboxBackend.read_file` / `write_file`), so the sandbox confines both.

How Inspect's contract maps (see ``docs/inspect.md``):

* ``exec``: cwd relative to the workspace, ``env`` added to the base
  environment, ``input`` fed as bytes, ``timeout`` kills the whole tree and
  raises `TimeoutError`; an output stream over Inspect's limit raises
  `OutputLimitExceededError` with the tail. A program that cannot be executed
  raises `PermissionError`; one that does not exist is a failed result (127).
  ``user`` on a backend with one identity (bwrap, local) raises
  `SandboxUserUnsupportedError`; a sandbox that died raises
  `SandboxUnavailableError`. ``timeout_retry`` is not used: a command that
  timed out is never run again behind the caller's back.
* ``read_file`` / ``write_file``: OS errors as Inspect documents them, the
  read limit as `OutputLimitExceededError`.
* ``connection``: docker only (``docker exec`` into the sample's container).
* ``cli_cleanup``: removes directories and containers of runs that died.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
from typing import Literal, overload

import anyio
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxConnection,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import override

from sandbox import ExecRequest, SandboxBackend
from sandbox._collect import Collected, run_collected
from sandbox.errors import (
    BackendUnavailableError,
    FileTooLargeError,
    SandboxClosedError,
    SandboxExecError,
    UnsupportedRequestError,
)
from sandbox.factory import create_backend
from shellrt.integrations._inspect_config import ShellrtSandboxConfig, config_from_data, load_config
from shellrt.integrations._inspect_leftovers import SampleDir, cleanup_leftovers
from shellrt.supervisor.env import base_env

__all__ = ["ShellrtSandboxConfig", "ShellrtSandboxEnvironment"]

_log = logging.getLogger("shellrt.integrations.inspect")

#: Inspect's own default for file operations that may move large files.
_FILE_TIMEOUT_S = 600.0
#: The launchers' prefixes on the one stderr line they write when a program cannot be executed.
_LAUNCHER_PREFIXES = ("shellrt: ", "shellrt-priv: ")

#: Environments still open, by task (closed by `task_cleanup` if a sample's cleanup never ran).
_open: dict[str, set[ShellrtSandboxEnvironment]] = {}


@sandboxenv(name="shellrt")
class ShellrtSandboxEnvironment(SandboxEnvironment):
    """One sample's shellrt sandbox."""

    def __init__(self, backend: SandboxBackend, sample_dir: SampleDir, config: ShellrtSandboxConfig) -> None:
        super().__init__()
        self.backend = backend
        self._dir = sample_dir
        env = base_env() if backend.host_view else base_env({})
        if not backend.host_view:
            env.pop("HOME", None)  # the image's user has its own (or none)
        self._env = {**env, **config.env}

    # --- lifecycle -------------------------------------------------------------
    @override
    @classmethod
    def config_deserialize(cls, config: dict[str, object]) -> BaseModel:
        # Data, not code (an eval log for eval-retry, a dataset's dict): floored like a config
        # file when a sample starts (round 16).
        return config_from_data(config)

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        """Check once per task that the sandbox can start here (a clear error before any sample)."""
        settings = _settings(config)
        env = await _start(task_name, settings)
        await env._close()

    @override
    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        return {"default": await _start(task_name, _settings(config))}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        """Close each sandbox now, interrupted or not (shielded: a cancelled sample still cleans up)."""
        with anyio.CancelScope(shield=True):
            for environment in environments.values():
                await environment.as_type(ShellrtSandboxEnvironment)._close()

    @override
    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        """Close what samples left open; with ``--no-sandbox-cleanup`` keep it and say where it is."""
        left = _open.pop(task_name, set())
        with anyio.CancelScope(shield=True):
            for environment in left:
                if cleanup:
                    await environment._close()
                else:
                    _log.warning(
                        "shellrt sandbox kept (--no-sandbox-cleanup) until this process exits: workspace %s%s",
                        environment._dir.workspace,
                        f", container {environment.backend.container_id}"
                        if environment.backend.container_id
                        else "",
                    )

    @override
    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        """``inspect sandbox cleanup shellrt [id]``: remove what crashed runs left (or sandbox ``id``)."""
        removed = await anyio.to_thread.run_sync(cleanup_leftovers, id)
        for line in removed:
            print(f"removed {line}")
        if not removed:
            print("no leftover shellrt sandboxes" + (f" matching {id}" if id else ""))

    async def _close(self) -> None:
        try:
            await self.backend.close()
        finally:
            self._dir.remove()
            for environments in _open.values():
                environments.discard(self)

    # --- execution -------------------------------------------------------------
    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if not cmd:
            raise ValueError("exec needs a command (a non-empty list: program and arguments)")
        stdin = input.encode() if isinstance(input, str) else input
        request = ExecRequest(
            argv=tuple(cmd),
            cwd=self._sandbox_path(cwd or "."),
            env={**self._env, **(env or {})},
            stdin=stdin is not None,
            user=user,
        )
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        try:
            result = await run_collected(
                self.backend, request, stdin_data=stdin, limit=limit, keep="tail", timeout_s=timeout
            )
        except TimeoutError as exc:
            raise TimeoutError(f"Command timed out after {timeout} seconds") from exc
        except UnsupportedRequestError as exc:
            raise SandboxUserUnsupportedError(str(exc)) from exc
        except SandboxClosedError as exc:
            raise SandboxUnavailableError(f"The sandbox is not running and cannot execute: {exc}") from exc
        except SandboxExecError as exc:
            return _start_failure(exc)
        return _result(result, cmd[0])

    # --- files -----------------------------------------------------------------
    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        try:
            await self.backend.write_file(file, data, timeout_s=_FILE_TIMEOUT_S)
        except SandboxClosedError as exc:
            raise SandboxUnavailableError(str(exc)) from exc

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        try:
            data = await self.backend.read_file(
                file, max_bytes=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE, timeout_s=_FILE_TIMEOUT_S
            )
        except FileTooLargeError as exc:
            raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None) from exc
        except SandboxClosedError as exc:
            raise SandboxUnavailableError(str(exc)) from exc
        # newline="" semantics: bytes decoded as they are (CRLF stays); bad UTF-8 raises UnicodeDecodeError
        return data.decode("utf-8") if text else data

    # --- connection ------------------------------------------------------------
    @override
    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        container = self.backend.container_id
        if container is None:
            raise NotImplementedError(
                f"the {self.backend.name} sandbox has no connection to offer (no container to attach to); "
                "use sandbox: docker for `inspect sandbox connect`-style access"
            )
        from sandbox.docker import DockerBackend

        if not isinstance(self.backend, DockerBackend):
            raise NotImplementedError(f"the {self.backend.name} sandbox has no connection to offer")
        # Through shellrt's priv helper, as every command starts: a plain `docker exec` shell held
        # the executor's capabilities, and a root command's planted ~/.bashrc ran with them
        # (red team round 13). A user that names no one is a ValueError saying what to give.
        command = await self.backend.connection_argv(user)
        # One word each, as the operator's shell reads them: the shell path is the container's
        # word (vetted at the hello, and quoted anyway).
        return SandboxConnection(type="shellrt", command=shlex.join(command), container=container)

    def default_polling_interval(self) -> float:
        return 0.2

    def _sandbox_path(self, path: str) -> str:
        """A path as the sandbox sees it: relative ones are relative to the workspace."""
        return (
            path
            if posixpath.isabs(path)
            else posixpath.normpath(posixpath.join(self.backend.workspace, path))
        )


def _settings(config: SandboxEnvironmentConfigType | None) -> ShellrtSandboxConfig:
    try:
        return load_config(config)
    except ValueError as exc:
        raise PrerequisiteError(str(exc)) from exc


async def _start(task_name: str, settings: ShellrtSandboxConfig) -> ShellrtSandboxEnvironment:
    """A started sandbox with a fresh workspace (a copy of ``settings.workspace`` when set)."""
    sample_dir = SampleDir()
    try:
        policy = settings.policy(sample_dir.workspace)
        await anyio.to_thread.run_sync(
            sample_dir.prepare, settings.workspace, policy.read_denied, settings._source_identity
        )
        backend = create_backend(settings.backend_config(), policy)
        try:
            await backend.start()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await backend.close()
            raise
    except BackendUnavailableError as exc:
        sample_dir.remove()
        raise PrerequisiteError(
            f"the shellrt {settings.sandbox} sandbox cannot start here: {exc}. "
            "Pick another with ShellrtSandboxConfig(sandbox=...) (bwrap, docker, or local: no isolation)."
        ) from exc
    except BaseException:
        sample_dir.remove()
        raise
    if backend.container_id is not None:
        sample_dir.record_container(backend.container_id)
    environment = ShellrtSandboxEnvironment(backend, sample_dir, settings)
    _open.setdefault(task_name, set()).add(environment)
    return environment


def _start_failure(exc: SandboxExecError) -> ExecResult[str]:
    """A program that could not start: PermissionError when not executable, else a failed result."""
    cause = exc.__cause__
    if isinstance(cause, PermissionError):
        raise PermissionError(f"Permission denied executing command: {exc}") from exc
    code = 127 if isinstance(cause, FileNotFoundError) else 1
    return ExecResult(success=False, returncode=code, stdout="", stderr=f"shellrt: {exc}\n")


def _result(result: Collected, program: str) -> ExecResult[str]:
    status = result.status
    if status.sandbox_failure is not None:
        raise SandboxUnavailableError(f"The sandbox failed while the command ran: {status.sandbox_failure}")
    stdout = result.stdout.decode(errors="replace")
    stderr = result.stderr.decode(errors="replace")
    if status.exit_code == 126 and not stdout and _launcher_refused(stderr, program):
        raise PermissionError(f"Permission denied executing command {program!r}: {stderr.strip()}")
    if result.stdout_overflow or result.stderr_overflow:
        raise OutputLimitExceededError(SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR, stdout + stderr)
    return ExecResult(
        success=status.exit_code == 0, returncode=status.exit_code, stdout=stdout, stderr=stderr
    )


def _launcher_refused(stderr: str, program: str) -> bool:
    """Whether stderr is the single line a backend's launcher writes when it cannot execute ``program``."""
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith(_LAUNCHER_PREFIXES) and program in lines[0]
