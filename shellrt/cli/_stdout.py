"""Closing stdout quietly when its reader went away (``| head``)."""

from __future__ import annotations

import os
import sys

__all__ = ["silence_stdout"]


def silence_stdout() -> None:
    """Point fd 1 at /dev/null so the interpreter's final flush cannot raise (or print a traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
