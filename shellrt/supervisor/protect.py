"""Nothing left behind that a later, unsandboxed program runs or obeys.

A sandboxed command may write anywhere in the workspace. Some names there are
obeyed later *outside* the sandbox, as the operator: shellrt's and Claude
Code's settings (``.shellrt/``, ``.claude/``, ``.mcp.json``), git hooks and the
code-running keys of git config, shell start-up files, ``.envrc``, editor task
and settings files. Read-only mounts cannot cover them (a path that does not
exist yet cannot be masked without leaving a placeholder, and ``mv .git x;
mkdir -p .git/hooks`` walks around a read-only ``.git/hooks``), so the
supervisor checks the workspace after every command and reverts what a
command planted: the new file is moved into ``<session dir>/quarantine/``, the
previous content (snapshotted while it was accepted) is put back, and a note
goes to the model (appended to the result) and to ``<session dir>/audit.jsonl``.

Cheap on big trees: inotify (`_inotify`) names the directories that saw any
event since the last check, and only those are listed again; only protected
files that exist are ``lstat``-ed, and re-hashed when their signature changed.
When inotify is unavailable, overflows, hits the watch limit or reports a
directory deleted or moved, the check falls back to a full scan: every
directory is ``lstat``-ed, and only those whose mtime/ctime changed are listed
again (creating, removing or renaming an entry changes its parent's mtime).
Timestamps within `_RACY_NS` of a scan are re-checked by the next scan (coarse
kernel clocks: a write in the same tick as our read would leave them unchanged).

Ordinary git keeps working: a git config change is reverted only when its set
of code-running keys changes (``user.email``, ``remote.*.url``,
``branch.*.merge`` are benign), and only executable, non-``.sample`` hooks
count. Changes made between commands while nothing of the session runs are the
operator's (an editor, a remembered "allow always") and are accepted.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from sandbox._hostread import read_regular
from sandbox._namefold import fold_name, fold_path
from shellrt.supervisor._anchored import make_parent, move_out, open_parent, write_entry
from shellrt.supervisor._env_gitconfig import env_gitconfigs
from shellrt.supervisor._env_gitconfig import file_version as _version
from shellrt.supervisor._host_obeyed import (
    OBEYED_ANYWHERE,
    OBEYED_DIRS,
    OBEYED_SUFFIXES,
    obeyed_in,
    obeyed_reason,
)
from shellrt.supervisor._inflight import InflightRecord, orphaned_records
from shellrt.supervisor._inotify import WATCHES_ENV, Inotify, InotifyEvents
from shellrt.supervisor._protect_home import HomeNames, home_reason

__all__ = [
    "ROOT_SETTINGS_FILES",
    "SHELL_STARTUP_FILES",
    "CommandGuard",
    "WorkspaceGuard",
    "WriteDeny",
    "code_running_git_keys",
    "hooks_dir_reason",
    "protected_reason",
]

#: Shell and environment start-up files a shell or direnv runs from a directory.
SHELL_STARTUP_FILES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".mkshrc",
        ".cshrc",
        ".tcshrc",
        ".login",
        ".logout",
        ".inputrc",
        ".envrc",
        ".env.rc",
    }
)
#: Package managers' per-project config: obeyed by every later ``npm``/``yarn`` run there, and
#: able to name a program it runs (``script-shell``, ``node-options=--require``, ``git``,
#: ``yarnPath``, ``plugins``, ``yarn-path``); often git-ignored (it holds tokens): no diff shows it.
_TOOL_CONFIG = frozenset({".npmrc", ".yarnrc", ".yarnrc.yml"})
#: Files obeyed anywhere they appear (besides everything under .claude/ and .shellrt/).
_ANYWHERE = SHELL_STARTUP_FILES | _TOOL_CONFIG | {".mcp.json", ".devcontainer.json"}
#: The workspace's own settings (as `shellrt.permissions.trust` lists them): restored when deleted.
ROOT_SETTINGS_FILES = frozenset(
    {
        ".shellrt/settings.local.json",
        ".claude/settings.local.json",
        ".shellrt/settings.json",
        ".claude/settings.json",
        ".mcp.json",
    }
)
#: Settings trees: every file below them is protected.
_SETTINGS_DIRS = frozenset({".claude", ".shellrt"})
#: Editor, dev-container and build-tool files that run tasks or point at programs, by directory.
#: ``.idea/workspace.xml``: JetBrains start-up tasks run a configuration when the project opens,
#: and the file is git-ignored by default (round 16). ``.cargo/config.toml``: ``rustc-wrapper``,
#: a target's ``runner``, run by every ``cargo build``/``test``, usually untracked.
_EDITOR_FILES = {
    ".vscode": frozenset({"settings.json", "tasks.json", "launch.json", "extensions.json"}),
    ".devcontainer": frozenset({"devcontainer.json"}),
    ".idea": frozenset({"workspace.xml"}),
    ".cargo": frozenset({"config", "config.toml"}),
}
#: Directory names that, when they are symlinks, redirect what is obeyed.
_REDIRECTABLE = _SETTINGS_DIRS | frozenset(_EDITOR_FILES) | {".git"} | OBEYED_DIRS
#: `_ANYWHERE` and `OBEYED_ANYWHERE` as a folding filesystem compares names (`sandbox._namefold`):
#: ``.BashRC`` or ``.MCP.json`` there is the file a later program obeys (red team round 27).
_ANYWHERE_FOLDED = frozenset(fold_name(n) for n in _ANYWHERE | OBEYED_ANYWHERE)
_SUFFIXES_FOLDED = tuple(fold_name(s) for s in OBEYED_SUFFIXES)
_RACY_NS = 150_000_000
#: POSIX ACLs (access, and a directory's default for what is created in it).
_ACL_XATTRS = ("system.posix_acl_access", "system.posix_acl_default")
#: Not a mode bit: the entry carries an ACL (kept with the mode to compare scans).
_ACL = 1 << 24
#: Open to other local users: writable by everyone, or an ACL (which may name anyone).
_SHARED = stat.S_IWOTH | _ACL
_SNAPSHOT_LIMIT = 1 << 20
#: The most all snapshots of one guard hold (round 16: a repository's 300 files of 1 MB under
#: ``.claude/`` cost the host 288 MB of memory, and as much again in every in-flight record).
#: Past it a protected file keeps no snapshot: a change is still reverted, its content not put back.
_SNAPSHOT_TOTAL = 16 << 20
#: The most of a protected file the check reads; a larger file is not judged by its content.
_READ_LIMIT = 64 << 20
#: Scans faster than this run inline; slower trees are scanned in a worker thread.
INLINE_SCAN_S = 0.005
#: More directories with events than this, and the next scan runs in a worker thread too.
_INLINE_DIRS = 64
#: Notes of one scan shown in full; the rest are counted (all are in the audit log).
_MAX_NOTES = 20


class WriteDeny(Protocol):
    """The session's write-deny rules that name files (``Edit(**/*.pem)``), as the check asks them
    (built by the runtime: `shellrt.runtime.write_deny_globs`; the supervisor knows no rules)."""

    def version(self) -> object:
        """Compares unequal once the rules changed (mid-session): every directory is judged again."""
        ...

    def match(self, path: str, root: str) -> str | None:
        """The rule that keeps ``path`` (found below the guard's ``root``) from being written, the
        names judged as spelt and as a folding filesystem reads them (`sandbox._namefold`)."""
        ...

    #: Whether a command can change an existing match (no read-only bind: the local backend), so
    #: matches are snapshotted to be put back; else they are judged by their signature alone.
    keeps_content: bool


class _Dir:
    """A watched directory as last seen (a plain class: ``dataclasses`` costs ``shellrt run`` ~4 ms)."""

    __slots__ = ("children", "ctx", "gitdir", "mode", "racy", "sig", "watched")

    def __init__(
        self,
        sig: tuple[int, int, int, int],
        ctx: tuple[bool, bool],
        children: tuple[tuple[str, tuple[bool, bool]], ...],  # (path, context) of each subdirectory
        watched: tuple[tuple[str, str], ...],  # (path, kind) of each protected file
        racy: bool,
        gitdir: bool = False,
        mode: int = 0,
    ) -> None:
        self.sig, self.ctx, self.children, self.watched = sig, ctx, children, watched
        self.racy, self.gitdir, self.mode = racy, gitdir, mode


class _File:
    """A protected file as last seen."""

    __slots__ = ("active", "is_link", "kind", "mode", "racy", "sig", "snapshot")

    def __init__(
        self,
        kind: str,
        sig: tuple[int, int, int, int, int],
        active: object,  # None: inert; else what must not change (digest, code keys …)
        snapshot: bytes | None,  # previous content (or link target) to restore
        is_link: bool,
        mode: int,
        racy: bool,
    ) -> None:
        self.kind, self.sig, self.active, self.snapshot = kind, sig, active, snapshot
        self.is_link, self.mode, self.racy = is_link, mode, racy


class _Scan:
    """What one scan found and did."""

    __slots__ = ("culprit", "notes", "records")

    def __init__(self, culprit: str = "this command") -> None:
        #: Who made the changes, as the notes say it ("this command", "a background task", …).
        self.culprit = culprit
        self.notes: list[str] = []
        self.records: list[dict[str, object]] = []


class WorkspaceGuard:
    """Watches one workspace tree for planted start-up, settings, hook and git-config files."""

    def __init__(
        self,
        root: Path,
        session_dir: Path,
        *,
        use_inotify: bool = True,
        skip: Iterable[str] = (),
        extra_root: bool = False,
        settings_files: Iterable[str] = (),
        write_deny: WriteDeny | None = None,
    ) -> None:
        self.root = Path(root)
        #: Write-deny globs: a new file they name is reverted after the fact (kind ``denied``).
        self._deny = write_deny
        self._deny_version: object = write_deny.version() if write_deny is not None else None
        self._deny_content = bool(getattr(write_deny, "keeps_content", True))
        self._deny_rules: dict[str, str] = {}  # path -> the rule that names it (for notes)
        #: When the last scan started (ns): a ``denied`` file unchanged since is not new (see
        #: `_check_file`); 0 before any, so everything unknown then counts as new (fail closed).
        self._prev_scan_ns = 0
        #: The operator's ``--settings`` files in this tree (full paths as the walk spells them):
        #: protected like the workspace's own settings, restored when deleted. One that is a
        #: directory when listed protects every file below it (a hook script's directory).
        self._settings_files = frozenset(settings_files)
        #: The directories on their way below the root: a symlink put there redirects what a later
        #: session reads (``~/.config/shellrt -> x``, the trust store below it: round 17).
        self._settings_ways = _ways_below(self._settings_files, str(root))
        #: The operator's git configs ``$XDG_CONFIG_HOME``/``$GIT_CONFIG_GLOBAL`` name (round 18).
        self._env_gitconfigs = env_gitconfigs()
        #: Subtrees another guard of the session watches (a workspace inside an extra root).
        self._skip = frozenset(skip)
        #: Another writable root than the workspace: notes name its paths in full.
        self.extra_root = extra_root
        self.session_dir = Path(session_dir)
        self.quarantine_dir = self.session_dir / "quarantine"
        if extra_root:  # its own numbering: a subdirectory per root
            tag = hashlib.sha256(os.fsencode(str(root))).hexdigest()[:12]
            self.quarantine_dir = self.quarantine_dir / f"root-{tag}"
        self._root_text = str(self.root)
        self._scan_ns = 0
        #: Bytes of snapshots kept (an upper bound, recounted when it reaches `_SNAPSHOT_TOTAL`).
        self._snapshot_bytes = 0
        self._snapshot_recounted = -1  # the scan that last recounted (at most once a scan)
        self._dirs: dict[str, _Dir] = {}
        self._files: dict[str, _File] = {}
        #: Every protected path of the tree as of the last check (path -> kind), but ``denied``.
        self._watched: dict[str, str] = {}
        #: The files write-deny globs name (maybe thousands: ``Edit(**/*.py)``), apart: between
        #: full scans only those in directories with events, or still racy, are looked at.
        self._denied: dict[str, str] = {}
        self._denied_racy: set[str] = set()
        #: Paths no longer listed since the last scan began (an incremental scan's deletions).
        self._unlisted: set[str] = set()
        #: Accelerator: only directories with events are listed again (None: full scans).
        self._watch: Inotify | None = Inotify.open() if use_inotify else None
        #: Home directories inside the workspace: more names are obeyed there (`_protect_home`).
        self._home = HomeNames(self.root)
        self._stash: InotifyEvents | None = None  # events `may_be_slow` drained for the next scan
        self._thread_lock = threading.Lock()
        self._baselined = False
        #: Directories found writable for every user that were not so before (see `_narrow`).
        self._widened: list[str] = []
        self._unlocked: list[str] = []  # directories made listable again (`_list_unlocked`)
        #: Directories an earlier, killed session's baseline already knew as shared (`recover`).
        self._preshared: set[str] = set()
        self._force_full = False
        #: Directories inside the tree an accepted git config names as ``core.hooksPath`` (husky's
        #: ``.husky``): git runs their executables as it runs ``.git/hooks`` (red team round 16).
        self._hook_dirs: frozenset[str] = frozenset()
        #: Config files inside the tree an accepted git config includes (-> the work tree they
        #: configure): guarded as git config (red team round 16).
        self._included: dict[str, str] = {}
        #: Files inside the tree an accepted ``.envrc`` or mise config loads at ``cd`` (round 19).
        self._env_loads: frozenset[str] = frozenset()
        #: The same, folded (`sandbox._namefold`): compared with a listed path folded.
        self._env_folded: frozenset[str] = frozenset()
        self._cd_parsed: dict[str, tuple[object, frozenset[str]]] = {}  # config -> (its sig, loads)
        self._seq = 0
        #: Duration of the last scan (s): decides inline vs worker thread.
        self.last_scan_s = 0.0
        self.dirty = False

    # --- public -----------------------------------------------------------------------
    def may_be_slow(self) -> bool:
        """Whether the next scan may take long whatever the last one took: a directory appeared
        (below it, anything: 20,000 planted files took a 15 s scan, in the event loop when run
        inline) or a full scan is due. Drains inotify's queue into a stash the scan then uses."""
        with self._thread_lock:
            if self._watch is None or self._force_full or not self._baselined or self._rules_changed():
                return True
            events = self._watch.drain()
            stash = self._stash
            if stash is not None:
                stash.dirs |= events.dirs
                stash.new_dirs += events.new_dirs
                stash.full_scan |= events.full_scan
                events = stash
            self._stash = events
            return events.full_scan or bool(events.new_dirs) or len(events.dirs) > _INLINE_DIRS

    def _rules_changed(self) -> bool:
        return self._deny is not None and self._deny.version() != self._deny_version

    def unchanged(self) -> bool:
        """Whether inotify saw nothing in the tree since the last scan and nothing else asks for
        one (rules, a due full scan, a stash): then a scan that only accepts changes would find
        none it could see. One ``poll`` instead of a scan; events found go to the next scan's stash.

        What inotify does not report (a write through a shared mapping or a hard link from
        outside, the operator's own git config outside the tree) is then judged by the next
        reverting scan instead of being accepted: fail closed (round 36)."""
        with self._thread_lock:
            if (
                self._watch is None
                or self._force_full
                or not self._baselined
                or self._stash is not None
                or self._widened
                or self._unlocked
                or self._rules_changed()
            ):
                return False
            events = self._watch.drain()
            if events.full_scan or events.new_dirs or events.dirs:
                self._stash = events
                return False
            return True

    def scan(
        self, *, revert: bool, culprit: str = "this command", reread: bool = False, just_drained: bool = False
    ) -> list[str]:
        """Walk the tree; with ``revert`` undo planted changes and return notes, else accept all.
        ``reread``: judge every protected file by its content, whatever its signature says (a
        write through a shared mapping changes no timestamp once the page is dirty).
        ``just_drained``: `may_be_slow` drained inotify's queue in the caller's same step (nothing
        ran in between): its stash is what a drain now would find, so the queue is not polled again."""
        with self._thread_lock:
            t0 = time.perf_counter()
            result = _Scan(culprit)
            try:
                self._scan(
                    result, revert=revert and self._baselined, reread=reread, just_drained=just_drained
                )
            except Exception as exc:  # never break the command over the check; say it loudly instead
                self._dirs.clear()  # start over with a full scan next time
                result.notes.append(
                    f"[shellrt] the protected-files check of {self.root} failed ({exc}); files that a "
                    "later unsandboxed program obeys (.git/hooks, .git/config, .claude/, shell rc files) "
                    "may have been changed: review them before running git or a shell there."
                )
            self._baselined = True
            self._prev_scan_ns = self._scan_ns
            self.last_scan_s = time.perf_counter() - t0
            if len(result.notes) > _MAX_NOTES:  # one per file: 20,000 planted files, 20,000 notes
                more = len(result.notes) - _MAX_NOTES
                result.notes[_MAX_NOTES:] = [
                    f"[shellrt] ... and {more} more reverted or restored (each is in "
                    f"{self.session_dir / 'audit.jsonl'})."
                ]
            if result.records:
                self._audit(result.records)
            return result.notes

    def accept_file(self, path: Path) -> None:
        """``path`` was written by shellrt or the operator, not by a command: keep it as it is now."""
        with self._thread_lock:
            rel = os.path.relpath(os.path.realpath(path), os.path.realpath(self.root))
            if rel.startswith(".."):
                return
            key = f"{self.root}/{rel}"
            old = self._files.get(key)
            kind = old.kind if old is not None else "file"
            try:
                dir_fd, name = open_parent(self.root, key)
            except OSError:
                self._files.pop(key, None)
                return
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                is_link = stat.S_ISLNK(st.st_mode)
                content = _read(dir_fd, name, is_link, st)
            except OSError:
                self._files.pop(key, None)
                return
            finally:
                os.close(dir_fd)
            self._files[key] = _File(
                kind,
                (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode),
                _active(kind, key, content, is_link, st, self.root),
                self._snapshot_of(content),
                is_link,
                stat.S_IMODE(st.st_mode),
                False,
            )

    def _snapshot_of(self, content: bytes | None) -> bytes | None:
        """``content`` as a file's snapshot, or None: over `_SNAPSHOT_LIMIT`, or past `_SNAPSHOT_TOTAL`."""
        if content is None or len(content) > _SNAPSHOT_LIMIT:
            return None
        if self._snapshot_bytes + len(content) > _SNAPSHOT_TOTAL and self._snapshot_recounted != self._scan_ns:
            self._snapshot_recounted = self._scan_ns
            self._snapshot_bytes = sum(len(f.snapshot) for f in self._files.values() if f.snapshot is not None)
        if self._snapshot_bytes + len(content) > _SNAPSHOT_TOTAL:
            return None
        self._snapshot_bytes += len(content)
        return content

    def command_starts(self, record: InflightRecord) -> list[str]:
        """A command may write from now on: the baseline is marked dirty and written to ``record``
        (a shellrt killed meanwhile leaves it for the next session, which reverts what the command
        planted). The operator's note when the record cannot be written, else nothing."""
        self.dirty = True
        try:
            record.in_flight(self.baseline_key(), self.baseline)
        except OSError as exc:
            return [
                f"[shellrt] the protected-files baseline could not be recorded ({exc}); if shellrt is "
                "killed during this command, what it plants will not be reverted by the next session."
            ]
        return []

    def baseline_key(self) -> object:
        """Changes whenever the protected files of `baseline` do (cheap: signatures only; the
        shared directories, which rarely change, are written along whenever the files are)."""
        with self._thread_lock:
            return tuple((p, f.sig, f.mode, f.snapshot is None) for p, f in self._files.items())

    def baseline(self) -> dict[str, Any]:
        """The accepted state (protected files, shared directories) as JSON data, for the
        in-flight record (`_inflight`)."""
        with self._thread_lock:
            files = {
                path: {
                    "kind": f.kind,
                    "sig": list(f.sig),
                    "snapshot": base64.b64encode(f.snapshot).decode() if f.snapshot is not None else None,
                    "is_link": f.is_link,
                    "mode": f.mode,
                }
                for path, f in self._files.items()
            }
            shared = [path for path, d in self._dirs.items() if d.mode & _SHARED]
            return {"files": files, "shared_dirs": shared}

    def recover(self, baseline: dict[str, Any] | None, culprit: str) -> list[str]:
        """Check the tree against ``baseline`` (from the record of a killed session) and revert
        what differs; None (an unreadable record): against an empty one, so every active
        protected file is reverted."""
        with self._thread_lock:
            self._files.clear()
            self._dirs.clear()
            for path, raw in ((baseline or {}).get("files") or {}).items():
                try:
                    self._files[str(path)] = _file_of(str(path), raw, self.root)
                except (KeyError, TypeError, ValueError):
                    continue  # a damaged entry: compared as absent (its file, if active, is reverted)
            self._preshared = {str(p) for p in (baseline or {}).get("shared_dirs") or ()}
            self._baselined = True
            self._force_full = True
        return self.scan(revert=True, culprit=culprit)

    # --- the walk -------------------------------------------------------------------------
    def _scan(self, out: _Scan, *, revert: bool, reread: bool = False, just_drained: bool = False) -> None:
        now = self._scan_ns = time.time_ns()
        if self._rules_changed():
            # Other names count now: every directory is listed again (files that matched no rule
            # when they were last changed are kept, see `_check_file`).
            assert self._deny is not None
            self._deny_version = self._deny.version()
            for entry in self._dirs.values():
                entry.racy = True
            self._force_full = True
        # Drain first: events that arrive while we list stay queued for the next check.
        stash, self._stash = self._stash, None
        if just_drained and stash is not None and self._watch is not None:
            # `may_be_slow` drained the queue microseconds ago in the same step: an event queued
            # since is one that would arrive during the walk anyway (it waits for the next check).
            # After a command its tree is dead, so all it wrote was queued before that drain. One
            # `poll` fewer per check, two a command (round 35).
            events: InotifyEvents | None = stash
        else:
            events = self._watch.drain() if self._watch is not None else None
            if stash is not None and events is not None:  # what `may_be_slow` drained, then the rest
                events.dirs |= stash.dirs
                events.new_dirs[:0] = stash.new_dirs
                events.full_scan |= stash.full_scan
        full, self._force_full = self._force_full, False
        #: Directories inotify named (None: a full scan): a ``denied`` file elsewhere is unchanged.
        event_dirs: set[str] | None = None
        if (
            full
            or events is None
            or events.full_scan
            or not self._baselined
            or not self._incremental(events, now)
        ):
            self._full_scan(now)
        else:
            event_dirs = events.dirs
        widened, self._widened = [p for p in self._widened if p not in self._preshared], []
        self._preshared.clear()
        if revert:
            self._narrow(widened, out, "directories")
        unlocked, self._unlocked = self._unlocked, []
        if revert and unlocked:
            shown = ", ".join(self._shown(p) for p in unlocked[:5])
            out.notes.append(
                f"[shellrt] reverted: {out.culprit} made workspace directories unreadable ({shown}); "
                "their owner may read them again, so what they hold is checked like the rest."
            )
            out.records.append({"event": "protected_dir_unlocked", "paths": unlocked[:50]})
        if event_dirs is None:
            listed = self._watched.keys() | self._denied.keys()
            deleted = [(path, self._files.pop(path)) for path in set(self._files) - listed]
        else:  # incremental: only what the directories listed again dropped can be gone
            gone_paths = [p for p in self._unlisted if p not in self._watched and p not in self._denied]
            deleted = [(path, self._files.pop(path)) for path in gone_paths if path in self._files]
        self._unlisted.clear()
        checks = list(self._watched.items())
        if event_dirs is None or reread:
            checks += self._denied.items()
        else:
            # Write-deny globs may name thousands of files: each is looked at only when its
            # directory saw an event (a write or chmod of an entry is one) or it was racy.
            names = {p for d in event_dirs if (e := self._dirs.get(d)) for p, k in e.watched if k == "denied"}
            names |= self._denied_racy
            checks += [(p, "denied") for p in names if p in self._denied]
        for path, kind in checks:
            gone = self._check_file(path, kind, now, out, revert=revert, reread=reread)
            if gone is not None:
                deleted.append((path, gone))
            if kind == "denied":
                record = self._files.get(path)
                if record is not None and record.racy:
                    self._denied_racy.add(path)
                else:
                    self._denied_racy.discard(path)
        for _ in range(_MAX_INCLUDE_DEPTH + 1):
            hook_dirs, included = self._configured_hook_dirs()
            if hook_dirs == self._hook_dirs and included == self._included:
                break
            # An accepted config names other hook directories or includes other files (the first
            # scan, or the operator's change): list the tree again with them, and judge what is
            # in them now (an included file's own includes and hooksPath, the next time round).
            self._hook_dirs, self._included = hook_dirs, included
            for entry in self._dirs.values():  # every directory listed again: their context changed
                entry.racy = True
            self._full_scan(now)
            for path, kind in list(self._watched.items()):
                if kind in ("hook", "gitconfig") and path not in self._files:
                    self._check_file(path, kind, now, out, revert=revert, reread=reread)
        self._take_cd_loads(now, out)
        # Deleted (or no longer protected): nothing left to obey, except the deny rules of the
        # workspace's settings. Restored last, once a symlink put in place of their directory
        # (checked above) is quarantined.
        if revert:
            for path, gone in deleted:
                if not _exists_below(self.root, path):
                    self._restore_deleted_settings(path, gone, out)

    def _full_scan(self, now: int) -> None:
        """``lstat`` every directory; list again those whose mtime/ctime changed."""
        seen_dirs, watched = self._walk([(str(self.root), (False, self._root_text in self._hook_dirs))], now)
        for gone in set(self._dirs) - seen_dirs:
            del self._dirs[gone]
        self._watched, self._denied = {}, {}
        self._denied_racy.clear()
        self._take(watched.items())

    def _take(self, entries: Iterable[tuple[str, str]]) -> None:
        for path, kind in entries:
            if kind != "denied":
                self._watched[path] = kind
            elif path not in self._denied:  # listed anew (a new directory's too): look at it
                self._denied[path] = kind
                self._denied_racy.add(path)

    def _incremental(self, events: InotifyEvents, now: int) -> bool:
        """List again only the directories inotify named; False when a full scan is needed."""
        for path in events.dirs:
            entry = self._dirs.get(path)
            try:
                st = os.lstat(path)
            except OSError:
                return False
            if entry is None or not stat.S_ISDIR(st.st_mode):
                return False
            sig = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
            new = self._list_dir(path, sig, entry.ctx, False, st.st_mode)
            if new is None or new.gitdir != entry.gitdir or self._watch is None:
                return False
            children = {c for c, _ in new.children}
            if any(c not in children for c, _ in entry.children):
                return False  # a subdirectory went away: forget its subtree in a full scan
            for p, _ in entry.watched:
                self._watched.pop(p, None)
                self._denied.pop(p, None)
                self._unlisted.add(p)
            self._take(new.watched)
            self._dirs[path] = new
            fresh = [(c, ctx) for c, ctx in new.children if c not in self._dirs]
            if fresh:
                _, watched = self._walk(fresh, now)
                self._take(watched.items())
        return True

    def _walk(self, seeds: list[tuple[str, tuple[bool, bool]]], now: int) -> tuple[set[str], dict[str, str]]:
        seen_dirs: set[str] = set()
        watched_now: dict[str, str] = {}
        stack = list(seeds)
        dirs = self._dirs
        while stack:
            path, ctx = stack.pop()
            try:
                st = os.lstat(path)
            except OSError:  # gone (or a parent replaced by a file) since it was listed
                continue
            entry = dirs.get(path)
            if (
                entry is None
                or entry.racy
                or entry.sig != (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                or entry.ctx != ctx
            ):
                if not stat.S_ISDIR(st.st_mode):
                    continue
                sig = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
                racy = now - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS
                entry = self._list_dir(path, sig, ctx, racy, st.st_mode)
                if entry is None:
                    continue
                dirs[path] = entry
            seen_dirs.add(path)
            if entry.watched:
                watched_now.update(entry.watched)
            stack.extend(entry.children)
        return seen_dirs, watched_now

    def _stop_watching(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def close(self) -> None:
        """Release the inotify descriptor (the guard keeps working with full scans)."""
        with self._thread_lock:
            self._stop_watching()

    def _list_dir(
        self, path: str, sig: tuple[int, int, int, int], ctx: tuple[bool, bool], racy: bool, mode: int = 0
    ) -> _Dir | None:
        try:
            with os.scandir(path) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it]
        except (FileNotFoundError, NotADirectoryError):
            return None
        except PermissionError:
            entries = self._list_unlocked(path)
        in_settings, is_hooks = ctx
        # Names are compared as a folding filesystem compares them (`sandbox._namefold`; on macOS,
        # Windows, vfat or a ``+F`` directory ``.GIT/HOOKS/x`` is a git hook): fails closed where
        # names do not fold (red team round 27).
        name = fold_name(os.path.basename(path))
        folded = [fold_name(n) for n, _, _ in entries]
        names = set(folded)
        subdirs = [n for n, is_dir, _ in entries if is_dir]
        # As git decides (is_git_directory): HEAD, and objects (a directory or a symlink to one) or a
        # commondir; an objects symlink must not hide a git directory's config from this check.
        is_gitdir = name == ".git" or ("head" in names and ("objects" in names or "commondir" in names))
        editor = _EDITOR_FILES.get(name, frozenset())
        parent = fold_name(os.path.basename(os.path.dirname(path)))
        if parent == ".devcontainer":  # .devcontainer/<name>/
            editor = _EDITOR_FILES[".devcontainer"]
        home_rels = self._home.relatives(path) if self._home.active else ()
        in_template = self._home.in_template(path)  # a relative init.templateDir's (round 38)
        # The directory's names below the root, for the table of files other host programs obey.
        below = tuple(path[len(self._root_text) + 1 :].split("/")) if path != self._root_text else ()
        obeyed = obeyed_in(below)  # None: every file here (a Yarn release, a run configuration)
        # A directory an accepted .envrc/mise config puts first on PATH: a program's name there
        # shadows the host's (`_cd_loads`, round 19).
        # Compared folded too (round 27 fold2): on a folding filesystem a command's ``BIN/ls`` is in
        # the ``bin`` an .envrc puts on PATH, its ``.ENV.Local`` the file ``dotenv`` loads.
        on_path = False
        fpath = path
        if self._env_loads:
            cd = _cd_loads()
            fpath = fold_path(path)
            keys = (cd.path_key(path), cd.path_key(fpath))
            on_path = any(
                f"{key}/{m}" in loads
                for key, loads in zip(keys, (self._env_loads, self._env_folded), strict=True)
                for m in (cd.ON_PATH, cd.ON_PATH_DEPS)
            )
        watched: list[tuple[str, str]] = []
        for (n, is_dir, is_link), fn in zip(entries, folded, strict=True):
            if is_dir:
                continue
            kind = None
            if is_hooks:
                if not fn.endswith(".sample"):
                    kind = "hook"
            elif (
                (is_gitdir and fn in ("config", "config.worktree"))
                or _user_gitconfig(path, n, self._env_gitconfigs)
                or (fn != n and _user_gitconfig(path, fn, self._env_gitconfigs))
                or (self._included and f"{path}/{n}" in self._included)
            ):
                kind = "gitconfig"
            elif is_gitdir and fn == "commondir":
                kind = "commondir"
            elif fn == "exclude" and name == "info" and parent == ".git":
                kind = "exclude"  # hides files from `git status`: a planted one then shows in no diff
            elif fn == ".git":
                kind = "gitlink"
            elif (
                in_settings
                or n in _ANYWHERE
                or fn in _ANYWHERE_FOLDED
                or fn in editor
                or _redirects(n, is_link, is_gitdir)
                or _redirects(fn, is_link, is_gitdir)
                or any(self._home.protects(rel, n, is_link) for rel in home_rels)
                or (self._home.linked and self._home.linked_file(f"{path}/{n}"))
                or in_template
                or (bool(self._home.path_entries) and self._home.shadows(path, n))
                or (is_link and bool(self._home.linked) and self._home.linked_way(f"{path}/{n}"))
                or (is_link and bool(self._home.templates) and self._home.in_template(f"{path}/{n}"))
                or (self._settings_files and f"{path}/{n}" in self._settings_files)
                or (self._env_loads and f"{path}/{n}" in self._env_loads)
                or (self._env_loads and f"{fpath}/{fn}" in self._env_folded)
                or (on_path and _cd_loads().on_path_obeys(self._env_loads, f"{path}/{n}"))
                or (on_path and _cd_loads().on_path_obeys(self._env_folded, f"{fpath}/{fn}"))
                or (is_link and f"{path}/{n}" in self._settings_ways)
                or n in OBEYED_ANYWHERE
                or n.endswith(OBEYED_SUFFIXES)
                or fn.endswith(_SUFFIXES_FOLDED)
                or obeyed is None
                or fn in obeyed
            ):
                kind = "file"
            elif self._deny is not None:
                rule = self._deny.match(f"{path}/{n}", self._root_text)  # folds names itself
                if rule is not None:
                    kind = "denied"
                    self._deny_rules[f"{path}/{n}"] = rule
            if kind:
                watched.append((f"{path}/{n}", kind))
        children = tuple(
            (
                f"{path}/{sub}",
                (
                    # A given path that is a directory (a hook script's own, hashed whole with it:
                    # what the script loads beside it, round 18): every file below it, as settings.
                    in_settings
                    or fold_name(sub) in _SETTINGS_DIRS
                    or (bool(self._settings_files) and f"{path}/{sub}" in self._settings_files),
                    (is_gitdir and fold_name(sub) == "hooks") or f"{path}/{sub}" in self._hook_dirs,
                ),
            )
            for sub in subdirs
            if not self._skip or f"{path}/{sub}" not in self._skip
        )
        if self._watch is not None and not self._watch.add(path):
            # The uid's inotify limit, or our cap (round 16): full scans from now on.
            import logging  # rare: off `shellrt run`'s import path

            logging.getLogger("shellrt").warning(
                "protected-file guard: %s has more directories than inotify watches allowed (%s); "
                "checking it by full scans after each command",
                self.root,
                WATCHES_ENV,
            )
            self._stop_watching()
        prev = self._dirs.get(path)
        mode |= _acl_bit(path)
        if mode & _SHARED and (prev is None or not prev.mode & _SHARED):
            self._widened.append(path)
        return _Dir(sig, ctx, children, tuple(watched), racy, is_gitdir, mode)

    def _take_cd_loads(self, now: int, out: _Scan) -> None:
        """Protect what accepted ``.envrc``/mise configs load at ``cd`` (the first scan, or the
        operator's change): only the directories holding those files are listed again."""
        loads = self._loaded_at_cd()
        if loads == self._env_loads:
            return
        changed, self._env_loads = loads ^ self._env_loads, loads
        self._env_folded = frozenset(fold_path(p) for p in loads)
        dirs = {os.path.dirname(p) for p in changed}
        for directory in [d for d in dirs if "*" in d]:  # layout python's .direnv/python-*/bin
            import glob  # here: rarely needed, and `run` has an import budget

            dirs.update(glob.glob(glob.escape(directory).replace("[*]", "*")))
        for directory in dirs:
            entry = self._dirs.get(directory)
            if entry is not None:
                entry.racy = True
        self._full_scan(now)  # an lstat per directory; lists only those marked
        cd = _cd_loads()
        for path, kind in list(self._watched.items()):
            key = cd.path_key(os.path.dirname(path))
            on_path = (f"{key}/{m}" for m in (cd.ON_PATH, cd.ON_PATH_DEPS))
            in_changed = path in changed or any(p in changed for p in on_path)
            if in_changed and path not in self._files:
                # Named by a config accepted just now: what is there is the operator's.
                self._check_file(path, kind, now, out, revert=False)

    def _loaded_at_cd(self) -> frozenset[str]:
        """The files accepted ``.envrc`` and mise configs load at ``cd`` (`_cd_loads`)."""
        found: set[str] = set()
        parsed: dict[str, tuple[object, frozenset[str]]] = {}
        if not any(r.kind == "file" and not r.is_link for r in self._files.values()):
            self._cd_parsed = parsed  # no config to read: `_cd_loads` stays unimported (``run``)
            return frozenset()
        cd = _cd_loads()
        for path, record in self._files.items():
            if record.kind == "file" and not record.is_link and cd.loads_at_cd(path) is not None:
                known = self._cd_parsed.get(path)
                if known is None or known[0] != record.sig:  # parsed once per accepted version
                    content = record.snapshot if record.snapshot is not None else _read_regular(path)
                    text = content.decode("utf-8", "replace") if content else ""
                    known = (record.sig, cd.cd_loads(path, text))
                parsed[path] = known
                found |= known[1]
        self._cd_parsed = parsed
        return frozenset(found)

    def _configured_hook_dirs(self) -> tuple[frozenset[str], dict[str, str]]:
        """(The tree's directories that accepted git configs name as ``core.hooksPath``, the config
        files inside the tree those configs include -> the work tree they configure), as the walk
        spells them. A relative value is below the work tree (the ``.git``'s parent); the
        operator's own relative ``core.hooksPath`` (`operator_hooks_paths`) names one in every
        repository (red team round 16)."""
        found: set[str] = set()
        included: dict[str, str] = {}
        lazy: dict[str, Any] = {}  # the root's realpath, the operator's values: only once needed

        def inside(target: str) -> str | None:
            real_root = lazy.get("root") or lazy.setdefault("root", os.path.realpath(self._root_text))
            rel = os.path.relpath(target, real_root)
            if rel == ".":
                return self._root_text
            return None if rel.startswith("..") else f"{self._root_text}/{rel}"

        for path, record in self._files.items():
            if record.kind != "gitconfig" or (record.active is not None and not isinstance(record.active, frozenset)):
                continue
            # Where its hooks run: read only when a value needs it (a plain `git init` has none:
            # ~5 us a scan saved, round 36).
            base = self._included.get(path)
            values = [v for k, v in (record.active or ()) if k == "core.hookspath" and v.strip()]
            for key, value in record.active or ():
                if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
                    # An included file's keys are this repository's config (git resolves it from
                    # the including file's directory): one inside the tree is guarded as one; one
                    # outside (the operator's) is read for its core.hooksPath, with its includes.
                    real = os.path.realpath(os.path.join(os.path.dirname(path), os.path.expanduser(value.strip())))
                    target = inside(real)
                    if target is None:
                        values += _configured_hooks(real)[0]
                    elif target not in included:
                        if base is None:
                            base = _work_tree(os.path.dirname(path))
                        included[target] = base
            if path not in self._included:
                if "operator" not in lazy:
                    lazy["operator"] = operator_hooks_paths()
                # The session's user-config names, as the walk uses them: looked up afresh, two
                # `realpath`s of the home's links cost ~25 us a scan in a git repository (round 36).
                if lazy["operator"] and not _user_gitconfig(
                    os.path.dirname(path), os.path.basename(path), self._env_gitconfigs
                ):
                    values += lazy["operator"]  # the operator's own value applies in every repository
            # A repository's config applies in its linked worktrees too (round 17): each runs hooks
            # from its own top, so a relative value names a directory in each of them.
            if values and base is None:
                base = _work_tree(os.path.dirname(path))
            bases = [base, *_linked_work_trees(os.path.dirname(path))] if base is not None and values else []
            for value in values:
                for where in bases:
                    # Resolved on every scan (~50 us with one such key; nothing without): a symlink
                    # swapped in for the directory moves where git looks, and this check with it.
                    target = inside(os.path.realpath(os.path.join(where, os.path.expanduser(value.strip()))))
                    if target is not None:
                        found.add(target)
        return frozenset(found), included

    def _list_unlocked(self, path: str) -> list[tuple[str, bool, bool]]:
        """List a directory the host could not: a non-root caller's command (its own uid) made it
        searchable but not readable (``chmod 111 .git/hooks`` after planting a hook). git, a shell
        and shellrt still open its entries by name, so it must not count as empty: its owner, the
        host's uid, gets its read, write and search back (noted; write, so a planted entry can be
        moved out), then it is listed. Otherwise: empty."""
        try:
            if path == str(self.root):
                fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            else:
                dir_fd, name = open_parent(self.root, path)
                try:
                    fd = os.open(
                        name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd
                    )
                finally:
                    os.close(dir_fd)
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                return []
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
            self._unlocked.append(path)
            with os.scandir(f"/proc/self/fd/{fd}") as it:
                return [(e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it]
        except OSError:
            return []
        finally:
            os.close(fd)

    # --- one protected file ---------------------------------------------------------------
    def _check_file(
        self, path: str, kind: str, now: int, out: _Scan, *, revert: bool, reread: bool = False
    ) -> _File | None:
        """Check one protected file; returns its last record when it is gone (for `_scan` to restore).
        ``reread``: the same signature is not enough, the bytes must be those accepted."""
        if kind == "denied" and not self._deny_content:
            return self._check_denied(path, now, out, revert=revert)
        old = self._files.get(path)
        if old is not None and not old.racy and old.kind == kind:
            # Fast path, nothing acted on: the same inode with the same times and mode as accepted.
            try:
                st = os.lstat(path)
            except OSError:
                pass
            else:
                same = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode) == old.sig
                if same and (not reread or _same_bytes(path, old)):
                    return None
        try:
            dir_fd, name = open_parent(self.root, path)
        except FileNotFoundError:  # a parent is gone, or is a symlink now: nothing of the workspace there
            return self._files.pop(path, None)
        try:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return self._files.pop(path, None)
            sig = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)
            old = self._files.get(path)
            if old is not None and old.sig == sig and not old.racy and old.kind == kind and not reread:
                return None
            is_link = stat.S_ISLNK(st.st_mode)
            content = _read(dir_fd, name, is_link, st, _SNAPSHOT_LIMIT if kind == "denied" else _READ_LIMIT)
            active = _active(kind, path, content, is_link, st, self.root)
            racy = now - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS
            # Unchanged since before the last check (no one can set a ctime): it matched no rule
            # then (a rule added mid-session). Not written since, so nothing to revert: the
            # operator's, or allowed then. Accepted as it is (a later change is put back).
            earlier = kind == "denied" and old is None and st.st_ctime_ns < self._prev_scan_ns - _RACY_NS
            snapshot = self._snapshot_of(content)
            new = _File(kind, sig, active, snapshot, is_link, stat.S_IMODE(st.st_mode), racy)
            planted = (
                revert
                and not earlier
                and active is not None
                and (old is None or old.active != active or old.kind != kind)
            )
            if not planted:
                self._files[path] = new
                if not is_link:
                    new.mode |= _acl_bit(path)
                widened = new.mode & _SHARED and (old is None or not old.mode & _SHARED)
                if revert and widened and not is_link:
                    self._narrow([path], out, "files")
                return None
            self._revert(path, dir_fd, name, kind, old, out)
            return None
        finally:
            os.close(dir_fd)

    def _check_denied(self, path: str, now: int, out: _Scan, *, revert: bool) -> _File | None:
        """A file a write-deny glob names, by its signature alone: the backend binds the matches
        that existed read-only, so nothing is read (an ``Edit(**/*.py)`` may name 10,000 files);
        a new one, or one whose signature changed, is quarantined (nothing to put back)."""
        old = self._files.get(path)
        try:
            st = os.lstat(path)
        except OSError:
            return self._files.pop(path, None)
        sig = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)
        if old is not None and old.sig == sig and not old.racy:
            return None
        # New unless unchanged since before the last check (see `_check_file`).
        changed = st.st_ctime_ns >= self._prev_scan_ns - _RACY_NS if old is None else old.sig != sig
        if not (revert and changed):
            racy = now - max(st.st_mtime_ns, st.st_ctime_ns) < _RACY_NS
            is_link = stat.S_ISLNK(st.st_mode)
            self._files[path] = _File("denied", sig, ("sig", *sig), None, is_link, stat.S_IMODE(st.st_mode), racy)
            return None
        try:
            dir_fd, name = open_parent(self.root, path)
        except FileNotFoundError:
            return self._files.pop(path, None)
        try:
            self._revert(path, dir_fd, name, "denied", old, out)
        finally:
            os.close(dir_fd)
        return None

    def _narrow(self, paths: list[str], out: _Scan, what: str) -> None:
        """Take back the write permission for every user that a command gave workspace entries.

        Any local user could then plant what the operator's next git, shell or agent obeys
        (``chmod 777 .git/hooks``: a hook from an unprivileged user, run by root's git)."""
        done: list[str] = []
        for path in paths:
            try:
                if path == str(self.root):
                    fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                else:
                    dir_fd, name = open_parent(self.root, path)
                    try:
                        fd = os.open(
                            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
                        )
                    finally:
                        os.close(dir_fd)
            except OSError:
                continue  # gone, or a symlink now: nothing of the workspace to fix there
            try:
                st = os.fstat(fd)
                if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                    drop = stat.S_IWOTH
                    for acl in _ACL_XATTRS:  # an ACL entry can name any local user or group
                        try:
                            os.removexattr(fd, acl)
                            drop |= stat.S_IWGRP  # the group bits were the ACL's mask
                        except OSError:
                            pass
                    os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~drop)
                    done.append(self._shown(path))
                    entry = self._files.get(path)
                    if entry is not None:
                        entry.mode &= ~(drop | _ACL)
                        entry.racy = True
            except OSError:
                continue
            finally:
                os.close(fd)
        if not done:
            return
        shown = ", ".join(done[:5]) + (f" and {len(done) - 5} more" if len(done) > 5 else "")
        out.notes.append(
            f"[shellrt] reverted: {out.culprit} made workspace {what} writable for other users "
            f"({shown}: world-writable or an ACL); that access was removed: any local user could "
            "otherwise plant hooks, git config or settings that a later unsandboxed program runs."
        )
        out.records.append({"event": "protected_path_narrowed", "paths": done[:50], "what": what})

    def _shown(self, path: str) -> str:
        """``path`` as notes name it: relative to the workspace, in full in another root."""
        return path if self.extra_root else os.path.relpath(path, self.root)

    def _revert(self, path: str, dir_fd: int, name: str, kind: str, old: _File | None, out: _Scan) -> None:
        """Quarantine ``name`` in ``dir_fd`` (the anchored parent of ``path``) and put back ``old``."""
        rel = os.path.relpath(path, self.root)
        self._seq += 1
        target = self.quarantine_dir / str(self._seq) / rel
        if self.extra_root:
            rel = path  # another writable root: a relative path would read as the workspace's
        action = "created" if old is None else "changed"
        try:
            try:
                moved = move_out(dir_fd, name, target, base=self.session_dir)
            except PermissionError:
                # A non-root caller's command (its own uid) took the write bit off the parent
                # (``chmod 555 .git/hooks``): its owner, the host's uid, takes it back.
                if not _owner_may_write(dir_fd):
                    raise
                moved = move_out(dir_fd, name, target, base=self.session_dir)
        except OSError as exc:
            moved = f"could not be moved away ({exc}); removing it"
            try:
                os.unlink(name, dir_fd=dir_fd)
            except OSError as exc2:
                moved = f"could NOT be removed ({exc2}): delete it before running git or a shell here"
        restored = ""
        if old is not None and old.snapshot is not None:
            try:
                write_entry(dir_fd, name, old.snapshot, is_link=old.is_link, mode=old.mode)
                restored = "; the previous content was restored"
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                old.sig = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)
                old.racy = True
                self._files[path] = old
            except OSError as exc:
                restored = f"; the previous content could not be restored ({exc})"
                self._files.pop(path, None)
        else:
            self._files.pop(path, None)
        if kind == "denied":
            self._denied_note(path, rel, action, f"{moved}{restored}", target, out)
            return
        # The home rule's own reason where it has one (round 39 review12: a PATH directory's file
        # was reverted as "a settings, start-up or editor file", the cause not named).
        what = (home_reason(path) if kind == "file" else None) or _DESCRIBE.get(kind, kind)
        note = (
            f"[shellrt] reverted: {out.culprit} {action} {rel} ({what}, which git, a shell, an editor or "
            f"shellrt would later obey outside the sandbox); the new file was {moved}{restored}. "
            "Commands may not plant hooks, code-running git config, shell start-up files or "
            "agent/editor settings in the workspace; ask the user to make such a change."
        )
        out.notes.append(note)
        out.records.append(
            {
                "event": "protected_path_reverted",
                "path": rel,
                "kind": kind,
                "action": action,
                "quarantine": str(target),
            }
        )

    def _denied_note(self, path: str, rel: str, action: str, moved: str, target: Path, out: _Scan) -> None:
        """What a write-deny rule named and a command wrote anyway: undone *after* the command ran
        (no mount can wait for a name that does not exist yet), so said as such."""
        rule = self._deny_rules.get(path, "a write-deny rule")
        out.notes.append(
            f"[shellrt] reverted after the fact: {out.culprit} {action} {rel}, which the deny rule "
            f"{rule} keeps from being written; the file was {moved}. Commands may not write files a "
            "deny rule names (the sandbox can only undo it once the command has run); ask the user "
            "to make such a change."
        )
        out.records.append(
            {
                "event": "protected_path_reverted",
                "path": rel,
                "kind": "denied",
                "rule": rule,
                "action": action,
                "quarantine": str(target),
            }
        )

    def _restore_deleted_settings(self, path: str, old: _File, out: _Scan) -> None:
        """The workspace's own settings files carry deny rules: a command may not delete them."""
        rel = os.path.relpath(path, self.root)
        own = path in self._settings_files or (not self.extra_root and rel in ROOT_SETTINGS_FILES)
        if not own or old.snapshot is None or old.is_link:
            return
        rel = self._shown(path)
        try:
            dir_fd, name = make_parent(self.root, path)
            try:
                try:
                    write_entry(dir_fd, name, old.snapshot, is_link=False, mode=old.mode)
                except PermissionError:  # non-root: ``chmod 555 .claude`` after the delete
                    if not _owner_may_write(dir_fd):
                        raise
                    write_entry(dir_fd, name, old.snapshot, is_link=False, mode=old.mode)
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            out.notes.append(f"[shellrt] {out.culprit} deleted {rel}; it could not be restored ({exc}).")
            return
        old.sig = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_mode)
        old.racy = True
        self._files[path] = old
        self._watched[path] = old.kind
        out.notes.append(
            f"[shellrt] restored: {out.culprit} deleted {rel}, the workspace's own settings (its deny and "
            "ask rules still apply); ask the user to change it."
        )
        out.records.append(
            {"event": "protected_path_restored", "path": rel, "kind": old.kind, "action": "deleted"}
        )

    def _audit(self, records: Iterable[dict[str, object]]) -> None:
        """Append ``records`` to ``audit.jsonl``: never through a symlink, a FIFO or another special
        file (red team round 13: with the session directory redirected by a command, a planted
        ``audit.jsonl -> ~/.bashrc`` made the host append lines whose ``path`` the command chose,
        ``$(...)`` included, to any file the caller may write)."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        lines = "".join(json.dumps({"time": stamp, **record}) + "\n" for record in records)
        from shellrt.protocol.line_append import append_to_log  # rare: kept off the CLI's import path

        # A cut line is taken back (round 16); a full disk never fails a command.
        with contextlib.suppress(OSError):
            append_to_log(self.session_dir / "audit.jsonl", lines.encode("utf-8"))


_EARLIER = "a background task (or a command that ran alongside) since the last check"
_ALONGSIDE = "this command (or a background task or command running alongside it)"


class CommandGuard:
    """The supervisor's side: when to scan, and whether changes are the operator's or a command's.

    Before a command, when nothing of the session ran since the last check,
    changes are accepted (the operator's own edits between commands; none looked
    for when inotify reported none: the check after judges what it did not see);
    otherwise (a command or background task ran, or runs now) they are reverted.
    After every foreground command, and when the session closes, changes are reverted.
    """

    def __init__(self, guard: WorkspaceGuard) -> None:
        import anyio  # the session's side only: `shellrt run`'s lean path never imports it

        self.guard = guard
        self._lock = anyio.Lock()
        self._pending: list[str] = []
        #: The baseline on disk while a command may run (`_inflight`): a killed shellrt's plant
        #: is then reverted by the next session instead of becoming its baseline.
        self._record = InflightRecord(guard.root)
        self._recovered = False
        #: A background task ran since the content was last checked: it may have written a
        #: protected file through a shared mapping (``mmap``), which leaves its timestamps alone
        #: once the page is dirty, so the next checks read the content whatever the signature.
        self._mapped = False

    @classmethod
    def for_backend(cls, backend: Any, session_dir: Path) -> CommandGuard | None:
        """A guard over the host directory that is the backend's workspace (None when there is none)."""
        try:
            host = backend.to_host_path(backend.workspace)
        except Exception:  # a backend without a host view of its workspace: nothing to guard here
            return None
        if host is None or not Path(host).is_dir():
            return None
        return cls(WorkspaceGuard(Path(host), session_dir))

    async def before(self, busy: bool, *, background: bool = False) -> None:
        """Check before a command starts (``background``: a background task)."""
        if not self._recovered:
            await self._recover()
        revert, reread = self.guard.dirty or busy, self._mapped or busy
        # Nothing of the session ran since the last check and inotify saw nothing: the scan
        # could only accept what it cannot see, and the check after the command judges that
        # (reverting it) instead. ~45 us of a call with a git repository's hooks (round 36).
        if revert or reread or self._lock.locked() or not self.guard.unchanged():
            await self._scan(revert=revert, culprit=_EARLIER, reread=reread)
        self._mapped = busy or background
        self._pending += self.guard.command_starts(self._record)

    async def after(self, busy: bool) -> tuple[str, ...]:
        reread = self._mapped or busy
        self._mapped = busy
        await self._scan(revert=True, culprit=_ALONGSIDE if busy else "this command", reread=reread)
        if not busy:
            self.guard.dirty = False
            self._record.checked()
        notes, self._pending = tuple(self._pending), []
        return notes

    async def sweep(self, busy: bool) -> None:
        """Before a host program of shellrt's own (a hook): revert what a command or background
        task planted since the last check, as `before` would (notes go with the next result)."""
        if self.guard.dirty or busy:
            await self._scan(revert=True, culprit=_EARLIER)

    async def final(self) -> tuple[str, ...]:
        if self.guard.dirty or self._mapped:
            await self._scan(revert=True, culprit="a background task of this session", reread=True)
        self._record.clear()
        self.guard.close()
        notes, self._pending = tuple(self._pending), []
        return notes

    async def _recover(self) -> None:
        """Check against the oldest record of a dead owner (a shellrt killed before its check)."""
        import anyio.to_thread

        self._recovered = True
        records = await anyio.to_thread.run_sync(orphaned_records, self.guard.root)
        if not records:
            return
        path, baseline = records[0]
        culprit = f"a command of an earlier shellrt (pid {path.name.split('.')[1]}, killed before its check)"
        async with self._lock:
            notes = await anyio.to_thread.run_sync(lambda: self.guard.recover(baseline, culprit))
            self._pending.extend(notes)
        for stale, _ in records:
            try:
                os.unlink(stale)
            except OSError:
                pass

    async def _scan(self, *, revert: bool, culprit: str, reread: bool = False) -> None:
        if (
            not self._lock.locked()
            and self.guard.last_scan_s < INLINE_SCAN_S
            and not self.guard.may_be_slow()
        ):
            # Hot path: no scan in flight and this one runs inline, with no await from the check
            # to its end, so no other task can start one meanwhile: the lock would only cost
            # two trips through the event loop.
            self._pending.extend(
                self.guard.scan(revert=revert, culprit=culprit, reread=reread, just_drained=True)
            )
            return
        async with self._lock:
            if self.guard.last_scan_s < INLINE_SCAN_S and not self.guard.may_be_slow():
                notes = self.guard.scan(revert=revert, culprit=culprit, reread=reread, just_drained=True)
            else:
                import anyio.to_thread

                notes = await anyio.to_thread.run_sync(
                    lambda: self.guard.scan(revert=revert, culprit=culprit, reread=reread)
                )
            self._pending.extend(notes)


