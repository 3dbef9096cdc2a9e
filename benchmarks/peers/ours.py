"""shellrt itself, measured through its public entry points.

* `ShellrtSupervisor` — the full execution pipeline: `Supervisor.run` over a
  sandbox backend (local, bwrap or docker): fresh shell, clean env, cwd
  tracking, spooled output, tree kill on timeout.
* `ShellrtRuntime` — what an agent calls: one assistant message with Bash
  ``tool_use`` blocks through `shellrt.Runtime.run` (validation, analysis,
  permissions, scheduling, the supervisor, result shaping).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import anyio

from benchmarks.peers.base import Outcome, System, SystemUnavailable

__all__ = ["DOCKER_IMAGE", "ShellrtRuntime", "ShellrtSupervisor"]

Kind = Literal["local", "bwrap", "docker"]

#: Set to "1": each throwaway workspace is a fresh ``git init`` (the protected-files check then
#: watches ``.git/config``, hooks and the rest, as in an agent's repository; round 36).
GIT_WORKSPACE = "SHELLRT_BENCH_GIT_WORKSPACE"

#: The registry-free image built by scripts/build-test-images.sh (has bash and coreutils).
DOCKER_IMAGE = "shellrt-test-debian"


class _Workspace:
    """A throwaway workspace and session directory."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="shellrt-bench-"))
        self.workspace = self.root / "ws"
        self.session_dir = self.root / "session"
        self.workspace.mkdir()
        self.session_dir.mkdir()
        if os.environ.get(GIT_WORKSPACE) == "1":  # as agents mostly run: in a repository
            subprocess.run(["git", "init", "-q", str(self.workspace)], check=True)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _config(kind: Kind) -> Any:
    from sandbox import BwrapConfig, DockerConfig, LocalConfig

    if kind == "local":
        return LocalConfig()
    if kind == "bwrap":
        return BwrapConfig()
    return DockerConfig(image=DOCKER_IMAGE)


class ShellrtSupervisor(System):
    """`Supervisor.run` over one sandbox backend (the whole execution pipeline, no tool layer)."""

    def __init__(self, kind: Kind = "local") -> None:
        self.kind = kind
        self.name = f"shellrt {kind} (Supervisor)"
        self._stack = AsyncExitStack()
        self._ws: _Workspace | None = None
        self.sup: Any = None

    async def __aenter__(self) -> Self:
        from sandbox import BackendUnavailableError, SandboxPolicy
        from sandbox.factory import create_backend
        from shellrt.supervisor import Supervisor

        self._ws = _Workspace()
        try:
            backend = create_backend(_config(self.kind), SandboxPolicy(workspace=self._ws.workspace))
            await self._stack.enter_async_context(backend)
            self.sup = await self._stack.enter_async_context(
                Supervisor(backend, session_dir=self._ws.session_dir)
            )
        except BackendUnavailableError as exc:
            await self._stack.aclose()
            self._ws.cleanup()
            raise SystemUnavailable(f"{self.kind} backend unavailable: {exc}") from exc
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self._stack.aclose()
        finally:
            if self._ws is not None:
                self._ws.cleanup()

    async def run(self, command: str, timeout_s: float) -> Outcome:
        result = await self.sup.run(command, timeout_s=timeout_s, merge_stderr=True)
        size = result.output_path.stat().st_size if result.output_path.exists() else 0
        return Outcome(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            recoverable_bytes=size,
            note="full output spooled to a file",
        )


class ShellrtRuntime(System):
    """`shellrt.Runtime.run` with Bash tool_use blocks (the agent-facing API, all layers)."""

    def __init__(self, kind: Kind = "local") -> None:
        self.kind = kind
        self.name = f"shellrt {kind} (Runtime, Bash tool)"
        self._ws: _Workspace | None = None
        self.rt: Any = None
        self._ids = 0
        self._error = ""

    async def __aenter__(self) -> Self:
        # The Runtime lives in its own host task, so a failure while it starts or
        # closes cannot leave a cancel scope of ours entered in the caller's task.
        self._ws = _Workspace()
        self._stop = anyio.Event()
        ready = anyio.Event()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._host, ready)
        await ready.wait()
        if self.rt is None:
            try:
                await self._tg.__aexit__(None, None, None)
            except Exception as exc:  # the Runtime's own close failed too; keep the first error
                self._error = self._error or _describe(exc)
            self._ws.cleanup()
            raise SystemUnavailable(f"Runtime did not start: {self._error}")
        return self

    async def _host(self, ready: anyio.Event) -> None:
        import shellrt

        assert self._ws is not None
        sandbox: Any = self.kind if self.kind != "docker" else _config("docker")
        try:
            async with shellrt.Runtime(
                self._ws.workspace,
                sandbox=sandbox,
                mode="bypassPermissions",
                session_dir=self._ws.session_dir,
            ) as rt:
                self.rt = rt
                ready.set()
                await self._stop.wait()
        except Exception as exc:
            self._error = self._error or _describe(exc)
            if self.rt is not None:
                raise
        finally:
            ready.set()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._stop.set()
            await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            if self._ws is not None:
                self._ws.cleanup()

    def _block(self, command: str, timeout_s: float) -> dict[str, Any]:
        self._ids += 1
        return {
            "type": "tool_use",
            "id": f"toolu_bench_{self._ids:06d}",
            "name": "Bash",
            "input": {"command": command, "timeout": int(timeout_s * 1000)},
        }

    async def run(self, command: str, timeout_s: float) -> Outcome:
        return (await self.run_many([command], timeout_s))[0]

    async def run_many(self, commands: Sequence[str], timeout_s: float) -> list[Outcome]:
        """One assistant message carrying every command (the runtime batches read-only calls)."""
        message = {"role": "assistant", "content": [self._block(c, timeout_s) for c in commands]}
        reply = await self.rt.run(message)
        return [_outcome_from_block(block) for block in reply["content"]]


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


_EXIT = re.compile(r"(?:^|\n)Exit code:? *(-?\d+)\s*$")
_SAVED = re.compile(r"full output is saved at (\S+?)(?: —|\s|$)")
_EMPTY = re.compile(r"^\(\w+ completed with no output\)$")


def _outcome_from_block(block: dict[str, Any]) -> Outcome:
    """Read a Bash tool_result the way a model would: the text, "Exit code N", a timeout message."""
    content = block.get("content")
    if isinstance(content, list):
        text = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    else:
        text = str(content or "")
    match = _EXIT.search(text)
    timed_out = bool(block.get("is_error")) and "timed out" in text.lower()
    if timed_out:
        code = None
    elif match:
        code = int(match.group(1))
    else:
        code = 1 if block.get("is_error") else 0
    size = 0 if _EMPTY.match(text) else len(text.encode())
    saved = _SAVED.search(text)
    if saved and Path(saved.group(1)).is_file():
        size = Path(saved.group(1)).stat().st_size  # the model got a preview and this path
    return Outcome(
        exit_code=code, timed_out=timed_out, recoverable_bytes=size, note=text[:200] if code else ""
    )
