"""Path resolution and the file tools' own permission verdicts, in the sandbox's view.

The file tools run in the host process but must see what commands see and
never reach further (`sandbox.confine` owns the semantics). `view_for` builds
the session's `confine.View` from its backend: local and bwrap see the host
root (read-only) with the workspace and ``--writable`` roots writable; bwrap's
``/tmp`` is the session's private directory; docker sees only its workspace,
served from the bind-mounted host copy. Paths the model gives are sandbox
paths (relative to the session cwd, ``~`` expanded on host-like backends) and
every result and error speaks sandbox paths (``/workspace/a.txt`` on docker).

Governance runs on a canonical path (symlinks resolved in the view, before any
decision: a symlink inside the workspace that points outside is judged by its
target); rules match its *logical* host path (docker: the original workspace,
not its private copy). `PathInput` remembers that resolution in a private
attribute that survives ``backfill``'s copy; the public input is never
mutated. The tools then open and write through `sandbox.confine`, anchored at
directory fds, so the check and the use cannot be split by a symlink swap.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

import anyio
from pydantic import BaseModel, ConfigDict, PrivateAttr

from sandbox import confine
from sandbox._hostcode import host_code_reason
from sandbox._namefold import fold_path
from sandbox.base import ExecRequest, SandboxBackend
from sandbox.config import BwrapConfig
from sandbox.confine import ConfinementError, Mount, View
from sandbox.others_places import others_places
from shellrt.protocol import PermissionResult, PermissionSubject, ToolContext, ToolExecutionError
from shellrt.protocol.results import HOST_RESULTS_DIR, RESULTS_DIR
from shellrt.protocol.textchars import unseen
from shellrt.supervisor._cd_loads import cd_loaded_reason
from shellrt.supervisor.protect import SHELL_STARTUP_FILES, hooks_dir_reason, protected_reason
from shellrt.tools._search import RG_DATA_BYTES, OutputSink, RgRunner, drain_output
from shellrt.tools._view_cache import CachedView, owner_of

if TYPE_CHECKING:
    from shellrt.permissions.ruleset import RuleSet

__all__ = [
    "PathInput",
    "canonical_path",
    "display_path",
    "file_permission",
    "has_deny_rules",
    "in_sandbox_words",
    "is_read_denied",
    "is_sensitive",
    "mtime_order",
    "refusal",
    "remember",
    "resolve_path",
    "resolve_paths",
    "ripgrep_mode",
    "ripgrep_options",
    "rule_denied",
    "sandbox_path",
    "sandbox_roots",
    "sandbox_runner",
    "search_top",
    "shown_path",
    "state_key",
    "subject_for",
    "view_for",
    "visible",
]

#: Basenames of shell start-up files (the after-command check's list) and git's user config:
#: writing one runs code in every future shell (or git).
_SHELL_RC = SHELL_STARTUP_FILES | {".gitconfig"}


class PathInput(BaseModel):
    """Base of inputs with a ``file_path``; remembers the resolved path for governance."""

    model_config = ConfigDict(extra="forbid")

    _resolved: str | None = PrivateAttr(default=None)
    _canonical: str | None = PrivateAttr(default=None)
    _refused: str | None = PrivateAttr(default=None)
    _identity: confine.Identity | None = PrivateAttr(default=None)

    def remember_resolved(
        self, path: str | Path, canonical: str | None = None, refused: str | None = None
    ) -> None:
        """Record the resolution made with a context (called from ``validate``): the logical path
        (what rules match) and the canonical sandbox path (what the tool's own check judges and
        the call's open must find again), so the subject, the check and the open judge one
        resolution, not three moments of a changing tree. ``refused``: why the view refused the
        path then (the check denies it; it must not resolve it again)."""
        self._resolved = str(path)
        self._canonical = canonical
        self._refused = refused

    @property
    def resolved(self) -> str | None:
        return self._resolved

    @property
    def canonical(self) -> str | None:
        return self._canonical

    @property
    def refused(self) -> str | None:
        return self._refused

    def remember_identity(self, found: confine.Identity | None) -> None:
        """Record what the resolution found, by inode (`sandbox.confine.Identity`): the call's
        open and write must find that directory and that file again, not whatever a command
        renamed or exchanged into the same path since."""
        self._identity = found

    @property
    def identity(self) -> confine.Identity | None:
        return self._identity


def _backend(ctx: ToolContext) -> SandboxBackend | None:
    if not ctx.has_service(SandboxBackend):
        return None
    return ctx.service(SandboxBackend)  # type: ignore[type-abstract]  # looked up by its interface


def _identity(backend: SandboxBackend | None) -> bool:
    """The backend's processes see host paths as they are (local, bwrap)."""
    return backend is None or type(backend).to_host_path is SandboxBackend.to_host_path


def _root_mounts(
    root: Path | str, *, writable: bool, caller_reads: bool = False, others: tuple[Path | str, ...] = ()
) -> list[Mount]:
    text = confine.normalize(str(root))
    if any(text != o and confine.is_within(text, o) for o in map(confine.normalize, map(str, others))):
        # A root inside another root: only its own name, reached from the holding root's fd
        # (`sandbox.confine.View._open_root`); its realpath now may be wherever a command's
        # symlink on the way leads (red team, round 11).
        return [Mount(text, text, writable=writable, caller_reads=caller_reads)]
    real = os.path.realpath(text)
    return [Mount(p, p, writable=writable, caller_reads=caller_reads) for p in dict.fromkeys((text, real))]


#: `_reader` before a bwrap session has its uid: read as no one may (and own nothing as it).
_NO_SESSION_UID = (2**32 - 2, 2**32 - 2)


def _reader(backend: SandboxBackend | None) -> tuple[int, int] | None:
    """The identity commands run as when it is not the caller's: bwrap run as root runs them under
    its unprivileged sandbox uid, and the file tools must not read with root's power what they cannot."""
    if backend is None or os.geteuid() != 0:
        return None
    ids = getattr(backend, "command_ids", None)
    if _docker_idmapped(backend) is not None and isinstance(ids, tuple):
        # docker bind mode under a leased uid: the idmapped workspace shows another owner's
        # files to commands as the overflow uid's (red team round 16: the tools wrote and read there).
        return (int(ids[0]), int(ids[1]))
    config = getattr(backend, "config", None)
    if isinstance(config, BwrapConfig):
        ids = getattr(backend, "sandbox_ids", None)  # the fixed or the session's leased uid
        if ids is None:  # no session uid yet: fail closed, read as no one may
            return _NO_SESSION_UID
        return (int(ids[0]), int(ids[1]))
    return None


def _docker_idmapped(backend: SandboxBackend | None) -> tuple[int, int] | None:
    """The workspace owner a docker bind-mode session maps to its leased uid (`idmapped_owner`)."""
    owner = getattr(backend, "idmapped_owner", None)
    return owner if isinstance(owner, tuple) else None


def _bwrap_private(roots: list[Path]) -> list[str]:
    """What bwrap fills with its own (`sandbox.bwrap.private_places`: its /proc and /dev, the run
    dirs it empties, the host's temp dir when not /tmp, or when a writable root holds it:
    `sandbox._tempholder`) -- mounts of the workspace kept."""
    from sandbox._tempholder import exposed_temp_dir
    from sandbox.bwrap import private_places  # loaded already: the session runs a bwrap backend

    exposed = exposed_temp_dir(roots)
    return [*private_places(), *([exposed] if exposed is not None else [])]


def _others_places(roots: list[Path]) -> tuple[str, ...]:
    """Where another shellrt process of this uid whose ``HOME`` or ``TMPDIR`` is a writable root
    keeps its caches (a zygote's init), meeting place and budget holder's lock: the names bwrap
    masks below each root (`sandbox.others_places`), folded (`sandbox._namefold`), as
    spelt and resolved, whether they exist or not (one made later is that process's all the same).
    A file tool that wrote there planted an init or took a lock (red team round 27)."""
    places: dict[str, None] = {}
    for root in roots:
        for base in (confine.normalize(str(root)), os.path.realpath(root)):
            for names in others_places():
                places[fold_path(os.path.join(base, *names))] = None
    return tuple(places)


def view_for(ctx: ToolContext) -> View:
    """The sandbox's filesystem as its commands see it, for this session.

    Built once per session and kept while what it was made from is unchanged (`_view_cache`):
    rebuilding it cost ~1-10 ms a call (a realpath of every mask and root), three times a Read,
    so 1,000 Reads of one message spent seconds on it. Each call gets its own copy (a view's
    hard-link table is worked out per call)."""
    key = _view_key(ctx)
    cached = ctx.tool_state.get(_VIEW_STATE)
    if isinstance(cached, CachedView) and cached.key == key and cached.still_valid():
        return cached.fresh()
    view = _build_view(ctx)
    ctx.tool_state[_VIEW_STATE] = CachedView.of(key, view, _host_places(view))
    return view


#: ``ctx.tool_state`` key of the session's cached view (never saved with the session's state).
_VIEW_STATE = "shellrt.tools._paths.view"


def _view_key(ctx: ToolContext) -> tuple[object, ...]:
    """Everything the view is made of except the filesystem (`CachedView` checks the symlinks
    and owners it resolved): the backend object and its policy object (frozen: the same object
    is the same policy), how the backend maps the roots, who reads, the context's roots and
    masks, the session's places."""
    backend = _backend(ctx)
    common = (
        ctx.read_denied,
        ctx.allowed_roots,
        ctx.workspace,
        ctx.session_dir,
        os.geteuid(),
        os.environ.get("XDG_RUNTIME_DIR"),
        tempfile.gettempdir(),
    )
    if backend is None:
        return (None, *common)
    mapped = []
    for root in backend.policy.allowed_roots():
        inside = backend.to_sandbox_path(Path(root))
        mapped.append((root, inside, backend.to_host_path(inside) if inside is not None else None))
    return (
        _Same(backend),
        _Same(backend.policy),
        _identity(backend),
        _reader(backend),
        tuple(mapped),
        getattr(backend, "session_tmp", None),
        *common,
    )


def _host_places(view: View) -> tuple[str, ...]:
    """Host paths a bwrap view's private places were worked out from (`_bwrap_private`)."""
    if not view.private:
        return ()
    from sandbox._hostsockets import RUN_DIRS

    return (*RUN_DIRS, os.environ.get("XDG_RUNTIME_DIR") or "/", tempfile.gettempdir())


class _Same:
    """A key part equal only to the very same object (the session's backend, its frozen policy);
    held strongly, so a new object can never take a freed one's id and pass for it."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _build_view(ctx: ToolContext) -> View:
    """`view_for`, made afresh."""
    backend = _backend(ctx)
    mounts: list[Mount] = []
    masked: list[str] = [str(p) for p in ctx.read_denied]
    unwritable: list[str] = []
    private: list[str] = []
    foreign: tuple[str, ...] = ()
    if _identity(backend):
        mounts.append(Mount("/", "/"))
    if backend is None:
        given = tuple(r for r in ctx.allowed_roots or (ctx.workspace,) if Path(r) != Path(ctx.session_dir))
        for root in given:
            if Path(root) != Path(ctx.session_dir):
                mounts += _root_mounts(root, writable=True, others=given)
    else:
        identity = _identity(backend)
        reader = _reader(backend)
        others = tuple(backend.policy.allowed_roots())
        for root in backend.policy.allowed_roots():
            inside = backend.to_sandbox_path(Path(root))
            host = backend.to_host_path(inside) if inside is not None else None
            if inside is None or host is None:
                continue
            if identity and reader is not None:
                # bwrap as root: the root is shown to the sandbox uid through an idmapped mount, so
                # its owner is who creates and reads there (the tools act as that owner too).
                owner = owner_of(inside)
                mounts += [
                    Mount(m.path, m.host, writable=True, owner=owner, idmapped=True)
                    for m in _root_mounts(inside, writable=True, others=others)
                ]
            elif identity:
                mounts += _root_mounts(inside, writable=True, others=others)
            else:
                mapped = _docker_idmapped(backend) if Path(root) == Path(backend.policy.workspace) else None
                mounts.append(
                    Mount(
                        inside,
                        str(host),
                        writable=True,
                        logical=str(root),
                        owner=mapped or owner_of(host),
                        idmapped=mapped is not None,
                    )
                )
        private_tmp = getattr(backend, "session_tmp", None)
        if isinstance(private_tmp, Path):
            # bwrap as root: the private /tmp is bound as it is (not idmapped) and commands use it as
            # the sandbox's user; the tools act as that user there too. They made root's files and
            # directories there, which commands could not change (red team round 20).
            acting = reader if reader is not None and reader != _NO_SESSION_UID else None
            mounts.append(
                Mount("/tmp", str(private_tmp), writable=True, owner=acting, idmapped=acting is not None)
            )
            private += _bwrap_private(list(backend.policy.allowed_roots()))
            foreign = _others_places(list(backend.policy.allowed_roots()))
        for denied in backend.policy.read_denied:
            inside = backend.to_sandbox_path(Path(denied))
            if inside is not None:
                masked.append(inside)
        # Write-denied paths: no tool writes another name of one (`View.unwritable_by`, round 38).
        unwritable += [
            str(p) for p in map(backend.to_sandbox_path, backend.policy.write_denied) if p is not None
        ]
    # The session's own directory: the tools see what commands see of it (`shellrt.runtime.read_only_binds`):
    # its result directories (full outputs the model is pointed at), read-only; nothing else of it
    # (transcript, audit log, state, quarantine, other calls' records) -- masked wherever it lies.
    session = confine.normalize(str(Path(ctx.session_dir).absolute()))
    forms = tuple(dict.fromkeys((session, os.path.realpath(session))))
    masked = [m for m in masked if not any(confine.is_within(m, form) for form in forms)]
    roots = [m.path for m in mounts if m.writable]
    # The runtime lists the session directory itself among the allowed roots (a Read of a result
    # it points at needs no question): that entry is the session, not a root inside it.
    allowed = [confine.normalize(str(Path(r).absolute())) for r in (ctx.allowed_roots or (ctx.workspace,))]
    workspace = confine.normalize(str(Path(ctx.workspace).absolute()))
    roots += [r for r in allowed if r not in forms or r == workspace]
    if any(confine.is_within(root, form) for root in roots for form in forms):
        # A session directory that is or holds a root (tests, odd set-ups) cannot be masked without
        # hiding the root: it is shown read-only, whole, as before round 10 (a mask above it, the
        # state directory's, does not hide it).
        mounts += _root_mounts(session, writable=False, caller_reads=True)
        return _SessionView(
            mounts,
            masked,
            reader=_reader(backend),
            private=private,
            session_forms=forms,
            shown=forms,
            foreign=foreign,
            unwritable=unwritable,
        )
    shown: list[str] = []
    for name in (*SESSION_RESULT_DIRS, HOST_RESULTS_DIR):
        place = _root_mounts(f"{session}/{name}", writable=False, caller_reads=True)
        mounts += place
        shown += [m.path for m in place]
    return _SessionView(
        mounts,
        [*masked, *forms],
        reader=_reader(backend),
        private=private,
        session_forms=forms,
        shown=tuple(shown),
        foreign=foreign,
        unwritable=unwritable,
    )


#: The session's subdirectories whose files a result points the model at (Bash spools, task
#: outputs, persisted large results): what commands see of the session too (`read_only_binds`).
#: The file tools also see `HOST_RESULTS_DIR` (results of tools whose data commands may not see).
SESSION_RESULT_DIRS = (RESULTS_DIR, "shell", "tasks")


@dataclass
class _SessionView(View):
    """The view, with the session directory masked for the tools except its result directories.

    The session directory holds the transcript, the audit log, the resume state and the quarantine:
    none of it is the model's to read back (a transcript holds what hooks and the person saw, the
    quarantine what was taken from the workspace). Its result directories are shown read-only, as
    commands see them (`shellrt.runtime.read_only_binds`)."""

    session_forms: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()
    #: Another shellrt process's places in a writable root, folded (`_others_places`): refused.
    foreign: tuple[str, ...] = ()

    def _refuse_private(self, path: str) -> None:
        """Also refuses another shellrt process's places in a root (bwrap masks them for commands),
        judged folded: on a folding filesystem ``.CACHE/Shellrt`` is that place."""
        super()._refuse_private(path)
        if not self.foreign:
            return
        folded = fold_path(path)
        for place in self.foreign:
            if confine.is_within(folded, place):
                raise ConfinementError(
                    errno.EACCES,
                    f"{path} is where another shellrt process keeps its own caches or budget lock "
                    f"({place}), which no tool or command of a session may change; work elsewhere "
                    "in the workspace",
                )

    def masked_by(self, path: str) -> str | None:
        if self.shown:  # one normalisation, then prefixes: Glob and Grep ask this of every hit
            text = confine.normalize(path)
            for form in self.session_forms:
                if text == form or text.startswith(form + "/"):
                    if any(text == place or text.startswith(place + "/") for place in self.shown):
                        return None
                    return form
        return super().masked_by(path)

    def alias_masks(self) -> tuple[str, ...]:
        """Not the session directory: shellrt writes it and no command sees it to link from it."""
        own = self.shellrt_masks()
        return tuple(m for m in self.masked if m not in own)

    def shellrt_masks(self) -> tuple[str, ...]:
        """The masks that are the session directory itself (no secret of the workspace)."""
        return tuple(m for m in self.masked if m in self.session_forms)


#: Characters that end or rewrite a line of output: C0/C1 controls (newline, escape, NEL), DEL,
#: Unicode line/paragraph separators and bidirectional overrides (the fast test of ASCII names).
_UNSAFE_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def shown_path(path: str) -> str:
    """``path`` as one line of tool output: as it is, or -- when it holds a character a reader
    cannot see (a control: a newline in a name forged further lines, a fake hit, a fake note of
    ours; round 25: a zero-width, bidirectional mark, tag character, a blank other than the space)
    or starts with a quote or starts or ends with a space -- as a JSON string with each such
    character escaped, which names the file exactly, visibly and on its line."""
    if not path.startswith(('"', " ")) and not path.endswith(" "):
        if path.isascii() and not _UNSAFE_IN_LINE.search(path):
            return path
        if not path.isascii() and not any(map(unseen, path)):
            return path
    quoted = json.dumps(path, ensure_ascii=False)
    return "".join(_escaped(c) if unseen(c) else c for c in quoted)


def visible(text: str) -> str:
    """``text`` (a message that may quote paths the disk chose) with each character a reader cannot
    see, line breaks included, as ``\\uXXXX``: one line, every character shown (round 25)."""
    if text.isascii() and not _UNSAFE_IN_LINE.search(text):
        return text
    return "".join(_escaped(c) if unseen(c) else c for c in text)


def _escaped(c: str) -> str:
    """``c`` as JSON's ``\\uXXXX`` (a surrogate pair above U+FFFF)."""
    code = ord(c)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _start_dir(ctx: ToolContext) -> str:
    if ctx.cwd:
        return ctx.cwd
    backend = _backend(ctx)
    return backend.workspace if backend is not None else str(ctx.workspace)


