"""``python -m shellrt`` runs the same CLI as the ``shellrt`` console script."""

import os
import sys


def _drop_cwd_from_path() -> None:
    """``python -m`` puts the current directory first on ``sys.path``, and the CLI's default
    workspace is that directory: shellrt imports lazily, so a module a sandboxed command wrote
    there (``anyio.py``) ran on the host at the next import or the next run (red team, round 16).
    Drop it, unless shellrt itself was found there (a source checkout run from its root; the
    bwrap backend then warns that the workspace holds the host's code)."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # -P / PYTHONSAFEPATH / -I: no such entry was added
    first = os.path.realpath(sys.path[0] or os.curdir)
    if first != os.path.realpath(os.curdir):
        return
    import shellrt  # already imported by runpy (its __init__ imports nothing heavy)

    if os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(shellrt.__file__)))) != first:
        del sys.path[0]


if __name__ == "__main__":
    _drop_cwd_from_path()
    from shellrt.cli import main

    sys.exit(main())
