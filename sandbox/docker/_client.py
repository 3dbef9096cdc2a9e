"""The one docker SDK client per process and daemon, and the one place SDK failures become our errors.

A client costs a version round trip and a ping, so each process keeps one per
daemon (thread-safe: one pooled connection per concurrent request); a client
whose daemon stopped answering is dropped (`forget_client`) so the next call
connects afresh. `translate` turns the SDK's exceptions into `sandbox.errors`
with a sentence that says what to do.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar
from urllib.parse import urlparse

import anyio
import anyio.to_thread
import docker
import docker.errors
import requests.exceptions

from sandbox.errors import BackendUnavailableError, SandboxError

__all__ = [
    "connect",
    "forget_client",
    "require_local_daemon",
    "thread",
    "translate",
    "unreachable",
    "where",
]

_T = TypeVar("_T")


async def thread(fn: Callable[[], _T]) -> _T:
    """Run blocking SDK work in a worker thread (never abandoned: the SDK call finishes)."""
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=False)


def daemon_url(config_host: str | None) -> str | None:
    return config_host or os.environ.get("DOCKER_HOST") or None


#: One client per (process, daemon): a client costs a version round trip and a ping.
_clients: dict[tuple[int, str | None], docker.DockerClient] = {}
_clients_lock = threading.Lock()
#: Connections kept per client: enough for every thread of a busy batch run.
_POOL_SIZE = 64


def unreachable(where: str, exc: BaseException) -> BackendUnavailableError:
    return BackendUnavailableError(
        f"Docker daemon not reachable at {where}: {exc}. Start it (`sudo dockerd &`, or "
        "`sudo systemctl start docker`; scripts/start-dockerd.sh does both) or point "
        "DOCKER_HOST / DockerConfig.docker_host at a running daemon."
    )


def where(config_host: str | None) -> str:
    return daemon_url(config_host) or "the default socket (unix:///var/run/docker.sock)"


def connect(config_host: str | None) -> docker.DockerClient:
    """This process's pinged client for the daemon, or `BackendUnavailableError` saying how to start it.

    Clients are shared (thread-safe: one connection per concurrent request) and
    made once per process and daemon; a client whose daemon went away is
    dropped by `forget_client` so the next call connects afresh.
    """
    url = daemon_url(config_host)
    key = (os.getpid(), url)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            return client
        try:
            if url:
                client = docker.DockerClient(base_url=url, timeout=120, max_pool_size=_POOL_SIZE)
            else:
                client = docker.from_env(timeout=120, max_pool_size=_POOL_SIZE)
            client.ping()
        except Exception as exc:
            raise unreachable(where(config_host), exc) from exc
        _clients[key] = client
        return client


def forget_client(config_host: str | None) -> None:
    """Drop the cached client (its daemon stopped answering)."""
    with _clients_lock:
        client = _clients.pop((os.getpid(), daemon_url(config_host)), None)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()


def require_local_daemon(config_host: str | None) -> None:
    url = daemon_url(config_host)
    if not url:
        return
    parsed = urlparse(url)
    if parsed.scheme in ("unix", "npipe", ""):
        return
    if parsed.hostname in ("localhost", "127.0.0.1", "::1"):
        return
    raise BackendUnavailableError(
        f"the docker backend needs a daemon on this machine, not {url}: command output flows "
        "through FIFOs in a host directory bind-mounted into the container."
    )


@contextlib.contextmanager
def translate(config_host: str | None, doing: str) -> Iterator[None]:
    """Turn the SDK's exceptions into `SandboxError` subclasses naming what failed and what to do."""
    try:
        yield
    except SandboxError:
        raise
    except requests.exceptions.ConnectionError as exc:
        forget_client(config_host)
        raise unreachable(where(config_host), exc) from exc
    except docker.errors.APIError as exc:
        raise BackendUnavailableError(f"could not {doing}: {exc}") from exc