def sandbox_path(raw: str, ctx: ToolContext) -> str:
    """The path as the sandbox sees it: ``~`` expanded (host-like backends), relative to the cwd, normalised."""
    expanded = os.path.expanduser(raw) if _identity(_backend(ctx)) else raw
    if not expanded.startswith("/"):
        expanded = os.path.join(_start_dir(ctx), expanded)
    return confine.normalize(expanded)


def canonical_path(raw: str, ctx: ToolContext, view: View | None = None) -> str | None:
    """Canonical sandbox path of ``raw`` (symlinks resolved in the view), or None when it cannot be reached."""
    view = view or view_for(ctx)
    try:
        with view.resolve(sandbox_path(raw, ctx)) as r:
            return r.path
    except OSError:
        return None


def resolve_path(raw: str, ctx: ToolContext, view: View | None = None) -> str:
    """Canonical sandbox path of ``raw``; the lexical path when it cannot be reached."""
    found = canonical_path(raw, ctx, view)
    return found if found is not None else sandbox_path(raw, ctx)


def resolve_paths(raws: Iterable[str], ctx: ToolContext) -> list[str]:
    """`resolve_path` of each of ``raws``, distinct, first-seen order; one that cannot be resolved
    (a name the sandbox cannot encode, a mount gone) is left out.

    For a restored conversation's Reads (`Runtime.restore`): one view for the whole call and each
    distinct lexical path resolved once. One `view_for` per path (its cache's ~45 ``lstat``
    validity check) made 8,000 Reads of one history cost 5 s of CPU on the event loop (red team,
    round 28: hist)."""
    try:
        view = view_for(ctx)
    except (OSError, ValueError):
        return []
    done: dict[str, str | None] = {}
    for raw in raws:
        try:
            lexical = sandbox_path(raw, ctx)
        except (OSError, ValueError):
            continue
        if lexical in done:
            continue
        try:
            done[lexical] = resolve_path(lexical, ctx, view)
        except (OSError, ValueError):
            done[lexical] = None
    return list(dict.fromkeys(found for found in done.values() if found is not None))