_DESCRIBE = {
    "hook": "an executable git hook",
    "gitconfig": "git config with a code-running key",
    "gitlink": "a .git link to another git directory",
    "commondir": "a git directory's commondir, which points git at another directory's config",
    "exclude": "git's .git/info/exclude, which hides files from git status and diff",
    "file": "a settings, start-up or editor file, or one a later program runs from the home directory",
}


def _ways_below(files: Iterable[str], root: str) -> frozenset[str]:
    """The directories strictly between ``root`` and each of ``files`` (as the walk spells them)."""
    prefix = root.rstrip("/") + "/"
    ways: set[str] = set()
    for path in files:
        parent = os.path.dirname(path)
        while parent.startswith(prefix):
            ways.add(parent)
            parent = os.path.dirname(parent)
    return frozenset(ways)


def _user_gitconfig(directory: str, name: str, named: frozenset[str] | None = None) -> bool:
    """A user-level git config (``~/.gitconfig``, ``~/.config/git/config``, or the file
    ``$XDG_CONFIG_HOME``/``$GIT_CONFIG_GLOBAL`` name: ``named``, else read now): with it in a
    writable root it is the operator's own, which every later git on the host obeys (round 18)."""
    if name == ".gitconfig" or (
        # ``.CONFIG/Git/config`` is git's on a folding filesystem (round 27 fold2; fails closed)
        name == "config" and (directory.endswith("/.config/git") or fold_path(directory).endswith("/.config/git"))
    ):
        return True
    named = env_gitconfigs() if named is None else named
    return bool(named) and f"{directory}/{name}" in named


