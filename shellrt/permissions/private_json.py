"""Writing a store only its owner may read (the trust store, saved rules' anchors, MCP pins):
atomically, so a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["write_private_json"]


def write_private_json(path: Path, data: dict[str, Any], *, indent: int = 1) -> None:
    """``data`` as JSON at ``path`` (mode 0600, its directory made 0700), by rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=indent, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