def remember(tool_input: PathInput, raw: str, ctx: ToolContext, view: View) -> str:
    """Resolve ``raw`` once for governance (subject, own check, and the call's open); returns the
    path to show.

    A path that cannot be resolved now (a symlink loop, a component it may not search) is
    remembered as written: the check judges that path and the open accepts only that path (a
    symlink swapped in later leads elsewhere and is refused). Resolving it again at the check and
    not at all at the open let a command that swapped the link between the steps send a Read
    judged inside the workspace to a file outside it.
    """
    lexical = sandbox_path(raw, ctx)
    refused: str | None = None
    found: confine.Identity | None = None
    try:
        with view.resolve(lexical) as r:
            shown = r.path
            found = confine.identity(r)
    except ConfinementError as exc:
        shown, refused = lexical, exc.strerror or str(exc)
    except OSError:
        shown = lexical
    tool_input.remember_resolved(state_key(shown, ctx, view), shown, refused)
    tool_input.remember_identity(found)
    return shown


async def remember_file_path(tool_input: PathInput, file_path: str, ctx: ToolContext, view: View) -> str:
    """`remember` of a tool's ``file_path`` in a worker thread (`off_loop`: a hung mount on the way
    must not freeze the event loop); the path to show. Raises `ToolExecutionError`."""
    from shellrt.tools._offloop import off_loop

    return await off_loop(remember, tool_input, file_path, ctx, view, what=f"Resolving {file_path}")