def protected_reason(path: str | Path) -> str | None:
    """Why a later unsandboxed program would obey ``path`` (judged by its name alone), or None.

    For writers that are not commands (the file tools' safety check): the same
    names the after-command check protects, without looking at the disk (a
    bare repository is recognised here only by a ``.git`` component). Judged as
    spelt and as a folding filesystem reads it (`sandbox._namefold`, round 27).
    """
    reason = _protected_as_spelt(path)
    if reason is not None:
        return reason
    folded = fold_path(os.fspath(path))
    return None if folded == os.fspath(path) else _protected_as_spelt(folded)


def _protected_as_spelt(path: str | Path) -> str | None:
    """`protected_reason` for the path as spelt."""
    parts = Path(path).parts
    name = parts[-1] if parts else ""
    parents = parts[:-1]
    if name in SHELL_STARTUP_FILES:
        return "a shell or direnv start-up file"
    if name in (".mcp.json", ".devcontainer.json") or any(p in _SETTINGS_DIRS for p in parents):
        return "agent settings (.claude/, .shellrt/, .mcp.json)"
    if name in _TOOL_CONFIG:
        return "a package manager's config (it can name programs npm or yarn run)"
    if parents and name in _EDITOR_FILES.get(parents[-1], frozenset()):
        return "an editor, dev-container or build-tool file that runs tasks or programs"
    if name == "devcontainer.json" and parents[-2:-1] == (".devcontainer",):
        return "a dev-container file (its initializeCommand runs on the host)"
    if ".git" in parents:
        below = parts[parts.index(".git") + 1 :]
        if below[:1] == ("hooks",) and not name.endswith(".sample"):
            return "a git hook"
        if name in ("config", "config.worktree"):
            return "git configuration (it can name programs git runs)"
        if name == "commondir":
            return "a git directory's commondir (git reads its configuration from where it points)"
    if _user_gitconfig(os.path.dirname(os.fspath(path)), name):
        return "git configuration (it can name programs git runs)"
    obeyed = obeyed_reason(tuple(parents), name)
    if obeyed is not None:
        return obeyed
    if name == ".git":
        return "a .git link (it can point git at another repository)"
    return home_reason(path) if Path(path).is_absolute() else None


