"""The sandbox backends the conformance suite runs over.

To add a backend, add one entry: name -> a function returning its config.
Every test in ``tests/conformance`` then runs on it too. A backend that cannot
start here (`BackendUnavailableError`) is skipped locally and FAILS when CI=true.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig

BACKENDS: dict[str, Callable[[], SandboxConfig]] = {
    "local": LocalConfig,
    "bwrap": BwrapConfig,  # persistent: one session sandbox, a zygote forks each command
    "bwrap-per-command": lambda: BwrapConfig(persistent=False),
    # Debian minbase (has bash), built by scripts/build-test-images.sh; owner: the docker backend.
    "docker": lambda: DockerConfig(image="shellrt-test-debian"),
}