def state_key(path: str, ctx: ToolContext, view: View | None = None) -> str:
    """The ``ctx.read_state`` key (and permission subject) of a canonical sandbox path: its logical host path."""
    return (view or view_for(ctx)).to_logical(path)


def display_path(host_path: str | Path, ctx: ToolContext) -> str:
    """A host path (a search hit under a mount's backing dir) as the sandbox sees it."""
    mapped = view_for(ctx).from_host(str(host_path))
    return mapped if mapped is not None else str(host_path)


def rule_path_resolver(ctx: ToolContext) -> Callable[[str], str]:
    """Map an absolute path as commands see it to the host path permission rules match.

    Host-like backends (local, bwrap): the host's own resolution (symlinks followed,
    so ``link/hostname`` with ``link -> /etc`` is judged as /etc/hostname). Docker:
    resolved in the sandbox's view and named by the logical host path of the mount
    it lies in (the container's workspace -> the host workspace it mirrors); a path
    outside every mount keeps its container name and so is outside every root.
    """
    if _identity(_backend(ctx)):
        return os.path.realpath
    view = view_for(ctx)

    def resolve(path: str) -> str:
        return view.to_logical(resolve_path(path, ctx, view))

    return resolve


def sandbox_roots(ctx: ToolContext) -> tuple[str, ...]:
    """The allowed roots as sandbox paths (what the Bash check and the cwd are judged against)."""
    backend = _backend(ctx)
    if backend is None:
        return tuple(str(r) for r in (ctx.allowed_roots or (ctx.workspace,)))
    roots = list(backend.writable_roots())
    for root in ctx.allowed_roots:
        inside = backend.to_sandbox_path(Path(root))
        if inside is not None:
            roots.append(inside)
    return tuple(dict.fromkeys(roots))


