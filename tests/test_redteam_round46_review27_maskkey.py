"""Red team round 46, review27 (second reader of round 45 docker6): the daemon's default masks are
kept per daemon, but the key named the daemon by its socket, version and commit alone.

Round 45 asks the daemon for its default ``MaskedPaths`` (a never-started container) once per
process and keeps the answer under (base URL, ``Version``, ``GitCommit``). moby 28 computes part of
that default per host (a ``thermal_throttle`` directory for each CPU that has one), so a daemon of
the same build on another host behind the same URL (a ``tcp://`` or ``ssh://`` endpoint moved to
another machine, a tunnel re-pointed) got the first host's list: its containers showed what its own
plain containers hide. Now the key is the daemon's whole ``GET /version`` answer (kernel, OS, arch,
build time, component versions) beside the URL: still one ``/version`` call per start.

A real daemon answers; only its ``/version`` reply is altered to stand for a second host.
"""

from __future__ import annotations

from typing import Any

import docker

from sandbox.docker import _masks
from sandbox.docker._labels import session_labels
from tests._docker_support import DEBIAN, require_docker


def test_a_daemon_on_another_host_behind_the_same_url_is_asked_again() -> None:
    require_docker()
    client = docker.from_env()
    try:
        real_version = client.api.version
        real_create = client.api.create_container
        kernel: dict[str, str] = {}
        created: list[str] = []

        def version(*args: Any, **kwargs: Any) -> dict[str, Any]:
            answer = dict(real_version(*args, **kwargs))
            if "kernel" in kernel:
                answer["KernelVersion"] = kernel["kernel"]
            return answer

        def create_container(*args: Any, **kwargs: Any) -> Any:
            created.append(str(kwargs.get("name")))
            return real_create(*args, **kwargs)

        client.api.version = version  # type: ignore[method-assign]
        client.api.create_container = create_container  # type: ignore[method-assign]
        session = "a46b27000001"
        labels = session_labels(session, "", "")
        name = f"shellrt-{session}-999999"
        with _masks._lock:
            _masks._known.clear()
        first = _masks.daemon_masked_paths(client, DEBIAN, name, labels)
        again = _masks.daemon_masked_paths(client, DEBIAN, name, labels)
        assert (len(created), again) == (1, first), "the same daemon is asked once per process"
        kernel["kernel"] = "9.9.9-another-host"
        _masks.daemon_masked_paths(client, DEBIAN, name, labels)
        assert len(created) == 2, "a daemon on another host (its kernel differs) was answered from the first's list"
        leftover = client.api.containers(all=True, filters={"name": name})
        assert leftover == [], leftover
    finally:
        with _masks._lock:
            _masks._known.clear()
        client.close()