#: Most parent directories `hooks_dir_reason` walks up looking for a ``.git/config``.
_MAX_HOOKS_WALK = 64
#: config path -> (the versions of every file read, its core.hooksPath values, the files it includes,
#: whether those are all: `config_hooks_and_includes`).
_hooks_values: dict[str, tuple[tuple[object, ...], tuple[str, ...], tuple[str, ...], bool]] = {}
#: git's own limit on nested includes.
_MAX_INCLUDE_DEPTH = 10
#: Most files one config's includes may name (git has no such bound; a real config names a few).
_MAX_INCLUDES = 256
#: Most components of a ``core.hooksPath`` or include path a config may name: resolving one costs
#: a ``realpath`` per write judged, quadratic in its components (one of 512 KiB of ``/x``: 17-19 s
#: a Write, 40 s an include; round 37 review2). Past it (or `_MAX_INCLUDES` values) the walk is
#: incomplete: fail closed. A path of `_PATH_MAX` characters or more names no file: not followed.
_MAX_PATH_PARTS = 128
_PATH_MAX = 4096
#: Bytes of git config one walk parses, the included files' too (red team round 38: sixteen includes of
#: 4 MiB of escapes cost every write judgement ~15 s a version under `_READ_LIMIT`); past it the walk
#: is incomplete: fail closed. A real config with its includes is a few KiB.
_WALK_BYTES = 1 << 20