def ripgrep_mode(ctx: ToolContext, view: View) -> Literal["host", "sandbox", "python"]:
    """Where ripgrep (which walks by path) may search for this session.

    ``host``: on the host, entered through the anchored fd — only where the
    host view is the sandbox's view and nothing is masked (local): a directory
    swapped for a symlink mid-walk then reaches nothing a command could not
    read. ``sandbox``: inside bwrap, where it sees exactly what commands see
    (masks, the private /tmp). ``python``: the fd-anchored Python walker
    (docker: nothing is assumed about the image; local with masks).
    """
    backend = _backend(ctx)
    if isinstance(getattr(backend, "session_tmp", None), Path):
        return "sandbox"
    own = view.shellrt_masks() if isinstance(view, _SessionView) else ()
    if _identity(backend) and not [m for m in view.masked if m not in own]:
        # The session directory's mask alone keeps ripgrep on the host: its hits there are dropped
        # (`masked_by`), and a local command reads that directory anyway.
        return "host"
    return "python"


#: Run in front of ripgrep inside the sandbox: it starts only in the directory the tool opened
#: (``stat -L`` of its cwd: device and inode, as the host's ``fstat`` of the anchored fd gives).
#: A read-only host directory a bwrap session shows through its lock view (an overlay per
#: command, round 37) has the overlay's device and inode: there the real directory's change and
#: modification times (ns), mode and owner must match instead -- the kernel sets a ctime (a
#: rename of the directory changes it), so a directory swapped in cannot carry the checked one's.
_SAME_CWD = (
    '[ "$(stat -L -c %d:%i .)" = "$1" ] || { [ "$(stat -f -L -c %T .)" = overlayfs ] '
    '&& [ "$(stat -L -c %.9Z:%.9Y:%f:%u:%g .)" = "$2" ]; } || { echo "$3" >&2; exit 125; }; shift 3; '
    # ripgrep waiting to open a FIFO named like an ignore file (round 41, `_fifo_wait`): stopped
    # with SIGUSR2 (status 140), reported as 126 so the walker answers; the watcher holds no pipe.
    # ripgrep under `RG_DATA_BYTES` of data (round 42: ``.gitignore -> /dev/zero`` grew it without
    # bound; a lower bound already set stays); out of it (SIGABRT, 134) or killed by the session's
    # memory bound (137): 126, the walker answers.
    f"ulimit -d {RG_DATA_BYTES >> 10} 2>/dev/null; "
    '"$@" & p=$!; ( sleep 0.25; while [ -d /proc/$p/task ]; do for w in /proc/$p/task/*/wchan; do '
    'x=; read -r x < "$w"; case $x in wait_for_partner|fifo_open|pipe_read|anon_pipe_read) kill -USR2 $p; exit;; esac; '
    "done; sleep 0.25; done ) </dev/null >/dev/null 2>&1 & w=$!; wait $p; s=$?; kill $w 2>/dev/null; "
    "case $s in 134|137|140) exit 126;; esac; exit $s"
)
_CWD_CHANGED = "shellrt: the search directory changed since it was checked"


