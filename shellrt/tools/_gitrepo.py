"""What a repository's own git configuration would make a git command run.

Why this exists: fixed environment overrides (``shellrt.analysis.git_env``)
cannot name keys with free names — ``diff.<driver>.textconv``,
``filter.<driver>.clean``, ``remote.<name>.uploadpack``, ``gpg.<format>.program``
— and git 2.39 cannot be told "no external diff" through configuration at all.
So before a git command is judged read-only, the Bash tool reads the effective
configuration of the repository it runs in (``git config --list
--show-origin``, run with the same hardened environment the command gets, which
follows includes the way the command would) and the repository's attributes
files, and reports every code-running key that does not come from the
operator's own global configuration. Any such key makes the command not
read-only (it asks). Anything that cannot be read fails closed.

Reading the configuration runs no repository-controlled program: ``git config``
reads files only, and the hardening environment disables fsmonitor, pagers and
hooks.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox._hostread import read_regular_bytes
from shellrt.analysis.git_env import GIT_CONFIG_OVERRIDES, git_hardening_env
from shellrt.tools._gitfiles import unsafe_git_files
from shellrt.tools._hostchild import calm_argv

__all__ = ["CODE_RUNNING_KEYS", "active_hooks", "changed_paths", "repo_code_keys"]

#: Regexes over lower-cased ``section[.subsection].name`` keys whose value is a program
#: (or selects one) that git runs, a file git writes, a file outside the repository git reads
#: (and may print), or another work tree. The subsection (driver, remote, url) has a free name.
#: Audited against ``git help config`` of git 2.39 and 2.47.
CODE_RUNNING_KEYS: tuple[str, ...] = (
    r"diff\.external",
    r"diff\..+\.(textconv|command)",
    r"filter\..+\.(clean|smudge|process)",
    r"merge\..+\.driver",
    r"core\.(fsmonitor|pager|sshcommand|gitproxy|askpass|editor|hookspath|alternaterefscommand)",
    r"gpg(\..+)?\.program",
    r"remote\..+\.(uploadpack|receivepack|vcs)",
    r"credential(\..+)?\.helper",
    r"pager\..+",
    r"interactive\.difffilter",
    r"sequence\.editor",
    r"uploadpack\.packobjectshook",
    r"(difftool|mergetool|browser|man)\..+\.(cmd|path)",
    r"tar\..+\.command",
    r"submodule\..+\.update",
    r"protocol\..*allow",
    r"init\.templatedir",
    # programs added since 2.39 or used by other commands
    r"hook\..+\.command",  # config-based hooks (git 2.46+)
    r"gpg\.ssh\.defaultkeycommand",
    r"imap\.tunnel",
    r"sendemail\..*(cmd|smtpserver)",
    r"trailer\..+\.(command|cmd)",
    r"guitool\..+\.cmd",
    r"gc\.recentobjectshook",  # git 2.42+, run by gc and prune
    r"instaweb\..+",
    # files git writes: trace targets (2.39 and 2.47 ignore them in repository config; fail closed anyway)
    r"trace2\..+",
    # another work tree: git reads (and a writing command writes) files outside the repository
    r"core\.worktree",
    # files the repository names for git to read (their lines can be printed: check-ignore -v, blame)
    r"include\.path",
    r"includeif\..+\.path",
    r"core\.(attributesfile|excludesfile)",
    r"attr\.tree",  # git 2.42+: attributes read from a tree it names, not the work tree (red team round 50)
    r"mailmap\.file",
    r"blame\.ignorerevsfile",
    r"gpg\.ssh\.(allowedsignersfile|revocationfile)",
    r"diff\.orderfile",
    r"format\.signaturefile",
    r"http\.cookiefile",  # written too, with http.saveCookies
)
_CODE_KEY = re.compile("|".join(f"(?:{k})" for k in CODE_RUNNING_KEYS))
#: Attribute assignments that select a driver (``*.png diff=exif``).
_DRIVER_ATTR = re.compile(r"(?:^|\s)(diff|filter|merge)=([^\s]+)")
#: Config values that do not run anything even under a code-running key.
_HARMLESS_VALUES = frozenset({"", "false", "cat", "true", "/dev/null", "never", "0", "none"})
_TIMEOUT_S = 10.0


#: Heap (``RLIMIT_DATA``, KiB) of one host git query. The files git opens are checked first
#: (`unsafe_git_files`), but a sandboxed command can swap one for a sparse file after the check:
#: git would read it into its heap (1.5 GB before a 60 s timeout). Far above what the queries
#: need in a very large repository; past it git exits with an error, which fails closed.
_DATA_LIMIT_KIB = 512 << 10
_SH = "/bin/sh"


#: The operator's git variables a query keeps: which global and system files git reads (the same
#: ones `_trusted_files` trusts).
_KEPT_GIT_VARIABLES = frozenset({"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"})


def _query_env() -> dict[str, str]:
    """shellrt's environment for a query, with the hardening overrides and without the operator's
    other ``GIT_*`` variables. The queries describe the repository at their cwd as the sandboxed
    git sees it (its environment is shellrt's own): ``GIT_DIR``/``GIT_WORK_TREE`` pointed them
    at another repository, ``GIT_CONFIG`` made ``git config`` list one file instead of the
    repository's scopes, and ``GIT_CONFIG_PARAMETERS`` beats the hardening's ``GIT_CONFIG_COUNT``
    entries: the repository's ``core.fsmonitor`` and hooks went unreported (red team round 35)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_GIT_VARIABLES}
    env.update(git_hardening_env())
    return env


def _git(
    argv: Sequence[str], cwd: str | Path, env: Mapping[str, str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Runs one host git query: output captured, bounded in time and heap, ``stdin`` or none (the
    host's may be a protocol stream), exit status left to the caller."""
    command = list(argv)
    # Never a git (or a git-* helper) a sandboxed command wrote: it runs on the host (round 15); nor
    # a library or start-up file the repository holds (`LD_PRELOAD=./x.so`, an empty
    # `LD_LIBRARY_PATH` entry: the cwd is the repository; round 34, lead).
    from shellrt.permissions.hook_env import hook_env

    hardened = {k: v for k, v in git_hardening_env().items() if env.get(k) == v}
    env = hook_env({**env, "PATH": env.get("PATH", os.defpath)}, [cwd])  # PATH: `host_path`'s
    env.update(hardened)  # never lost with an operator's GIT_CONFIG_* entry hook_env drops (round 35)
    program = shutil.which(command[0], path=env["PATH"])
    if program is None:  # as without the shell: a missing git is an OSError, which fails closed
        raise FileNotFoundError(errno.ENOENT, "no such program", command[0])
    command[0] = program
    # A repository another user owns (the server runs as root over a user's checkout): git
    # refuses it, while the sandbox's idmapped mount shows it as the sandbox user's and the
    # sandboxed git obeys it. These queries run nothing it names, so they read it too
    # (command-line scope, which git trusts for safe.directory).
    env = dict(env)
    count = int(env.get("GIT_CONFIG_COUNT") or 0)
    env.update({"GIT_CONFIG_COUNT": str(count + 1), f"GIT_CONFIG_KEY_{count}": "safe.directory"})
    env[f"GIT_CONFIG_VALUE_{count}"] = "*"
    if os.path.exists(_SH):
        # A shell's ulimit, not preexec_fn: this runs on worker threads, where preexec_fn may deadlock.
        # A shell without ``ulimit -d`` still runs git: the file check above remains.
        command = [_SH, "-c", f'ulimit -d {_DATA_LIMIT_KIB} 2>/dev/null; exec "$0" "$@"', *command]
    return subprocess.run(
        calm_argv(command),  # this worker thread's priority is the caller's (round 36, sched)
        cwd=cwd,
        env=env,
        input=stdin or b"",  # an empty pipe when there is nothing to give: EOF at once, as /dev/null
        capture_output=True,
        timeout=_TIMEOUT_S,
        check=False,
    )


#: Attributes files larger than this are not inspected (the judgement fails closed).
_MAX_ATTRIBUTES_BYTES = 8 << 20
#: Keys the hardening environment already overrides for read-only commands (command-line
#: precedence beats every file), so a repository setting them changes nothing.
_OVERRIDDEN = frozenset(k.lower() for k, _, _ in GIT_CONFIG_OVERRIDES)


def _trusted_files() -> set[str]:
    """The operator's own configuration files (git's global and XDG locations)."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = {os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")}
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        files.add(os.environ["GIT_CONFIG_GLOBAL"])
    return {os.path.realpath(f) for f in files}


def repo_code_keys(
    cwd: str, extra_env: Mapping[str, str] | None = None, *, hardened: bool = True
) -> list[str]:
    """Code-running configuration a git command started in ``cwd`` would obey, as
    ``"key (origin)"`` strings; empty when there is none. Never raises: a failure to
    read is reported as one entry (fail closed). ``hardened``: the command runs with the
    override environment (only read-only commands do), so the keys it overrides are moot.

    Populated submodules count, recursively: ``git status`` and ``git diff`` of a
    superproject with a modified submodule run ``git status`` inside it, which obeys the
    submodule's own configuration (a clean filter runs there)."""
    found = _own_code_keys(cwd, extra_env, hardened=hardened)
    if found:
        return found
    budget = [_MAX_SUBMODULES]
    pending = [(cwd, 0)]
    while pending:
        directory, depth = pending.pop()
        subs = _populated_submodules(directory, extra_env)
        if isinstance(subs, str):
            return [subs]
        for sub in subs:
            budget[0] -= 1
            if budget[0] < 0 or depth >= _MAX_SUBMODULE_DEPTH:
                return [f"more submodules than can be inspected (below {directory})"]
            keys = _own_code_keys(sub, extra_env, hardened=hardened, work_tree=sub)
            if keys:
                return [f"{k} in submodule {sub}" for k in keys]
            pending.append((sub, depth + 1))
    return []


#: Submodules inspected per check (all levels), and how deep; beyond either: fail closed.
_MAX_SUBMODULES = 64
_MAX_SUBMODULE_DEPTH = 4


def _populated_submodules(cwd: str, extra_env: Mapping[str, str] | None) -> list[str] | str:
    """Work trees of the populated submodules of the repository at ``cwd`` (its index's
    gitlinks that have a ``.git``), or why they could not be listed. ``git ls-files``
    runs no filter and no other repository's git."""
    unsafe = unsafe_git_files(cwd)
    if unsafe:
        return f"the repository's submodules could not be listed ({unsafe})"
    env = _query_env()
    if extra_env:
        env.update(extra_env)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        top = _git(["git", "rev-parse", "--show-toplevel"], cwd, env)
        if top.returncode != 0:
            return []  # not a work tree (a bare repository, or none): nothing to recurse into
        root = top.stdout.decode("utf-8", "surrogateescape").strip()
        listed = _git(["git", "ls-files", "--stage", "-z"], root, env)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the repository's submodules could not be listed ({exc})"
    if listed.returncode != 0:
        return "the repository's submodules could not be listed"
    subs: list[str] = []
    for record in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        head, _, path = record.partition("\t")
        if head.startswith("160000 ") and path:
            work = os.path.join(root, path)
            if _leaves(root, path):
                return (
                    f"the submodule path {path!r} leaves the repository (a crafted index); "
                    "inspect the repository before running git here"
                )
            if os.path.lexists(os.path.join(work, ".git")):
                subs.append(work)
    return subs


def _leaves(root: str, path: str) -> bool:
    """Whether an index path leads outside the work tree at ``root``: absolute, a ``..``/``.``/
    empty component (git refuses to write them, a crafted index holds them), or a symlink on the
    way out. Host git would run in a directory the repository chose (red team round 36)."""
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return True
    top = os.path.realpath(root)
    return os.path.commonpath([top, os.path.realpath(os.path.join(root, path))]) != top


def _own_code_keys(
    cwd: str, extra_env: Mapping[str, str] | None, *, hardened: bool, work_tree: str | None = None
) -> list[str]:
    """`repo_code_keys` of one repository, its submodules aside. ``work_tree``: a submodule's,
    which its ``core.worktree`` (set by ``git submodule``) may name."""
    unsafe = unsafe_git_files(cwd)
    if unsafe:
        return [f"the repository configuration could not be read ({unsafe})"]
    env = _query_env()
    if extra_env:
        env.update(extra_env)
    env["GIT_CONFIG_COUNT"] = "0"  # see the repository's own keys, not our overrides
    # First without following includes: a repository's include names a file git would read
    # (a FIFO blocks it, /dev/zero or a huge file keeps it reading), and it makes the command
    # ask anyway. Only includes of the operator's own files are followed, in a second listing.
    listing = _config_listing(cwd, env, includes=False)
    if isinstance(listing, str):
        return [listing]
    found, drivers, included = _judge_entries(listing, hardened=hardened, work_tree=work_tree)
    if not found and included:
        listing = _config_listing(cwd, env, includes=True)
        if isinstance(listing, str):
            return [listing]
        found, drivers, _ = _judge_entries(listing, hardened=hardened, work_tree=work_tree)
    if drivers and not found:
        # Only when nothing made the command ask yet: the walk below goes over the work tree git
        # names, which a repository's ``core.worktree`` (itself a key found above) may point at `/`,
        # a home or a hung mount, 20,000 entries on the host per judgement (red team round 49).
        found.extend(_attribute_uses(cwd, env, drivers))
    return found


_INCLUDE_KEY = re.compile(r"include\.path|includeif\..+\.path")


def _config_listing(
    cwd: str, env: Mapping[str, str], *, includes: bool
) -> list[tuple[str, str, str, str]] | str:
    """The effective configuration's ``(scope, origin, key, value)`` entries, or why it could
    not be read."""
    argv = ["git", "--no-pager", "config", "--list", "--show-origin", "--show-scope", "-z"]
    if not includes:
        argv.insert(4, "--no-includes")
    try:
        proc = _git(argv, cwd, dict(env))
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the repository configuration could not be read ({exc})"
    if proc.returncode not in (0, 1):  # 1: no configuration at all
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"the repository configuration could not be read ({err[-1] if err else proc.returncode})"
    return _entries(proc.stdout)


def _judge_entries(
    entries: list[tuple[str, str, str, str]], *, hardened: bool, work_tree: str | None
) -> tuple[list[str], set[str], bool]:
    """``(code-running keys not from the operator's own files, drivers the operator's files
    define, whether the operator's files include others)``."""
    trusted = _trusted_files()
    found: list[str] = []
    trusted_drivers: set[str] = set()
    included = False
    for scope, origin, key, value in entries:
        if not _CODE_KEY.fullmatch(key) or (hardened and key.lower() in _OVERRIDDEN):
            continue
        path = origin[len("file:") :] if origin.startswith("file:") else ""
        if (
            work_tree is not None
            and key == "core.worktree"
            and path
            and _same_dir(os.path.join(os.path.dirname(path), value), work_tree)
        ):
            continue  # a submodule's git directory naming that submodule's own work tree
        is_trusted = scope == "global" and bool(path) and os.path.realpath(path) in trusted
        if is_trusted:
            if key.split(".")[0] in ("diff", "filter", "merge") and key.count(".") >= 2:
                trusted_drivers.add(key.split(".", 1)[1].rsplit(".", 1)[0])
            included = included or bool(_INCLUDE_KEY.fullmatch(key.lower()))
            continue
        if value.strip().lower() in _HARMLESS_VALUES:
            continue
        found.append(f"{key} ({origin or scope})")
    return found, trusted_drivers, included


def _same_dir(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _entries(raw: bytes) -> list[tuple[str, str, str, str]]:
    """``--show-scope --show-origin -z`` records: scope NUL origin NUL key LF value NUL."""
    parts = raw.decode("utf-8", "replace").split("\0")
    out: list[tuple[str, str, str, str]] = []
    i = 0
    while i + 2 < len(parts):
        scope, origin, kv = parts[i], parts[i + 1], parts[i + 2]
        key, _, value = kv.partition("\n")
        head, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        norm = f"{head.lower()}.{sub}.{name.lower()}" if sub else f"{head.lower()}.{name.lower()}"
        out.append((scope, origin, norm.lower() if not sub else norm, value))
        i += 3
    return out


def _attribute_uses(cwd: str, env: Mapping[str, str], drivers: set[str]) -> list[str]:
    """Operator-defined drivers the repository's attributes select (they would run on its data)."""
    files: list[Path] = []
    try:
        top = _git(["git", "rev-parse", "--show-toplevel", "--git-common-dir"], cwd, dict(env))
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"the repository attributes could not be read ({exc})"]
    lines = top.stdout.decode("utf-8", "replace").splitlines()
    if top.returncode != 0 or len(lines) < 2:
        lines = ["", top.stdout.decode("utf-8", "replace").strip()]
    root, common = lines[0], lines[1]
    if root:
        walked = _attributes_files(Path(root))
        if isinstance(walked, str):
            return [walked]
        files.extend(walked)
    if common:
        files.append(Path(cwd, common) / "info" / "attributes")
    found: list[str] = []
    if root:
        indexed = _index_attributes(root, env)
        if isinstance(indexed, str):
            return [indexed]
        for label, data in indexed:
            found.extend(f"{kind}={name} selected by {label}" for kind, name in _selected(data, drivers))
    for file in files:
        # In-tree attributes are never read through a symlink (git does the same since 2.32).
        try:
            data = read_regular_bytes(file, _MAX_ATTRIBUTES_BYTES, follow=file.name != ".gitattributes")
        except (FileNotFoundError, NotADirectoryError):
            continue  # none there (or gone): git reads none either
        except OSError as exc:
            if exc.errno == errno.ELOOP or (isinstance(exc, PermissionError) and os.geteuid() != 0):
                continue  # an in-tree symlink, which git does not follow; one this same user cannot read
            # A FIFO: git opens it and applies what a writer feeds it (red team round 50), a device ...
            found.append(f"{file} cannot be inspected ({exc.strerror or exc})")
            continue
        if len(data) > _MAX_ATTRIBUTES_BYTES:
            found.append(f"{file} is too large to inspect")
            continue
        found.extend(f"{kind}={name} selected by {file}" for kind, name in _selected(data, drivers))
    return found


def _selected(data: bytes, drivers: set[str]) -> list[tuple[str, str]]:
    """``(kind, driver)`` of each of ``drivers`` an attributes file's text selects."""
    return [(k, n) for k, n in _DRIVER_ATTR.findall(data.decode("utf-8", "replace")) if n in drivers]


#: ``.gitattributes`` entries of the index read per judgement; more fails closed.
_MAX_INDEX_ATTRIBUTES = 256


def _index_attributes(root: str, env: Mapping[str, str]) -> list[tuple[str, bytes]] | str:
    """The ``.gitattributes`` files the index of the work tree at ``root`` holds, as ``(label,
    content)``, or why they could not be read. git reads one from the index where the work tree has
    none (deleted, or its whole directory absent: red team round 50), so the walk alone missed them.
    ``ls-files`` and ``cat-file`` read the index and objects only (no filter runs); blob sizes are
    asked first, so a huge object is never read into this process."""
    try:
        listed = _git(["git", "ls-files", "--stage", "-z", "--", ":(glob)**/.gitattributes"], root, dict(env))
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the repository attributes in its index could not be listed ({exc})"
    if listed.returncode != 0:
        return "the repository attributes in its index could not be listed"
    blobs: dict[bytes, str] = {}
    for record in listed.stdout.split(b"\0"):
        head, tab, path = record.partition(b"\t")
        fields = head.split(b" ")
        if not tab or len(fields) != 3 or fields[0] == b"160000":
            continue  # no entry, or a submodule's commit (its own attributes are judged in it)
        blobs.setdefault(fields[1], path.decode("utf-8", "surrogateescape"))
    if not blobs:
        return []
    if len(blobs) > _MAX_INDEX_ATTRIBUTES:
        return f"the repository's index holds more than {_MAX_INDEX_ATTRIBUTES} .gitattributes files to inspect"
    names = b"".join(sha + b"\n" for sha in blobs)
    try:
        sizes = _git(["git", "cat-file", "--batch-check"], root, dict(env), names)
        lines = sizes.stdout.decode("ascii", "replace").splitlines()
        if sizes.returncode != 0 or len(lines) != len(blobs):
            return "the repository attributes in its index could not be read"
        for line in lines:
            name, kind, size = [*line.split(), "", "", ""][:3]
            if kind != "blob" or not size.isdigit():
                return f"the repository attributes in its index could not be read ({line[:100]})"
            if int(size) > _MAX_ATTRIBUTES_BYTES:
                return f"{blobs.get(name.encode(), name)} in the index is too large to inspect"
        contents = _git(["git", "cat-file", "--batch"], root, dict(env), names)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the repository attributes in its index could not be read ({exc})"
    out: list[tuple[str, bytes]] = []
    raw, at = contents.stdout, 0
    for blob, label in blobs.items():
        end = raw.find(b"\n", at)
        header = raw[at:end].split() if end >= 0 else []
        if contents.returncode != 0 or len(header) != 3 or header[0] != blob or not header[2].isdigit():
            return "the repository attributes in its index could not be read"
        at = end + 1 + int(header[2])
        out.append((f"{label} in the index", raw[end + 1 : at]))
        at += 1  # the newline after each object
    return out


#: Entries (files and directories, all levels) the attribute walk reads per judgement: its cost on
#: the host (~60 ms for 20,000 idle here, ~700 ms under load). Past it the judgement fails closed.
_MAX_WALK_ENTRIES = 20_000


def _attributes_files(root: Path, limit: int | None = None) -> list[Path] | str:
    """The ``.gitattributes`` files below ``root`` (``.git`` and symlinks not entered), or why they
    could not all be found: more than ``limit`` entries, or a directory that cannot be listed. Either
    fails closed: a walk that stopped early judged every file it had not reached as selecting
    nothing (red team round 50: 20,000 empty files first, the selecting file one directory down)."""
    budget = _MAX_WALK_ENTRIES if limit is None else limit
    found: list[Path] = []
    pending = [str(root)]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                for entry in listing:
                    budget -= 1
                    if budget < 0:
                        return (
                            f"the repository's work tree {root} has more than {_MAX_WALK_ENTRIES} entries to "
                            "search for .gitattributes selecting the drivers your global git configuration "
                            "defines (filter/diff/merge); review the repository before running git here"
                        )
                    if entry.name == ".gitattributes":
                        found.append(Path(entry.path))
                    elif entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone since it was listed: nothing of it for git to read either
        except OSError as exc:
            if isinstance(exc, PermissionError) and os.geteuid() != 0:
                continue  # git, started as this same user, cannot read it either
            return f"the repository attributes could not be read ({directory}: {exc.strerror or exc})"
    return found


def changed_paths(cwd: str) -> list[str]:
    """Absolute paths of tracked files whose index or work-tree content may differ from HEAD:
    what ``git diff``/``git status -v`` print the content of (more is fine: each is a read
    judged against the rules). ``[""]`` (unknown, which fails closed) when git cannot say;
    ``[]`` outside a repository.

    Never runs what the repository names, even if its configuration changes while this
    runs (a background command can swap ``.git/config`` between the code-key check and
    this listing): ``git status`` would hash stat-dirty files through their clean filter,
    on the host. So git only reads the index and trees (``ls-files --debug``,
    ``diff-index --cached``: neither opens a work-tree file), and the work tree is compared
    with the index's stat data here: a file whose size, times or inode differ, or whose
    entry is racily clean, counts as changed."""
    if unsafe_git_files(cwd):
        return [""]
    env = _query_env()
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        top = _git(["git", "rev-parse", "--show-toplevel", "--git-path", "index"], cwd, env)
        if top.returncode != 0:
            return []  # not a repository: git diff reads only the paths it is given
        lines = top.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) != 2:
            return [""]
        root, index = lines[0], os.path.join(cwd, lines[1])
        listed = _git(["git", "ls-files", "--stage", "--debug", "-z"], root, env)
        staged = _git(
            ["git", "diff-index", "--cached", "--name-only", "--no-renames", "-z", "HEAD", "--"], root, env
        )
    except (OSError, subprocess.SubprocessError):
        return [""]
    if listed.returncode != 0:
        return [""]
    try:
        index_mtime_ns = os.stat(index).st_mtime_ns
    except OSError:
        return [""]
    entries = _index_entries(listed.stdout)
    if entries is None:
        return [""]
    changed: set[str] = set()
    if staged.returncode == 0:
        changed.update(n for n in staged.stdout.decode("utf-8", "surrogateescape").split("\0") if n)
    else:  # no HEAD yet: everything in the index is new
        changed.update(e.path for e in entries)
    for entry in entries:
        if entry.mode != "160000" and _worktree_differs(
            os.path.join(root, entry.path), entry, index_mtime_ns
        ):
            changed.add(entry.path)
    if len(changed) > _MAX_CHANGED_PATHS:
        # Each is resolved (a `realpath`, a few `lstat`s) and judged against the rules: an index a
        # command wrote with 500,000 entries and no files kept this host thread 2-3 minutes per
        # git judgement (red team round 50). Unknown instead: the command asks.
        return [""]
    return sorted(os.path.realpath(os.path.join(root, p)) for p in changed)


#: Changed paths `changed_paths` resolves; more: unknown (fails closed). A real work tree with
#: more uncommitted changes than this asks before git shows them.
_MAX_CHANGED_PATHS = 20_000


@dataclass(frozen=True)
class _IndexEntry:
    mode: str
    path: str
    mtime_ns: int
    ctime_ns: int
    ino: int
    size: int


_DEBUG_FIELDS = re.compile(
    r"\s*ctime: (\d+):(\d+)\n\s*mtime: (\d+):(\d+)\n\s*dev: \d+\s+ino: (\d+)\n"
    r"\s*uid: \d+\s+gid: \d+\n\s*size: (\d+)\s+flags: [0-9a-f]+\n"
)


def _index_entries(raw: bytes) -> list[_IndexEntry] | None:
    """Parse ``git ls-files --stage --debug -z``: ``<mode> <sha> <stage>\t<path>\0`` then five
    stat lines, for each entry. None when the output is not in that form."""
    text = raw.decode("utf-8", "surrogateescape")
    out: list[_IndexEntry] = []
    pos = 0
    while pos < len(text):
        nul = text.find("\0", pos)
        if nul < 0:
            return None
        head, tab, path = text[pos:nul].partition("\t")
        match = _DEBUG_FIELDS.match(text, nul + 1)
        if not tab or match is None:
            return None
        c_s, c_ns, m_s, m_ns, ino, size = (int(g) for g in match.groups())
        out.append(
            _IndexEntry(head.split(" ", 1)[0], path, m_s * 10**9 + m_ns, c_s * 10**9 + c_ns, ino, size)
        )
        pos = match.end()
    return out


def _worktree_differs(path: str, entry: _IndexEntry, index_mtime_ns: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return True  # deleted (or unreadable): git diff shows it
    return (
        st.st_mtime_ns != entry.mtime_ns
        or st.st_ctime_ns != entry.ctime_ns
        or st.st_ino & 0xFFFFFFFF != entry.ino
        or st.st_size & 0xFFFFFFFF != entry.size
        or entry.mtime_ns >= index_mtime_ns  # racily clean: git would compare the content
    )


def active_hooks(cwd: str) -> list[str]:
    """Executable hooks in the hooks directory git would use in ``cwd`` (``.git/hooks`` or
    ``core.hooksPath``). No configuration key names them, so `repo_code_keys` cannot; a git
    command run without the hardening environment runs them (``post-index-change`` when it
    refreshes the index, ``reference-transaction`` on any ref update)."""
    unsafe = unsafe_git_files(cwd)
    if unsafe:
        return [f"the repository hooks could not be listed ({unsafe})"]
    env = _query_env()
    env["GIT_CONFIG_COUNT"] = "0"  # the repository's own hooksPath, not our /dev/null
    try:
        proc = _git(["git", "rev-parse", "--git-path", "hooks"], cwd, env)
    except (OSError, subprocess.SubprocessError) as exc:
        return [f"the repository hooks could not be listed ({exc})"]
    if proc.returncode != 0:
        return []  # not a repository
    hooks = Path(cwd, proc.stdout.decode("utf-8", "replace").strip())
    try:
        entries = sorted(hooks.iterdir()) if hooks.is_dir() else []
    except OSError as exc:
        return [f"the repository hooks could not be listed ({exc})"]
    return [
        f"hook {e.name} ({e})"
        for e in entries
        if not e.name.endswith(".sample") and e.is_file() and os.access(e, os.X_OK)
    ]
