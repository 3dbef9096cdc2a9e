"""Re-export of `sandbox._hostpath`: the ``PATH`` host-side programs are found on (round 15)."""

from __future__ import annotations

from sandbox._hostpath import host_env, host_path, host_which, register_writable, unregister_writable

__all__ = ["host_env", "host_path", "host_which", "register_writable", "unregister_writable"]