def _times(st: os.stat_result) -> str:
    """``stat -c %.9Z:%.9Y:%f:%u:%g`` of what ``st`` describes (`_SAME_CWD`'s overlay form)."""
    ctime, mtime = divmod(st.st_ctime_ns, 10**9), divmod(st.st_mtime_ns, 10**9)
    return f"{ctime[0]}.{ctime[1]:09d}:{mtime[0]}.{mtime[1]:09d}:{st.st_mode:x}:{st.st_uid}:{st.st_gid}"


def sandbox_runner(ctx: ToolContext, expect: os.stat_result | None = None) -> RgRunner:
    """Run a program (ripgrep) inside the session's sandbox and collect its output.

    ``expect``: the ``fstat`` of the directory the tool opened and judged: the program
    runs only when its cwd is that directory. The sandbox reaches the cwd by its path, which a
    command may have renamed or exchanged since (red team, round 11); a changed one is refused."""
    backend = _backend(ctx)
    assert backend is not None

    async def run(argv: list[str], cwd: str, sink: OutputSink | None) -> tuple[int, bytes, bytes]:
        if expect is not None:
            identity = f"{expect.st_dev}:{expect.st_ino}"
            argv = ["/bin/sh", "-c", _SAME_CWD, "sh", identity, _times(expect), _CWD_CHANGED, *argv]
        process = await backend.exec(ExecRequest(argv=tuple(argv), cwd=cwd, env={"PATH": "/usr/bin:/bin"}))
        try:
            out, err = await drain_output(process.stdout, process.stderr, sink, process.kill)
            status = await process.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await process.kill()
            raise
        finally:  # a read end is closed only by its owner: two descriptors a search otherwise (round 37)
            with anyio.CancelScope(shield=True):
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        await stream.aclose()
        if expect is not None and status.exit_code == 125 and _CWD_CHANGED.encode() in err:
            raise ToolExecutionError(
                f"{cwd} changed since it was checked (a command renamed or replaced it); try again."
            )
        return status.exit_code, out, err

    return run


def ripgrep_options(
    ctx: ToolContext, view: View, where: str, fd: int | None = None
) -> tuple[bool, tuple[RgRunner, str] | None]:
    """``(use ripgrep, runner)`` for a search of the sandbox directory ``where`` (see `ripgrep_mode`);
    ``fd``: that directory, opened and judged (inside the sandbox ripgrep runs only there)."""
    mode = ripgrep_mode(ctx, view)
    if mode == "sandbox":
        st = os.fstat(fd) if fd is not None else None
        return True, (sandbox_runner(ctx, st), where)
    return mode == "host", None