def hooks_dir_reason(path: str | Path) -> str | None:
    """Why ``path`` is a git hook by configuration, or a config file git includes (None if not).

    Its directory is the one an enclosing repository's config names as ``core.hooksPath``
    (husky's ``.husky``; round 16) -- in ``.git/config``, in a file it includes (``[include]``,
    ``[includeIf]``: every condition counts), or a relative value of the operator's global or
    system config (``core.hooksPath = .githooks`` names a directory of every repository) -- so git
    runs it as it runs ``.git/hooks``; or it is a file that config includes (its keys are git's
    config too: a ``core.fsmonitor`` there runs at the next ``git status``). Looks at the disk,
    unlike `protected_reason`: the name alone cannot tell. A ``.sample`` file is inert there too."""
    text = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(text))
    base = parent
    for _ in range(_MAX_HOOKS_WALK):
        if os.path.lexists(os.path.join(base, ".git")):
            values: tuple[str, ...] = ()
            included: tuple[str, ...] = ()
            for config in _configs_of(base):
                more, also, complete = _configured_hooks(config)
                if not complete:  # what it names past the bound is unknown: fail closed
                    return (
                        f"a file of a repository whose git config ({config}) includes more than {_MAX_INCLUDES} "
                        f"files (or more than {_WALK_BYTES >> 20} MiB of config in all, or config shellrt cannot "
                        f"parse), or names more than {_MAX_INCLUDES} hooks paths or one of more than "
                        f"{_MAX_PATH_PARTS} components: cannot tell what git runs from it; trim its include and "
                        "hooks paths"
                    )
                values += tuple(v for v in more if v not in values)
                included += also
            values += tuple(v for v in operator_hooks_paths() if v not in values)
            if values or included:  # resolved only here (a ~60 us realpath per write was the cost otherwise)
                # Compared folded too (`sandbox._namefold`, round 27 fold2): on a folding filesystem
                # ``.HUSKY/pre-commit`` is the hook git runs from ``core.hooksPath = .husky``.
                real = os.path.realpath(parent)
                reals = (real, fold_path(real))
                if not text.endswith(".sample"):
                    for value in values:
                        named = os.path.realpath(os.path.join(base, os.path.expanduser(value)))
                        if named == real or fold_path(named) in reals:
                            return f"a git hook (this repository's core.hooksPath is {value})"
                target = os.path.realpath(text)
                if target in included or fold_path(target) in {fold_path(i) for i in included}:
                    return "git configuration this repository's config includes (it can name programs git runs)"
            # Not the last repository to ask: git run in a work tree above never looks at a ``.git``
            # below its top, so a ``mkdir .husky/.git`` (or a nested repository) there hid the
            # enclosing one's ``core.hooksPath = .husky`` (red team round 56, hostrepo).
        up = os.path.dirname(base)
        if up == base:
            return None
        base = up
    return None


