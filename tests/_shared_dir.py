"""A temporary directory every user reaches, for tests of what a root harness copies or judges.

pytest's own temporary directories are root-only (0700), so a sandbox user cannot reach anything in
them; a downloaded dataset or a shared checkout is world-readable, and that is what these tests need.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def world_readable_dir(prefix: str) -> Iterator[Path]:
    """A fresh 0755 directory under /tmp named ``prefix...``, removed with all it holds on exit."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