def search_top(view: View, where: str) -> str | None:
    """The highest host directory whose ignore files a walk of the sandbox directory ``where``
    reads: the host directory of the mount holding it where the sandbox sees it elsewhere (docker's
    ``/workspace``: its host parents are no directory the container sees; red team round 45);
    None where the sandbox sees the host's own directories at their own paths (local, bwrap)."""
    mount = view.mount_of(where)
    if mount is None or mount.host == mount.path:
        return None
    return mount.host


def mtime_order(view: View) -> Callable[[str], tuple[int, str]]:
    """Sort key for sandbox paths: newest modification time first, then by path."""

    def key(path: str) -> tuple[int, str]:
        try:
            return (-os.stat(view.to_host(path) or path, follow_symlinks=False).st_mtime_ns, path)
        except OSError:
            return (0, path)

    return key


def is_read_denied(path: str | Path, ctx: ToolContext, view: View | None = None) -> bool:
    """Whether a sandbox path lies under one of the sandbox policy's read-denied paths."""
    return (view or view_for(ctx)).masked_by(str(path)) is not None


def refusal(verb: str, raw: str, exc: OSError) -> ToolExecutionError:
    """A file operation refused or failed: the error names the path as the model gave it."""
    reason = visible(exc.strerror or str(exc)).rstrip(".")  # it may quote a path a symlink chose
    if isinstance(exc, FileNotFoundError):
        where = f" ({shown_path(os.fsdecode(exc.filename))})" if exc.filename else ""
        return ToolExecutionError(f"Cannot {verb} {raw}: no such file or directory{where}. Check the path.")
    return ToolExecutionError(f"Cannot {verb} {raw}: {reason}.{_next_step(exc, reason)}")


def _next_step(exc: OSError, reason: str) -> str:
    """The advice a refusal adds: "work inside the workspace" for a place the file tools may not
    reach, unless its reason names the way on (``use Bash``); nothing for the rest, whose reasons say
    their own next step (a file changed meanwhile: "Read it again, then make the change again"; a
    race: "try again"). Round 26: a stale write was told to work inside the workspace."""
    if not isinstance(exc, ConfinementError) or exc.errno not in (errno.EACCES, errno.EPERM):
        return ""
    return (
        ""
        if "use Bash" in reason
        else " Work inside the workspace (or use Bash for what the sandbox allows there)."
    )


def is_sensitive(path: Path) -> str | None:
    """Why writing ``path`` always needs a person's approval (a safety check), or None.

    Judged as spelt and as a case-folding filesystem reads it (``.Git/hooks/x`` is a git hook
    on macOS, Windows, vfat, a ``+F`` directory: red team round 27, `sandbox._namefold`)."""
    reason = _sensitive_name(path)
    if reason is not None:
        return reason
    folded = fold_path(str(path))
    if folded == str(path):
        return None
    from shellrt.permissions.rules import git_metadata_reason  # the engine's own check, folded

    as_git = "/".join("HEAD" if part == "head" else part for part in folded.split("/"))
    return _sensitive_name(Path(folded)) or git_metadata_reason(as_git)


def _sensitive_name(path: Path) -> str | None:
    """`is_sensitive` for the path as spelt."""
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    if fnmatch.fnmatchcase(name, ".env*"):
        return "an environment file (.env*) that may hold secrets"
    if name in _SHELL_RC or (name == "config.fish" and "fish" in parts):
        return "a shell start-up file (it runs in every future shell)"
    for i, part in enumerate(parts[:-1]):
        rest = parts[i + 1 :]
        if part in (".shellrt", ".claude"):
            return "an agent settings tree (.shellrt/, .claude/: hooks and permissions live there)"
        if part == ".ssh":
            return "SSH configuration or keys (.ssh/)"
        if part == ".git" and rest[:1] == ("hooks",):
            return "a git hook (.git/hooks runs code on git commands)"
        if part == ".git" and rest == ("config",):
            return "the git configuration (.git/config can run commands)"
    # Everything else the after-command check protects (hooks, .mcp.json, editor tasks, ...,
    # and a core.hooksPath directory such as .husky): a file tool must not plant what a command
    # may not.
    return protected_reason(path) or hooks_dir_reason(path) or cd_loaded_reason(path)