def _configured_hooks(config: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(``core.hooksPath`` values of a repository's git config file and every file it includes,
    the real paths of those included files, whether those are all of them); nothing when it
    cannot be read. Parsed once per version of all of them."""
    found = _hooks_values.get(config)
    if found is not None and found[0] == tuple(_version(f) for f in (config, *found[2])):
        return found[1], found[2], found[3]
    values, included, complete = config_hooks_and_includes(config)
    if len(_hooks_values) >= 256:
        _hooks_values.clear()
    _hooks_values[config] = (tuple(_version(f) for f in (config, *included)), values, included, complete)
    return values, included, complete


def config_hooks_and_includes(config: str) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """Follow ``include.path`` and ``includeIf.*.path`` from ``config`` as git does (relative to the
    including file, ``~`` expanded, at most ten deep; every condition taken as met: fail closed).
    Returns the ``core.hooksPath`` values found, the real paths of the included files (also
    those that do not exist yet: a command may create one), and whether the walk saw them all: it
    stops at `_MAX_INCLUDES` files named or `_READ_LIMIT` bytes read (red team round 36 review2:
    100 000 ``path =`` lines took minutes), and a caller must then fail closed."""
    values: list[str] = []
    included: dict[str, int] = {}  # real path -> the least depth it was named at
    todo = [(config, 0)]
    seen: set[str] = set()
    budget = _WALK_BYTES
    while todo:
        path, depth = todo.pop(0)  # breadth first: at the bound, the files named nearest the top are kept
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        content = _read_regular(path)
        if content is None:
            continue
        budget -= len(content)
        if budget < 0:
            return tuple(values), tuple(included), False
        for key, value in code_running_git_keys(content.decode("utf-8", "replace")):
            if key == "<unparseable>":  # git may read it (past our parser's bound): what it names is unknown
                return tuple(values), tuple(included), False
            if key == "core.hookspath" or key == "include.path" or key.startswith("includeif."):
                if len(value) >= _PATH_MAX:
                    continue  # names no file: git opens nothing there either
                if value.count("/") > _MAX_PATH_PARTS:
                    return tuple(values), tuple(included), False
            if key == "core.hookspath" and value.strip() and value.strip() not in values:
                if len(values) >= _MAX_INCLUDES:
                    return tuple(values), tuple(included), False
                values.append(value.strip())
            elif (key == "include.path" or (key.startswith("includeif.") and key.endswith(".path"))) and value:
                if len(included) >= _MAX_INCLUDES:
                    return tuple(values), tuple(included), False
                target = os.path.join(os.path.dirname(path), os.path.expanduser(value.strip()))
                target = os.path.realpath(target)
                if depth + 1 < included.get(target, _MAX_INCLUDE_DEPTH + 2):
                    included[target] = depth + 1
                    if depth < _MAX_INCLUDE_DEPTH:
                        todo.append((target, depth + 1))
    return tuple(values), tuple(included), True


def _configs_of(top: str) -> list[str]:
    """The config files git reads for the work tree ``top``: its ``.git`` directory's, or, when
    ``.git`` is a file (a submodule, a linked worktree), those of the git directory it names and
    of that directory's ``commondir`` (red team round 17: only ``top/.git/config`` was read)."""
    dot = os.path.join(top, ".git")
    gitdir = dot
    if not os.path.isdir(dot):
        content = _read_regular(dot)
        line = content.decode("utf-8", "replace").strip() if content else ""
        if not line.startswith("gitdir:"):
            return []
        gitdir = os.path.normpath(os.path.join(top, line[len("gitdir:") :].strip()))
    configs = [os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree")]
    common = _read_regular(os.path.join(gitdir, "commondir"))
    if common and common.strip():
        shared = os.path.normpath(os.path.join(gitdir, common.decode("utf-8", "replace").strip()))
        configs.append(os.path.join(shared, "config"))
    return configs


def _linked_work_trees(gitdir: str) -> list[str]:
    """The work trees of ``gitdir``'s linked worktrees (``worktrees/<name>/gitdir`` names
    ``<work tree>/.git``); a repository's config and its hooks path apply there too."""
    admin = os.path.join(gitdir, "worktrees")
    try:
        names = os.listdir(admin) if fold_name(os.path.basename(gitdir)) == ".git" or os.path.isdir(admin) else []
    except OSError:
        return []
    found = []
    for name in names[:_MAX_HOOKS_WALK]:
        content = _read_regular(os.path.join(admin, name, "gitdir"))
        line = content.decode("utf-8", "replace").strip() if content else ""
        if line:
            found.append(os.path.dirname(os.path.normpath(os.path.join(admin, name, line))))
    return found


def _work_tree(gitdir: str) -> str:
    """Where git runs the hooks of ``gitdir`` (a relative ``core.hooksPath`` is below it): the
    parent of a ``.git``; else the work tree a submodule's config names (``core.worktree``,
    relative to the git directory), or the one a linked worktree's ``gitdir`` file names (its
    ``<work tree>/.git``); else the git directory itself (bare). Red team round 17: only the first
    was known, so ``sub/.husky`` and ``wt/.husky`` were not hook directories. Read on every scan
    that has a hooks path (a command may change them: git follows, and so does this). A ``.GIT``
    is a ``.git`` to git on a folding filesystem (round 27 fold2)."""
    if fold_name(os.path.basename(gitdir)) == ".git":
        return os.path.dirname(gitdir)
    for name in ("config.worktree", "config"):
        content = _read_regular(os.path.join(gitdir, name))
        entries = _parse_git_config(content.decode("utf-8", "replace")) if content else None
        values = [v.strip() for sec, sub, key, v in entries or () if (sec, sub, key) == ("core", None, "worktree")]
        if values and values[-1]:
            return os.path.normpath(os.path.join(gitdir, os.path.expanduser(values[-1])))
    content = _read_regular(os.path.join(gitdir, "gitdir"))
    line = content.decode("utf-8", "replace").strip() if content else ""
    if line:
        return os.path.dirname(os.path.normpath(os.path.join(gitdir, line)))
    return gitdir


def _read_regular(path: str) -> bytes | None:
    """A regular file's first `_READ_LIMIT` bytes; None for anything else: a FIFO a command put at
    an included path must not hang the host. Read by the host's one non-blocking reader
    (`sandbox._hostread.read_regular`; this was a copy of it, round 49)."""
    content = read_regular(path, _READ_LIMIT)
    return None if content is None else content[:_READ_LIMIT]


#: (HOME, the config files' versions) -> the operator's core.hooksPath values (`operator_hooks_paths`).
_operator_hooks: dict[object, tuple[str, ...]] = {}
#: [quick key, when, values] of the last look (`operator_hooks_paths`).
_operator_recent: list[Any] = []


def operator_hooks_paths() -> tuple[str, ...]:
    """``core.hooksPath`` values of the operator's own git configuration (system, global, XDG, and
    ``GIT_CONFIG_*`` in the environment), as git resolves them with their includes. A relative
    value (``git config --global core.hooksPath .githooks``) names a directory of *every*
    repository: ``.githooks/pre-commit`` there runs at the next commit as ``.git/hooks`` would.

    Asked of git itself (``git config --show-scope``, run in ``/`` with no repository, so no
    repository's config or code is read), once per version of those files (~3 ms)."""
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    quick = (home, xdg, os.environ.get("GIT_CONFIG_GLOBAL"), os.environ.get("GIT_CONFIG_SYSTEM"))
    now = time.monotonic()
    if _operator_recent and _operator_recent[0] == quick and now - _operator_recent[1] < 1.0:
        recent: tuple[str, ...] = _operator_recent[2]
        return recent  # looked at within the last second (a stat of five files: ~50 us)
    files = (
        os.path.join(home, ".gitconfig"),
        os.path.join(xdg, "git", "config"),
        "/etc/gitconfig",
        os.environ.get("GIT_CONFIG_GLOBAL", ""),
        os.environ.get("GIT_CONFIG_SYSTEM", ""),
    )
    env_keys = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_CONFIG")))
    key = (home, xdg, env_keys, tuple(_version(f) for f in files if f))
    found = _operator_hooks.get(key)
    if found is not None:
        _operator_recent[:] = [quick, now, found]
        return found
    import subprocess  # rare: once per version of the operator's git config

    from sandbox._hostpath import host_env, host_which

    git = host_which("git")  # never a git a sandboxed command wrote (round 16)
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")}
    env["GIT_CEILING_DIRECTORIES"] = "/"
    try:
        if git is None:
            raise FileNotFoundError("git")
        done = subprocess.run(
            [git, "config", "--show-scope", "--includes", "--get-all", "core.hooksPath"],
            cwd="/",
            env=host_env(env),
            capture_output=True,
            timeout=10,
            check=False,
        )
        lines = done.stdout.decode("utf-8", "replace").splitlines()
    except (OSError, subprocess.SubprocessError):
        lines = []
    values: list[str] = []
    for line in lines:
        scope, _, value = line.partition("\t")
        if scope not in ("local", "worktree") and value.strip() and value.strip() not in values:
            values.append(value.strip())
    if len(_operator_hooks) >= 16:
        _operator_hooks.clear()
    _operator_hooks[key] = tuple(values)
    _operator_recent[:] = [quick, now, tuple(values)]
    return tuple(values)


def _file_of(path: str, raw: dict[str, Any], root: Path) -> _File:
    """A `_File` from its `WorkspaceGuard.baseline` form (what it obeys recomputed from the snapshot)."""
    sig = tuple(int(x) for x in raw["sig"])
    if len(sig) != 5:
        raise ValueError("a signature has five fields")
    snapshot = base64.b64decode(raw["snapshot"]) if raw["snapshot"] is not None else None
    kind, is_link = str(raw["kind"]), bool(raw["is_link"])
    st = os.stat_result((sig[4], 0, 0, 0, 0, 0, 0, 0, 0, 0))
    # Without a snapshot (over the size limit) nothing is known of the content: never equal.
    active = _active(kind, path, snapshot, is_link, st, root) if snapshot is not None else ("unknown",)
    return _File(
        kind, (sig[0], sig[1], sig[2], sig[3], sig[4]), active, snapshot, is_link, int(raw["mode"]), False
    )


def _redirects(name: str, is_link: bool, is_gitdir: bool) -> bool:
    """A symlink in place of a settings dir, ``.git``, or a git dir's ``hooks`` redirects what is obeyed."""
    return is_link and (name in _REDIRECTABLE or (is_gitdir and name == "hooks"))


def _acl_bit(path: str) -> int:
    """`_ACL` when ``path`` (not followed) carries a POSIX ACL, else 0."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return 0
    return _ACL if any(n in _ACL_XATTRS for n in names) else 0


def _exists_below(root: Path, path: str) -> bool:
    """Whether ``path`` names an entry of the workspace (reached without following a symlink)."""
    try:
        dir_fd, name = open_parent(root, path)
    except FileNotFoundError:
        return False
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(dir_fd)


def _owner_may_write(dir_fd: int) -> bool:
    """Give the directory at ``dir_fd`` its owner's read, write and search bits when the owner is
    this process's uid; whether it did."""
    try:
        st = os.fstat(dir_fd)
        if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & stat.S_IRWXU == stat.S_IRWXU:
            return False
        os.chmod(f"/proc/self/fd/{dir_fd}", stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
        return True
    except OSError:
        return False


def _same_bytes(path: str, old: _File) -> bool:
    """Whether the regular file at ``path`` holds exactly the accepted snapshot (cheap: no walk, no
    parse); False whenever that cannot be told (a link, no snapshot, a failed open): check it whole."""
    if old.is_link or old.snapshot is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, len(old.snapshot) + 1) == old.snapshot
    except OSError:
        return False
    finally:
        os.close(fd)


def _read(
    dir_fd: int, name: str, is_link: bool, st: os.stat_result, limit: int = _READ_LIMIT
) -> bytes | None:
    if is_link:
        try:
            return os.fsencode(os.readlink(name, dir_fd=dir_fd))
        except OSError:
            return None
    if not stat.S_ISREG(st.st_mode):
        return b"<special file>"
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


def _active(
    kind: str, path: str, content: bytes | None, is_link: bool, st: os.stat_result, root: Path
) -> object:
    """What of this file a later program obeys (None: nothing, it is inert)."""
    if content is None or len(content) > (_SNAPSHOT_LIMIT if kind == "denied" else _READ_LIMIT):
        # Not read whole: a command's write lease makes the non-blocking open fail, a permission
        # or a size stops it. A later program reads it whole, so it counts as obeyed and as
        # changed whenever its signature is (fail closed; judged empty, a planted
        # core.fsmonitor held under a lease was accepted and never read again).
        if kind == "hook" and not is_link and not st.st_mode & 0o111:
            return None
        return ("unread", st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = hashlib.sha256(content).hexdigest()
    if is_link:
        return ("symlink", digest)
    if kind == "hook":
        return digest if st.st_mode & 0o111 else None
    if kind == "gitconfig":
        text = content.decode("utf-8", "replace")
        keys = code_running_git_keys(text) | _worktree_outside(path, text, root)
        return None if keys == frozenset() else keys
    if kind == "gitlink":
        return None if _benign_gitlink(path, content, root) else digest
    if kind == "commondir":
        return None if _benign_commondir(path, content, root) else digest
    if kind == "exclude":  # git init's template holds comments only: inert
        rules = [line.strip() for line in content.splitlines() if line.strip() and not line.lstrip().startswith(b"#")]
        return hashlib.sha256(b"\n".join(rules)).hexdigest() if rules else None
    return digest


def _worktree_outside(path: str, text: str, root: Path) -> frozenset[tuple[str, str]]:
    """``core.worktree`` values of the config ``path`` that leave the tree (relative to the git
    directory, as git reads them). Why (red team round 17): a command set it to a host directory
    the sandbox cannot write (``~``); the operator's next ``git status`` shows the tracked files as
    deleted, and ``git checkout -- .`` or ``git reset --hard`` writes them there (a committed
    ``.bashrc``). Inside the tree it is benign: ``git submodule`` writes ``../../../sub``."""
    entries = _parse_git_config(text) or ()
    values = [v.strip() for sec, sub, key, v in entries if (sec, sub, key) == ("core", None, "worktree")]
    if not values:
        return frozenset()
    real_root = os.path.realpath(root)
    found = set()
    for value in values:
        target = os.path.realpath(os.path.join(os.path.dirname(path), os.path.expanduser(value)))
        if target != real_root and not target.startswith(real_root + os.sep):
            found.add(("core.worktree", value))
    return frozenset(found)


def _benign_gitlink(path: str, content: bytes, root: Path) -> bool:
    """``gitdir: <rel>`` pointing into a ``.git`` directory inside the workspace (submodules, worktrees)."""
    text = content.decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:") or "\n" in text:
        return False
    target = text[len("gitdir:") :].strip()
    resolved = os.path.realpath(os.path.join(os.path.dirname(path), target))
    real_root = os.path.realpath(root)
    return resolved.startswith(real_root + os.sep) and f"{os.sep}.git{os.sep}" in resolved[len(real_root) :]


def _benign_commondir(path: str, content: bytes, root: Path) -> bool:
    """A git directory's ``commondir`` (git reads config, refs and objects from where it points)
    is benign when it names a ``.git`` directory inside the workspace (``git worktree add``
    writes ``../..``: the main ``.git``), whose config this check always watches. Any other
    directory could stop looking like a git directory (no ``HEAD``) and its config would no
    longer be watched, while git keeps reading it."""
    target = content.decode("utf-8", "replace").strip()
    if not target or "\n" in target:
        return False
    resolved = os.path.realpath(os.path.join(os.path.dirname(path), target))
    real_root = os.path.realpath(root)
    return (
        resolved.startswith(real_root + os.sep)
        and os.path.basename(resolved) == ".git"
        and os.path.isdir(resolved)
    )


# --- git config -------------------------------------------------------------------------

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\](.*)$')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")
_BOOL = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})
_CODE_SIMPLE = frozenset(
    {
        "core.hookspath",
        "core.fsmonitor",
        "core.pager",
        "core.sshcommand",
        "core.editor",
        "core.askpass",
        "core.alternaterefscommand",
        "core.gitproxy",
        "sequence.editor",
        "diff.external",
        "gpg.program",
        "credential.helper",
        "init.templatedir",
        "interactive.difffilter",
        "web.browser",
        "include.path",
        "uploadpack.packobjectshook",
        "protocol.allow",
        "sendemail.sendmailcmd",
        "sendemail.smtpserver",
        "sendemail.tocmd",
        "sendemail.cccmd",
        "ssh.variant",
        # Not code, but they hide files from `git status` (round 16): a planted conftest.py, .npmrc
        # or .pth would then show in no review.
        "status.showuntrackedfiles",
        "core.excludesfile",
    }
)
#: (section, name) of ``section.<sub>.name`` keys that name programs.
_CODE_SUBSECTION = frozenset(
    {
        ("diff", "command"),
        ("diff", "textconv"),
        ("merge", "driver"),
        ("gpg", "program"),
        ("credential", "helper"),
        ("remote", "uploadpack"),
        ("remote", "receivepack"),
        ("remote", "vcs"),
        ("remote", "proxy"),
        ("difftool", "cmd"),
        ("difftool", "path"),
        ("mergetool", "cmd"),
        ("mergetool", "path"),
        ("browser", "cmd"),
        ("browser", "path"),
        ("man", "cmd"),
        ("man", "path"),
        ("tar", "command"),
        ("trailer", "command"),
        ("trailer", "cmd"),
        ("includeif", "path"),
        ("protocol", "allow"),
        ("http", "proxy"),
    }
)


