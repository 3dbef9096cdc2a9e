"""What every command of every backend gets in its environment over the caller's: ``GIT_OPTIONAL_LOCKS=0``.

``git status`` (and other git reads) refresh the index's cached stat data when work-tree files
were touched: they take ``.git/index.lock`` and rewrite ``.git/index``. A command judged
read-only then changed a file, two of them in one message raced on the lock, and a concurrent
``git add`` or ``git commit`` (a background task) failed on it (red team, round 13). With the
variable git skips those optional writes. The analysis' read-only overlay set it for the git
commands it recognised; set here, in each backend's environment builder (`sandbox._hostproc.
child_env` for local and bwrap, the docker request), it holds for every command and every caller
(batch tasks, Inspect, hooks) and no caller's environment can turn it off -- a command itself
can (``GIT_OPTIONAL_LOCKS=1 git status``), and is then not judged read-only.
"""

from __future__ import annotations

__all__ = ["COMMAND_ENV"]

#: Laid over the command's own environment by every backend.
COMMAND_ENV: dict[str, str] = {"GIT_OPTIONAL_LOCKS": "0"}