def file_permission(
    raw: str, ctx: ToolContext, *, write: bool, canonical: str | None = None, refused: str | None = None
) -> PermissionResult:
    """The file tools' own verdict for ``raw``.

    Unreachable in the sandbox's view, read-denied, or (writes) outside the
    sandbox's writable places -> deny: that is the sandbox's boundary, which
    no mode removes. Writes to sensitive paths -> ask with ``safety_check``;
    reads outside the allowed roots -> ask; reads inside -> allow; writes
    inside -> passthrough (the mode and rules decide). ``canonical`` and ``refused``: what
    `remember` found (judged as found, never resolved again).
    """
    view = view_for(ctx)
    lexical = sandbox_path(raw, ctx)
    if refused is not None:
        return PermissionResult.deny(f"{raw}: {visible(refused)}.")
    try:
        if canonical is not None:
            resolved = canonical  # the resolution the permission subject was made from
        else:
            with view.resolve(lexical) as r:
                resolved = r.path
    except ConfinementError as exc:
        return PermissionResult.deny(f"{raw}: {visible(exc.strerror or str(exc))}.")
    except OSError:
        resolved = lexical
    # The resolved path's words may be a symlink's target (the repository's): named visibly, on its
    # line (round 25: a target "x\n[shellrt] ..." forged a note in the denial).
    shown = shown_path(resolved)
    if view.mount_of(resolved) is None:
        return PermissionResult.deny(
            f"{raw}: {shown} is outside what the file tools can reach in this sandbox (they work in "
            f"{view.describe_places()}). Use Bash (e.g. `cat`) for other files the sandbox can see."
        )
    if view.masked_by(resolved) is not None:
        return PermissionResult.deny(
            f"{raw}: {shown} is in a read-denied location of the sandbox policy; it cannot be read or written. "
            "Work with other files."
        )
    if write:
        if not view.writable(resolved):
            places = ", ".join(view.writable_roots()) or "none"
            return PermissionResult.deny(
                f"{raw}: {shown} is outside the sandbox's writable places ({places}); file tools never "
                "write there, in any mode. Write inside the workspace."
            )
        reason = is_sensitive(Path(resolved)) or is_sensitive(Path(lexical))
        if not reason:
            # Where the host's own Python imports from (the tools write on the host, past the
            # sandbox's read-only binds of it; red team round 16): the tool's own check says so too.
            host = view.to_host(resolved) or resolved
            reason = host_code_reason(host, tuple(str(r) for r in (ctx.allowed_roots or (ctx.workspace,))))
        if reason:
            return PermissionResult.ask(f"Writing {shown} touches {reason}.", safety_check=True)
    roots = sandbox_roots(ctx)
    if write:
        if not confine.within_any(resolved, roots):
            # Writable in the sandbox (bwrap's private /tmp) but outside the allowed directories.
            return PermissionResult.ask(
                f"{raw}: {shown} is outside the allowed directories ({', '.join(roots)})."
            )
        return PermissionResult.passthrough("inside the allowed directories")
    if not confine.within_any(resolved, (*roots, str(ctx.session_dir))):
        return PermissionResult.ask(f"{shown} is outside the allowed directories ({', '.join(roots)}).")
    return PermissionResult.allow("inside the allowed directories")


def subject_for(tool_input: PathInput, raw: str, *, write: bool) -> PermissionSubject:
    """The permission subject of a single-path call.

    Uses the resolution recorded in ``validate``; an absolute path is resolved
    here; a relative path that was never resolved is marked incomplete (rules
    may then not allow it).
    """
    resolved = tool_input.resolved
    incomplete = False
    if resolved is None:
        expanded = os.path.expanduser(raw)
        if os.path.isabs(expanded):
            try:
                resolved = os.path.realpath(expanded)
            except (OSError, ValueError):  # changing under our feet (EINVAL mid-swap), or no file name
                resolved, incomplete = expanded, True
        else:
            resolved, incomplete = raw, True
    return PermissionSubject(paths=(resolved,), access="write" if write else "read", incomplete=incomplete)


def rule_denied(paths: list[str], ctx: ToolContext, tool_name: str) -> set[str]:
    """Result paths a read-deny rule covers (``Read(./secrets/**)``).

    The rules engine judges a Grep/Glob call by the directory searched; the
    files found below it are checked here, so a deny rule on ``secrets/``
    cannot be sidestepped by searching the workspace root.
    """
    rules = _deny_rules(ctx)
    if rules is None:
        return set()
    return {
        p for p in paths if rules.content_hit("deny", tool_name, PermissionSubject(paths=(p,), access="read"))
    }


def has_deny_rules(ctx: ToolContext) -> bool:
    """Whether `rule_denied` could hide any path of this session (it has deny rules at all)."""
    return _deny_rules(ctx) is not None


def _deny_rules(ctx: ToolContext) -> RuleSet | None:
    """The session's rules when it has deny rules, else None.

    No rules gate exists in a process that never loaded its module: then nothing is imported here
    (importing the rules engine and the analysis, ~1 s at load, held the event loop on a first
    Grep; red team round 48, round 15's hung-mount test)."""
    gates = sys.modules.get("shellrt.permissions.gate")
    if gates is None:
        return None
    PermissionGate, RulesGate = gates.PermissionGate, gates.RulesGate  # the classes
    if not ctx.has_service(PermissionGate):
        return None
    gate = ctx.service(PermissionGate)  # type: ignore[type-abstract]  # looked up by its interface
    if not isinstance(gate, RulesGate):
        return None
    rules = gate.engine.rules
    return rules if rules.of_kind("deny") else None


def in_sandbox_words(exc: ToolExecutionError, host: Path, where: str) -> ToolExecutionError:
    """``exc`` naming the sandbox directory ``where`` where it named the host directory ``host``
    that backs it: a search's refusals are worded by the walker and ripgrep, which run on the host
    path (docker's private copy, a bind mount's source: the host's layout; round 42)."""
    text, spelt = str(exc), str(host)
    if spelt == where or spelt not in text:
        return exc
    return ToolExecutionError(text.replace(spelt, where))
