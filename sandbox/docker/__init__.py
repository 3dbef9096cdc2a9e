"""The docker sandbox backend (the only place the docker SDK is imported).

Seams, one module each: ``_client`` (one SDK client per daemon, one error
translation point), ``_gc`` and ``_labels`` (owner labels, reaping leftovers),
``_backend`` (container lifecycle and exec), ``_workspace`` (copy in,
export), ``_untar`` (the export's anchored extraction), ``_recycle`` and ``_reset`` (the outside verdict on a used container), ``_process`` (a command
and the executor session it belongs to), ``_channel`` / ``_protocol`` (the
executor's control channel and wire format), ``_fifo`` (command output),
``_priv`` / ``priv.c`` (the executor's identity switch), ``executor.sh``.
"""

from __future__ import annotations

from sandbox.docker._backend import EXECUTOR_UID, DockerBackend, emergency_cleanup
from sandbox.docker._gc import SandboxInfo, gc_sandboxes, list_sandboxes
from sandbox.docker._process import DockerProcess
from sandbox.docker._reset import ResetError
from sandbox.docker._untar import WorkspaceExportError
from sandbox.errors import BackendUnavailableError

__all__ = [
    "EXECUTOR_UID",
    "BackendUnavailableError",
    "DockerBackend",
    "DockerProcess",
    "ResetError",
    "SandboxInfo",
    "WorkspaceExportError",
    "emergency_cleanup",
    "gc_sandboxes",
    "list_sandboxes",
]
