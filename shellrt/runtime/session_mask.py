"""shellrt's own state is shellrt's, never the sandbox's.

The session directory holds the output spools, the transcript, the resume state,
persisted results, the audit log and the quarantine; the per-user state directory
holds every session and the in-flight records a later session restores protected
files from; the config directory holds the workspace trust store (which decides
whether a repository's hooks run on the host); the cache holds the docker
identity helper. The host opens, writes and trusts all of them. With the home
directory as the workspace (or a ``session_dir`` / ``SHELLRT_HOME`` inside a
writable root) they were the sandbox's to write: a command planted symlinks the
host wrote through, trusted a hostile repository, forged records, replaced the
helper. So each of them below a writable root is masked in the sandbox, as secrets
are (made first when missing, so the mask holds from the first command).

Outside the writable roots the same directories are read-only for commands but were
readable: a non-root caller's home is the host view, so a command printed every earlier
session's transcript and persisted results (MCP answers, fetched pages, what a ``local``
session read), the trust store and the in-flight records. Each of them that exists is
masked too, for every home shellrt may have used (``$HOME`` and the password
database's, the ``XDG_*`` and the default locations). Of this session's directory,
commands and the file tools alike see only the result directories the model is pointed
at (``tool-results/``, ``shell/``, ``tasks/``: `shellrt.runtime.read_only_binds` binds
them back for commands, `shellrt.tools._paths.view_for` shows them to the tools).
"""

from __future__ import annotations

import contextlib
import os
import pwd
from pathlib import Path

from sandbox import SandboxPolicy
from shellrt.permissions._own_roots import refuse_own_dirs_as_roots

__all__ = [
    "own_state_dirs",
    "own_state_masks",
    "refuse_own_dirs_as_roots",
    "session_dir_masks",
    "state_dirs_anywhere",
]


def own_state_dirs(session_dir: Path) -> list[Path]:
    """The directories shellrt keeps state in for this session (whether they exist or not)."""
    from shellrt.permissions.trust_paths import trust_store_path
    from shellrt.supervisor._inflight import state_dir

    dirs = [session_dir, state_dir(), trust_store_path().parent]
    # The cache of our static helpers, the docker identity switch and the bwrap init
    # (`sandbox._static_build.cache_dirs`; the temp dir one is the host's /tmp, which no sandbox
    # sees): named here, importing the sandbox backends costs seconds.
    if os.environ.get("XDG_CACHE_HOME"):
        dirs.append(Path(os.environ["XDG_CACHE_HOME"]) / "shellrt")
    home = os.path.expanduser("~")
    if home and home != "~":
        dirs.append(Path(home) / ".cache" / "shellrt")
    return dirs


def state_dirs_anywhere() -> list[Path]:
    """shellrt's per-user directories wherever a session of this user may have put them: under
    ``$HOME`` and the password database's home (CI points HOME elsewhere), at the ``XDG_*`` and
    ``SHELLRT_HOME`` locations this process uses and at the defaults other processes used."""
    homes = [os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError, OSError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    dirs: list[str] = []
    for home in homes:
        if home.startswith("/"):
            dirs += [f"{home}/.local/state/shellrt", f"{home}/.config/shellrt", f"{home}/.cache/shellrt"]
    for variable, leaf in (
        ("XDG_STATE_HOME", "shellrt"),
        ("XDG_CONFIG_HOME", "shellrt"),
        ("XDG_CACHE_HOME", "shellrt"),
    ):
        value = os.environ.get(variable, "")
        if value.startswith("/"):
            dirs.append(os.path.join(value, leaf))
    if os.environ.get("SHELLRT_HOME", "").startswith("/"):
        dirs.append(os.environ["SHELLRT_HOME"])
    return [Path(os.path.normpath(d)) for d in dict.fromkeys(dirs)]


def own_state_masks(policy: SandboxPolicy, session_dir: Path | None = None) -> tuple[Path, ...]:
    """The one answer to "what of shellrt's own state must this sandbox not see", for a `Session`
    (``session_dir``) and for ``shellrt run`` (None: a sandbox of no session, whose own directory
    is a temp dir no sandbox sees, so the sessions' directory stands in for it).

    Raises `ValueError` (`refuse_own_dirs_as_roots`) for a writable root that cannot be masked
    without hiding it; else `session_dir_masks`, one path per realpath in a stable order (first
    spelling kept). Why one function: ``shellrt run`` and the `Runtime` each joined two mask lists
    of their own (round 26), one deduplicated and one not; the next place to mask had two
    callers to change, and forgetting one left ``shellrt run`` open (red team round 26, wave 3)."""
    if session_dir is None:
        from shellrt.supervisor._inflight import session_root

        session_dir = session_root()
    refuse_own_dirs_as_roots(policy.allowed_roots())
    masks: dict[str, Path] = {}
    for path in session_dir_masks(session_dir, policy):
        masks.setdefault(os.path.realpath(path), path)
    return tuple(masks.values())


def session_dir_masks(session_dir: Path, policy: SandboxPolicy) -> tuple[Path, ...]:
    """What of shellrt's own state the sandbox must not see.

    Those of `own_state_dirs` strictly below a root the sandbox may write (by path or realpath),
    created (0700) when missing: a mask only covers what exists when the sandbox starts. And,
    outside the roots, every existing one of `own_state_dirs` and `state_dirs_anywhere` (other
    sessions' transcripts and results, the trust store, the in-flight records), except this
    session's own directory when it lies apart from them (its results are the model's anyway)
    and a directory that is or holds a root (it cannot be masked without hiding the root)."""
    roots = {Path(os.path.realpath(r)) for r in policy.allowed_roots()}
    roots |= {Path(os.path.normpath(r)) for r in policy.allowed_roots()}
    own = Path(os.path.normpath(os.path.abspath(session_dir)))
    masks: list[Path] = []
    for directory in own_state_dirs(session_dir):
        path = Path(os.path.normpath(os.path.abspath(directory)))
        forms = {path, Path(os.path.realpath(path))}
        if any(root in form.parents for form in forms for root in roots):
            with contextlib.suppress(OSError):
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            masks.append(path)
    ours = own_state_dirs(session_dir)[1:]
    for directory in [*ours, *state_dirs_anywhere()]:
        path = Path(os.path.normpath(os.path.abspath(directory)))
        forms = {path, Path(os.path.realpath(path))}
        if path == own or any(form == root or form in root.parents for form in forms for root in roots):
            continue
        if directory == ours[0]:
            # Every session of this user lives there, this one's too: made now, or a user's first
            # session left its transcript and results open to its commands (round 15).
            with contextlib.suppress(OSError):
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.path.isdir(path):
            masks.append(path)
    return tuple(dict.fromkeys(masks))
