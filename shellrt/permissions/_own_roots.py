"""shellrt's own configuration and state directories are never a root a command may write.

Split from `shellrt.runtime.session_mask` (which loads the sandbox's pydantic policy) so that
``shellrt run``'s lean local path refuses the same roots the full path does, with the same
function (red team round 45, iface5: the lean path ran a command whose workspace lay in
shellrt's state directory, which the full path refuses).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["refuse_own_dirs_as_roots"]


def refuse_own_dirs_as_roots(roots: Iterable[Path]) -> None:
    """`ValueError` ("the writable root R ...", with what to do) for a root that is shellrt's
    configuration directory, or is or lies inside its state directory (``$SHELLRT_HOME``, else
    ``$XDG_STATE_HOME/shellrt``, else ``~/.local/state/shellrt``). Both spellings of each path
    (as given, and resolved) are compared.

    Why: below a root both are masked (`session_dir_masks`), but a root that is one cannot be
    masked without hiding the root. The configuration directory holds the trust store and the
    workspace-writes record, its lock and the marks note, which change under other sessions all
    the time and so cannot be protected files: a command given it wrote a ``~reviewed`` tree
    vouching for its own plant (red team round 26). The state directory holds every session's
    transcript and results and the in-flight records a later session restores protected files
    from (round 26, wave 3); a root inside it (``…/shellrt/inflight``) is as bad."""
    from shellrt.permissions.trust_paths import trust_store_path
    from shellrt.supervisor._inflight import state_dir

    roots = list(roots)
    config, state = trust_store_path().parent, state_dir()
    refusals = (
        (
            config,
            False,
            f"is shellrt's own configuration directory ({config}: the trust store and the record of what "
            "sessions wrote, which later sessions trust); a command could forge them. Give a directory "
            "inside it, or set SHELLRT_TRUST_STORE to a file elsewhere",
        ),
        (
            state,
            True,
            f"is or lies inside shellrt's own state directory ({state}: sessions' transcripts and the "
            "in-flight records later sessions restore files from); a command could read or forge them. "
            "Give a directory outside it, or set SHELLRT_HOME to a directory elsewhere",
        ),
    )
    for own, inside_too, refusal in refusals:
        forms = _spellings(own)
        for root in roots:
            at = _spellings(root)
            if forms & at or (inside_too and any(form in r.parents for r in at for form in forms)):
                raise ValueError(f"the writable root {root} {refusal}")


def _spellings(path: Path) -> set[Path]:
    """``path`` as given (absolute, normalised) and resolved."""
    return {Path(os.path.normpath(os.path.abspath(path))), Path(os.path.realpath(path))}