def code_running_git_keys(text: str) -> frozenset[tuple[str, str]]:
    """The ``(key, value)`` pairs of a git config file that make git run a program.

    An empty set for a config with none (``git init``, ``git clone``, ``user.*``,
    ``remote.*.url``, ``branch.*``). A file that cannot be parsed gives the pair
    ``("<unparseable>", digest)``: git would refuse it too, and any change to it
    counts as code-running.
    """
    entries = _parse_git_config(text)
    if entries is None:
        return frozenset({("<unparseable>", hashlib.sha256(text.encode()).hexdigest())})
    found = set()
    for section, sub, name, value in entries:
        key = f"{section}.{sub}.{name}" if sub is not None else f"{section}.{name}"
        if _is_code_key(section, sub, name, value):
            found.add((key, value))
    return frozenset(found)


def _is_code_key(section: str, sub: str | None, name: str, value: str) -> bool:
    if section in ("filter", "hook"):
        return True
    if section == "alias" or (section == "submodule" and name == "update"):
        return value.lstrip().startswith("!")
    if sub is None:
        if f"{section}.{name}" in _CODE_SIMPLE:
            return True
        if section == "pager":
            return value.strip().lower() not in _BOOL
        return False
    return (section, name) in _CODE_SUBSECTION


#: Longest git config text parsed (~2 s of parsing); a longer one is unparseable: every caller then
#: fails closed (round 36 review2: 64 MB, the read bound, took 33 s a parse).
_MAX_GIT_CONFIG = 4 << 20


def _parse_git_config(text: str) -> list[tuple[str, str | None, str, str]] | None:
    if len(text) > _MAX_GIT_CONFIG:
        return None
    out: list[tuple[str, str | None, str, str]] = []
    section: str | None = None
    sub: str | None = None
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        # Continued lines are joined once (round 36 review2: joining each onto the whole so far was
        # quadratic: 880 KB of them took 5 s, 64 MB hours).
        parts: list[str] = []
        while (tail := line.rstrip()).endswith("\\") and not tail.endswith("\\\\") and i < len(lines):
            parts.append(tail[:-1])
            line = lines[i]
            i += 1
        if parts:
            line = "".join(parts) + line
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            m = _SECTION.match(stripped)
            if m is None:
                return None
            name, quoted, rest = m.group(1), m.group(2), m.group(3).strip()
            if quoted is not None:
                section, sub = name.lower(), re.sub(r"\\(.)", r"\1", quoted)
            elif "." in name:
                head, _, tail = name.partition(".")
                section, sub = head.lower(), tail.lower()
            else:
                section, sub = name.lower(), None
            if not rest or rest[0] in "#;":
                continue
            stripped = rest
        m = _KEY.match(stripped)
        if m is None or section is None:
            return None
        value = _config_value(m.group(2)) if m.group(2) is not None else ""
        out.append((section, sub, m.group(1).lower(), value))
    return out


#: A git config value's pieces: an escape, a quote, a comment start, or a run of anything else.
_VALUE_PIECE = re.compile(r'\\(.)|(")|([#;])|([^\\"#;]+|\\$)', re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b"}


def _config_value(raw: str) -> str:
    """A value as git reads it: escapes, quotes, a comment outside quotes ends it. By runs of plain
    text, not character by character (round 38: 4 MiB of value took ~1 s; a run is one step)."""
    if not any(c in raw for c in '\\"#;'):
        return raw.strip()
    out = []
    quoted = False
    for m in _VALUE_PIECE.finditer(raw):
        escaped, quote, comment, plain = m.groups()
        if escaped is not None:
            out.append(_ESCAPES.get(escaped, escaped))
        elif quote is not None:
            quoted = not quoted
        elif comment is not None:
            if not quoted:
                break
            out.append(comment)
        else:
            out.append(plain)
    return "".join(out).strip()


def _cd_loads() -> ModuleType:
    """`_cd_loads`, imported at a session's first scan: ``shellrt run`` imports this module and
    never scans (its import budget)."""
    from shellrt.supervisor import _cd_loads as module

    return module
