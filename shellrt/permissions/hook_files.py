"""The workspace files a hook command runs, and their digests, so trust can cover them.

Why: trusting a workspace's settings files is not enough when a trusted hook runs
``bash .claude/hooks/x.sh``: a ``git pull`` (or a command) that changes only the
script would keep its settings trusted while the host runs new code. So the trust
record also holds the SHA-256 of every file a trusted hook command names inside the
workspace (``$CLAUDE_PROJECT_DIR/...``, relative paths, a script given to an
interpreter), and the hook runner checks them again before each run.

Resolution parses the command (never regexes over it). A command that cannot be
resolved to a fixed set of files (a variable other than the project directory, a
glob, a command substitution, ``cd``, ``python -m``) is *untrackable*: then the
conventional hook directories (`WATCHED_HOOK_DIRS`) are watched as a whole, so any
change there needs trust again; so is such a directory that holds a tracked file (what
the script sources or imports beside it runs too). What a shell or Python hook script loads
relative to the hook's working directory, the workspace root (``. ./lib.sh``), is found by
`shellrt.permissions.hook_loads` and recorded the same way; a load chosen at run time is never
trusted. A tracked path that leads out of the workspace through a symlink is never trusted.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shellrt.permissions.hook_env_files import env_file_lines, env_file_operands, loads_env_at_run_time
from shellrt.permissions.hook_loads import SHELLS, ScriptKind, script_kind, script_loads, started_loads
from shellrt.permissions.hook_loads_node import node_script_loads, root_node_scripts, runs_from_node_modules
from shellrt.permissions.hook_loads_other import other_interpreter_loads
from shellrt.permissions.hook_node_packages import (
    is_node_script,
    node_module_dirs,
    node_packages,
    started_commands,
    starts_elsewhere,
    starts_with_own_env,
)
from shellrt.permissions.hook_read import read_regular
from shellrt.permissions.hook_shebang import (
    SAFE_PATH_VAR,
    SHEBANG_BYTES,
    drops_safe_path,
    env_prefix,
    shebang,
    shebang_program,
    unread_shebang,
    without_safe_path,
)
from shellrt.permissions.hook_substitutions import allowed_substitution_words
from shellrt.permissions.hook_tree_loaders import (
    first_search_dir,
    is_interpreter,
    loads_the_tree,
    names_a_tree_loader,
    safe_path_holds,
)
from shellrt.permissions.hook_venvs import venv_paths
from shellrt.permissions.start_digests import active as active_digests

if TYPE_CHECKING:  # the parser loads only when a trusted hook is resolved
    from shellrt.analysis.models import Assignment, PlanCommand, Word

__all__ = [
    "OUTSIDE_PREFIX",
    "ROOT_FILES",
    "TOO_LARGE",
    "WATCHED_HOOK_DIRS",
    "WHOLE_WORKSPACE",
    "HookFiles",
    "compare_hook_files",
    "hook_files",
    "workspace_tree_digest",
]

#: The record of the whole workspace tree (but ``.git``): what a server started in it, or an
#: assignment naming it (``PYTHONPATH=.``), may load by search (round 23).
WHOLE_WORKSPACE = "."
#: What separates the paths of one environment value (``a:b``, ``--require ./x.js``, ``--opt=v``).
_VALUE_PARTS = re.compile(r"[\s:=,;]+")
#: Directories watched whole when a hook command is untrackable (relative to the workspace).
WATCHED_HOOK_DIRS: tuple[str, ...] = (".claude/hooks", ".shellrt/hooks")
#: Digest prefix of a path that leads out of the workspace (never trusted).
OUTSIDE_PREFIX = "outside:"
#: The variables the hook runner sets to the workspace (`CommandHookRunner`).
_PROJECT_VAR = re.compile(
    r"\$(?:\{(?:CLAUDE|SHELLRT)_PROJECT_DIR\}|(?:CLAUDE|SHELLRT)_PROJECT_DIR(?![A-Za-z0-9_]))"
)
#: The project directory or ``$HOME`` (`hook_files` with ``home``).
_PROJECT_OR_HOME = re.compile(
    r"\$(?:\{(?:(?:CLAUDE|SHELLRT)_PROJECT_DIR|HOME)\}|(?:(?:CLAUDE|SHELLRT)_PROJECT_DIR|HOME)(?![A-Za-z0-9_]))"
)
_PLACEHOLDER = "SHELLRTHOOKWORKSPACEROOT"
#: Word features a path with the project variable may have (quoting, the one parameter).
_RESOLVABLE = frozenset({"parameter", "simple_parameter", "quoted", "dq_whole"})
_DIR_PROGRAMS = frozenset({"cd", "pushd", "popd"})
#: Why a ``python -m`` line names no file: its search is read as the interpreter's own
#: (`_first_searched`, `hook_tree_loaders.loads_the_tree`), not a word chosen at run time.
_MODULE_WHY = "`-m` loads a module found by search, not a fixed file"
#: Programs that run a directory given to them (``python3 pkg`` runs ``pkg/__main__.py``); a
#: directory given to any other program is its data, not code it runs.
_RUNS_DIRECTORIES = frozenset({"python", "python3", "node", "deno", "bun", "ruby", "perl", "php"})
#: The watched-directory name of the workspace root's own files (not its subdirectories): what
#: a hook script at the root loads beside it (``. ./lib.sh``: hooks run from the root).
ROOT_FILES = "./"
#: Bounds of one watched directory tree (beyond them it cannot be vouched for).
MAX_TREE_ENTRIES = 2000
MAX_HASHED_BYTES = 32 << 20
_TOO_LARGE = "too-large"
#: The digest of a tree past the bounds: never vouched for (what records it is not run).
TOO_LARGE = _TOO_LARGE


@dataclass(frozen=True)
class HookFiles:
    """What the hooks of one settings file run from the workspace, with digests."""

    #: Workspace-relative path -> ``sha256:…`` (None: absent; ``outside:…``: leaves the workspace).
    files: dict[str, str | None] = field(default_factory=dict)
    #: Watched directory -> digest of its whole tree (for untrackable commands).
    dirs: dict[str, str | None] = field(default_factory=dict)
    #: Commands that could not be resolved to files, each with why.
    untrackable: tuple[str, ...] = ()
    #: What a hook script loads by a path chosen at run time (`hook_loads`): never trusted.
    unbounded: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.files or self.dirs or self.untrackable or self.unbounded)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": dict(self.files),
            "dirs": dict(self.dirs),
            "untrackable": list(self.untrackable),
            "unbounded": list(self.unbounded),
        }

    @classmethod
    def from_json(cls, data: Any) -> HookFiles | None:
        """A record from the store, or None when it is not one (an older store: no record)."""
        if not isinstance(data, dict):
            return None
        files, dirs, untrackable = data.get("files"), data.get("dirs"), data.get("untrackable")
        if not isinstance(files, dict) or not isinstance(dirs, dict) or not isinstance(untrackable, list):
            return None
        unbounded = data.get("unbounded")
        return cls(
            {str(k): v if isinstance(v, str) else None for k, v in files.items()},
            {str(k): v if isinstance(v, str) else None for k, v in dirs.items()},
            tuple(str(u) for u in untrackable),
            tuple(str(u) for u in unbounded) if isinstance(unbounded, list) else (),
        )

    @classmethod
    def union(cls, parts: Sequence[HookFiles]) -> HookFiles:
        files: dict[str, str | None] = {}
        dirs: dict[str, str | None] = {}
        untrackable: list[str] = []
        unbounded: list[str] = []
        for part in parts:
            files.update(part.files)
            dirs.update(part.dirs)
            untrackable += [u for u in part.untrackable if u not in untrackable]
            unbounded += [u for u in part.unbounded if u not in unbounded]
        return cls(
            dict(sorted(files.items())), dict(sorted(dirs.items())), tuple(untrackable), tuple(unbounded)
        )

    def problems(self, *, links_out: bool = True) -> list[str]:
        """What can never be trusted as it is (out of the workspace, unreadable, too large, a load
        chosen at run time); ``links_out`` False: a link out of it is not one (its target is
        compared as its digest)."""
        out = [
            f"{why}, which trust cannot vouch for: load hook helpers by a fixed path (relative to the "
            'workspace root, "$CLAUDE_PROJECT_DIR/…" or "$(dirname "$0")/…")'
            for why in self.unbounded
        ]
        for rel, digest in [*self.files.items(), *self.dirs.items()]:
            if digest is None or digest.startswith("sha256:"):
                continue
            if digest.startswith(OUTSIDE_PREFIX):
                if links_out:
                    out.append(
                        f"hook file {rel} leads out of the workspace (to {digest[len(OUTSIDE_PREFIX) :]})"
                    )
            elif digest == _TOO_LARGE and rel == WHOLE_WORKSPACE:
                out.append(
                    f"the workspace is too large to vouch for as a whole (over {MAX_TREE_ENTRIES} entries or "
                    f"{MAX_HASHED_BYTES >> 20} MiB): a stdio server started in it (its cwd), an environment "
                    "value naming it, or a project runner (`uv run`, `poetry run`, `bundle exec`, `go run`, "
                    "`cargo run`…), a test runner, task runner or tool whose config is code (`pytest`, "
                    "`make`, `prettier`…) may load any of its files by search, and so may a hook's node script "
                    'whose package.json maps a pattern to the root ("#x/*": "./*"); start the server '
                    'outside the workspace (leave out "cwd"), run a tool by its path outside the '
                    'workspace, map such patterns below a directory ("./lib/*"), and name the files it '
                    "runs by their paths"
                )
            elif digest == _TOO_LARGE and rel.split("/")[-1] == "node_modules":
                out.append(
                    f"{rel}, where node finds what a hook's node code requires (plugins and optional "
                    "packages no manifest declares too), is too large to vouch for (over "
                    f"{MAX_TREE_ENTRIES} entries or {MAX_HASHED_BYTES >> 20} MiB), or links a directory "
                    "out of itself (a workspace package's link such as node_modules/a -> ../packages/a "
                    "is one): run the tool from an install outside the workspace, by its absolute path "
                    '(for example "/opt/tools/node_modules/.bin/prettier --write"), or start the hook\'s '
                    "node script outside the workspace"
                )
            elif digest == _TOO_LARGE and "node_modules" in rel.split("/"):
                out.append(
                    f"node package {rel}, which a hook's tool loads, is too large to vouch for (over "
                    f"{MAX_TREE_ENTRIES} entries or {MAX_HASHED_BYTES >> 20} MiB): run the tool from an "
                    "install outside the workspace, by its absolute path"
                )
            elif digest == _TOO_LARGE:
                out.append(
                    f"hook directory {rel} is too large to vouch for (over {MAX_TREE_ENTRIES} entries or "
                    f"{MAX_HASHED_BYTES >> 20} MiB; a hook script's directory is recorded whole, since it "
                    "may load what lies beside it; a Python environment whose interpreter runs a hook is "
                    "recorded whole): keep hook scripts in a small directory such as .claude/hooks/, and "
                    "run them with an interpreter outside the workspace"
                )
            else:
                out.append(f"hook file {rel} cannot be vouched for ({digest})")
        return out


def hook_files(
    workspace: Path, commands: Sequence[str], *, base: Path | None = None, home: bool = False
) -> HookFiles:
    """Resolve ``commands`` (run from ``workspace``) to workspace files and hash them now.

    ``base``: where the commands run and what ``$CLAUDE_PROJECT_DIR`` is, when that is not
    ``workspace`` (the files of another writable root, `shellrt.permissions.writable_files`);
    ``home``: ``$HOME`` is resolved too (as the hook's environment has it). Trust records keep
    neither, so that what was trusted before stays comparable."""
    root = Path(os.path.realpath(workspace))
    at = _Base(str(root) if base is None else os.path.realpath(base), home)
    paths: dict[str, None] = {}
    hints: dict[str, ScriptKind] = {}
    untrackable: list[str] = []
    pythons: list[str] = []  # the programs of its ``python …`` commands (`venv_paths`)
    named_outside: dict[str, None] = {}
    token = _outside_named.set(named_outside)
    try:
        read = [
            (command, _command_paths(command, root, hints, at, pythons))
            for command in dict.fromkeys(commands)
        ]
    finally:
        _outside_named.reset(token)
    for command, (found, why) in read:
        paths.update(dict.fromkeys(found))
        if why is not None:
            untrackable.append(f"{command} ({why})")
            if why != _MODULE_WHY and _inside(root, at.path) is not None:
                # A program, script or directory chosen at run time (``$(which pytest) -q``,
                # ``"$TOOL"``, ``cd``) may search the tree as any listed tool does: recorded whole
                # (red team round 49; the hooks directories alone were watched before).
                paths[WHOLE_WORKSPACE] = None
    # What shell hook scripts load (``. ./lib.sh`` from ``scripts/x.sh`` is read at the root,
    # where hooks run), transitively; each such file's directory is then recorded below too.
    kinds = {rel: kind for rel in paths if (kind := script_kind(root, rel, hints.get(rel))) is not None}
    # The operator's own scripts outside the workspace run from it too (red team round 53:
    # ``sh ~/hooks/t.sh`` running ``pytest -q`` recorded nothing): read as a workspace script is,
    # for what they load and start from the workspace; they themselves are not recorded.
    outside = outside_scripts(named_outside)
    resolve = functools.partial(_searched_by_part, root, at)
    loads = script_loads(root, kinds, cwd=None if base is None else Path(at.path), resolve=resolve)
    paths.update(dict.fromkeys(loads.paths))
    queue: dict[str, ScriptKind | None] = {**outside, **loads.outside}
    read_outside: dict[str, ScriptKind] = {}
    while queue:
        batch = {
            p: k for p, h in queue.items() if p not in read_outside and (k := script_kind(Path("/"), p, h))
        }
        if len(read_outside) + len(batch) > MAX_OUTSIDE_SCRIPTS:
            untrackable.append(f"more than {MAX_OUTSIDE_SCRIPTS} hook scripts outside the workspace")
            paths[WHOLE_WORKSPACE] = None  # not read: what they load is not known
            break
        read_outside.update(batch)
        cwd = None if base is None else Path(at.path)
        theirs = script_loads(root, batch, cwd=cwd, resolve=resolve, hook_args=True)
        paths.update(dict.fromkeys(theirs.paths))
        if theirs.unbounded and _inside(root, at.path) is not None:
            # A load chosen at run time (``. "$HOME/x.sh"``): not the workspace's to refuse the
            # operator's hook for, but what it loads is not known: the workspace is recorded whole.
            untrackable += theirs.unbounded
            paths[WHOLE_WORKSPACE] = None
        queue = theirs.outside  # what those source or run in turn (``. "$(dirname "$0")/lib.sh"``)
    kinds.update(read_outside)
    unread = [
        rel for rel in [*paths, *outside] if rel not in kinds and unread_shebang(os.path.join(root, rel))
    ]
    scripts = [r for r in [*paths, *outside] if r in kinds or is_node_script(os.path.join(root, r))]
    if _inside(root, at.path) is not None and any(
        loads_env_at_run_time(os.path.join(root, r)) for r in scripts
    ):
        # ``process.loadEnvFile()``, ``load_dotenv()``: every child it starts has an environment
        # no record reads (``NODE_OPTIONS``, ``PYTHONPATH`` from the workspace's ``.env``; round 53)
        paths[WHOLE_WORKSPACE] = None
    if unread and _inside(root, at.path) is not None:
        # Its ``#!`` line's ``env`` cannot be read: its kind, and so what it loads, is not known
        # (red team round 51): the workspace is recorded whole, as for a line that cannot be read.
        untrackable += [f"{rel} (its #! line cannot be read)" for rel in unread]
        paths[WHOLE_WORKSPACE] = None
    # What the tools a hook's node script starts load (``execFileSync('npx', ['prettier', f])``).
    node_scripts = [r for r in paths if is_node_script(os.path.join(root, r)) and not _in_node_modules(r)]
    for rel in node_scripts + [
        path for path, kind in outside.items() if kind is None and is_node_script(path)
    ]:
        lines = started_commands(os.path.join(root, rel))
        if starts_elsewhere(os.path.join(root, rel)) and _inside(root, at.path) is not None:
            paths[WHOLE_WORKSPACE] = None  # a child's directory or module chosen by the script (round 50)
        cleared = set(lines) if starts_with_own_env(os.path.join(root, rel)) else None
        started = started_loads(lines, Path(at.path), resolve, cleared=cleared)
        paths.update(dict.fromkeys(p for p, _ in started))
    # A Python interpreter in the workspace builds its environment from around its binary
    # (``pyvenv.cfg``, ``site-packages``' ``.pth`` files): recorded, the environment whole (round 47).
    venv_files, venv_dirs = venv_paths(root, list(paths), pythons)
    paths.update(dict.fromkeys(venv_files))
    files = {rel: _digest(root, rel) for rel in sorted(paths)}
    # A hooks directory holding a hook file is watched whole: what that script sources or
    # imports beside it (``. ./lib.sh``) is code the hook runs too.
    watched = [d for d in WATCHED_HOOK_DIRS if untrackable or any(rel.startswith(d + "/") for rel in files)]
    watched += [d for d in venv_dirs if not any(_below(d, w) for w in watched)]
    # So is every ``node_modules`` where node looks up what a hook's node code requires: a
    # ``node_modules/.bin`` script loads undeclared plugins there too (rounds 44, 45); the
    # packages round 44 found by their manifests are recorded inside them, hashed once.
    for place in node_module_dirs(root, files):
        if not any(_below(place, d) for d in watched):
            watched = [d for d in watched if not _below(d, place)] + [place]
    packages, too_many = node_packages(root, files)
    watched += [p for p in packages if not any(_below(p, d) for d in watched)]
    # So is what a hook's node script loads by a path (``require('../lib/x.js')``, a ``#x`` import
    # through its package.json), each found module's directory whole (round 45).
    starts = list(files)
    if runs_from_node_modules(root, files):
        # A node tool run from the workspace reads its config at the root (``prettier.config.js``,
        # ``eslint.config.mjs``, ``.prettierrc``): the root's own files, and what its JS loads.
        watched += [ROOT_FILES] if ROOT_FILES not in watched else []
        starts += root_node_scripts(root)
    script_places, too_many_modules = node_script_loads(root, starts)
    for place in script_places:
        if not any(_below(place, d) for d in watched):
            watched.append(place)
    # So is the directory of every other hook file (``scripts/`` of ``python3 scripts/x.py``,
    # which may import ``scripts/util.py``); for a file at the root, the root's own files.
    for rel in files:
        beside = os.path.dirname(rel) or ROOT_FILES
        if os.path.isdir(os.path.join(root, rel)) or any(_below(beside, d) for d in watched):
            continue
        watched.append(beside)
    dirs = {rel: _digest(root, rel) for rel in watched}
    return HookFiles(files, dirs, tuple(untrackable), (*loads.unbounded, *too_many, *too_many_modules))


@dataclass(frozen=True)
class _Base:
    """Where a command runs (its relative paths, the project directory), and whether ``$HOME`` is read."""

    path: str
    home: bool


#: Files outside the workspace read as the operator's hook scripts, per hook line at most.
MAX_OUTSIDE_SCRIPTS = 16


def outside_scripts(named: dict[str, None]) -> dict[str, ScriptKind | None]:
    """The regular files of ``named`` (absolute, outside the workspace) that a hook may run as a
    script: a shell or Python script by its name or ``#!`` line (its kind), a node one (None).
    Data files (``jq -f /etc/x.jq``) are neither and are not read; beyond `MAX_OUTSIDE_SCRIPTS`
    the rest is not read (a hook line naming more is not one the operator writes)."""
    out: dict[str, ScriptKind | None] = {}
    for path in list(named)[:MAX_OUTSIDE_SCRIPTS]:
        if not os.path.isfile(path):
            continue
        kind = script_kind(Path("/"), path)
        if kind is not None or (is_node_script(path) and not _in_node_modules(path)):
            out[path] = kind  # an installed node tool's own code: its search is the tool tables'
    return out


def _in_node_modules(rel: str) -> bool:
    return "node_modules" in rel.split("/")


def _below(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory + "/")


def compare_hook_files(recorded: HookFiles | None, current: HookFiles) -> str | None:
    """Why ``current`` is not what was trusted (``recorded``); None when it is the same."""
    problems = current.problems()
    if problems:
        return problems[0]
    if recorded is None:
        if current.empty:
            return None
        return "its hook scripts were never recorded (trusted before shellrt tracked them)"
    # The whole tree last: a named file or directory that changed says more.
    for whole in (False, True):
        for kind, now, then in (
            ("hook file", current.files, recorded.files),
            ("hook directory", current.dirs, recorded.dirs),
        ):
            why = _changed(kind, now, then, whole)
            if why is not None:
                return why
    if set(current.untrackable) != set(recorded.untrackable):
        return "its untrackable hook commands differ from those trusted"
    return None


def _changed(kind: str, now: dict[str, str | None], then: dict[str, str | None], whole: bool) -> str | None:
    """Why an entry of ``now`` differs from ``then``: the whole tree's (a server's cwd in it, a
    value naming it, a hook that searches it: rounds 23, 47-49) when ``whole``, else the others'."""
    names = set(now) | set(then)
    for rel in sorted(names & {WHOLE_WORKSPACE} if whole else names - {WHOLE_WORKSPACE}):
        before, after = then.get(rel), now.get(rel)
        if before == after:
            continue
        what = "the workspace's files (a server or hook loads them whole)" if whole else f"{kind} {rel}"
        was = "were" if whole else "was"
        if rel not in then:
            return f"{what} {was} not recorded when the workspace was trusted"
        if before is None:
            return f"{what} appeared since the workspace was trusted"
        if after is None:
            return f"{what} {was} removed since the workspace was trusted"
        return f"{what} changed since the workspace was trusted"
    return None


# --- resolving a command --------------------------------------------------------------


def _command_paths(
    command: str, root: Path, hints: dict[str, ScriptKind], at: _Base, pythons: list[str] | None = None
) -> tuple[list[str], str | None]:
    """Workspace-relative paths ``command`` runs or reads, and why it is untrackable (None: it is not).
    Paths given to a shell or Python (``bash scripts/x``) go to ``hints``: they are read as such."""
    from shellrt.analysis import analyze

    analysis = analyze(command, "bash")
    plan = analysis.plan
    if not analysis.parse_ok or plan is None or plan.syntax_errors:
        return [], "cannot be parsed"
    if plan.unsupported:
        return [], f"uses {', '.join(plan.unsupported)}"
    printed: set[int] = set()
    if plan.substitutions:
        # Only a data program's output printed by a program that runs no operand (round 50).
        printed, no = allowed_substitution_words(plan)
        if no is not None:
            return [], no
    found: list[str] = []
    resolved: set[str] = set()  # words resolved once (a wrapper's operand is planned again, unread)
    dropped = drops_safe_path(plan.commands)  # in any part: read for all (round 50)
    module: str | None = None
    for part in plan.commands:
        part = without_safe_path(part) if dropped else part
        before = len(found)
        why = _part_paths(part, root, found, resolved, at, printed)
        program = os.path.basename(part.argv[0].value or "") if part.argv else ""
        kind: ScriptKind | None = "shell" if program in SHELLS else None
        if program.startswith("python"):
            kind = "python"
            if pythons is not None and part.argv[0].value is not None:
                pythons.append(part.argv[0].value)
        if kind is not None:
            hints.update(dict.fromkeys(found[before:], kind))
        if why == _MODULE_WHY:
            # Its search is read (`_first_searched`); what the rest of the line runs is read too
            # (round 50: ``python3 -P -m black . && pytest`` stopped at ``-m``: pytest unread).
            module = why
        elif why is not None:
            return found, why
    for redirect in plan.redirects:
        if redirect.op.startswith("<") and redirect.target is not None and redirect.kind == "file":
            why = _word_paths(redirect.target, root, found, resolved, at)
            if why is not None:
                return found, why
    return found, module


def _part_paths(
    part: PlanCommand,
    root: Path,
    found: list[str],
    resolved: set[str],
    at: _Base,
    printed: set[int] | None = None,
) -> str | None:
    if not part.argv:
        return None
    for assignment in part.assignments:
        why = _assignment_paths(assignment, root, found, resolved, at)
        if why is not None:
            return why
    name = part.argv[0].value
    module: str | None = None
    module_at = -1
    if name in _DIR_PROGRAMS:
        return f"`{name}` changes the directory later paths are read from"
    words = part.argv
    program = os.path.basename(name or "")
    if name is not None:
        # Read where the program runs: a server's own cwd (its ``PWD=``), else the hook's root;
        # by any path too (``/usr/local/bin/uv run x`` searches as ``uv run x`` does, round 24).
        pwd = next((a.value.value for a in part.assignments if a.name == "PWD" and a.value is not None), None)
        found.extend(_searched(program, [w.value for w in words[1:]], root, pwd or at.path))
        unsafe = any(a.name == "PYTHONSAFEPATH" for a in part.assignments)
        found.extend(_first_searched(program, words, root, pwd or at.path, at, unsafe_env=unsafe))
        if program in _SCRIPT_RUNNERS:
            found.extend(
                _package_script_paths(program, [w.value for w in words[1:]], root, pwd or at.path, at)
            )
        why = _env_file_paths(program, [w.value for w in words[1:]], root, found, resolved, at)
        if why is not None:
            return why
    passed = _wrapper_assigned(part)
    if name is not None and "/" not in name:
        found.extend(_on_path(name, root, at.path))
        words = words[1:]
    for index, word in enumerate(words):
        value = word.value
        if printed and id(word) in printed:
            continue  # a printed substitution (`hook_substitutions`): data, not a path run
        if id(word) in passed:
            continue  # read on the wrapped part, as its own assignment (`_wrapper_assigned`)
        name_part, eq, rest = word.raw.partition("=")
        if eq and name_part.isidentifier() and word is not part.argv[0]:
            # Another program's ``NAME=VALUE`` operand (``systemd-run -E``, ``chpst -e``, ``make``):
            # over-read as an environment it may pass (round 46), its value read as paths.
            from shellrt.analysis.models import Assignment, Word

            after = None if value is None else value.split("=", 1)[1]
            named = Assignment(name_part, word.raw, Word(rest, after, word.features))
            why = _assignment_paths(named, root, found, resolved, at)
            if why is not None:
                return why
            continue
        if index == module_at:
            continue  # the module's name: searched (`_first_searched`), not a path
        if value == "-m" and index + 1 < len(words):
            module, module_at = _MODULE_WHY, index + 1  # its operands are read on (``-m cProfile x.py``)
            continue
        if value is not None and value.startswith("-I") and len(value) > 2 and program in _INCLUDE_DIRS:
            # ``perl -Ilib``, ``ruby -Ilib``: a directory searched first for every module (round 53)
            from shellrt.analysis.models import Word

            word = Word(value[2:], value[2:], frozenset())
        elif value is not None and value.startswith("-"):
            if "=" not in value:
                continue
            option_value = value.split("=", 1)[1]
            if "/" not in option_value:
                continue
            from shellrt.analysis.models import Word

            word = Word(option_value, option_value, frozenset())
        why = _word_paths(
            word, root, found, resolved, at, dirs=program in _RUNS_DIRECTORIES or word is part.argv[0]
        )
        if why is not None:
            return why
    return module


#: Interpreters whose attached ``-I<dir>`` puts a directory first on their module search path.
_INCLUDE_DIRS = frozenset({"perl", "ruby"})


def _env_file_paths(
    program: str, values: list[str | None], root: Path, found: list[str], resolved: set[str], at: _Base
) -> str | None:
    """The environment files ``program`` reads by its options (``node --env-file=.env``), recorded,
    and what their lines name, read as the line's own assignments are (red team round 53)."""
    from shellrt.analysis.models import Assignment, Word

    for operand in env_file_operands(program, values):
        if operand is None:
            return "an environment file chosen at run time"
        path = os.path.join(at.path, os.path.expanduser(operand))
        rel = _inside(root, path)
        if rel is not None and rel != ".":
            found.append(rel)
        lines = env_file_lines(path)
        if lines is None:
            if _inside(root, at.path) is not None:
                found.append(WHOLE_WORKSPACE)  # what it sets cannot be read: it may name anything
            continue
        for name, value in lines:
            why = _assignment_paths(
                Assignment(name, value, Word(value, value, frozenset())), root, found, resolved, at
            )
            if why is not None:
                return why
    return None


def _wrapper_assigned(part: PlanCommand) -> set[int]:
    """The ids of ``part``'s words that a wrapper puts in its program's environment (``env
    NODE_PATH=lib node x.js``, ``sudo PYTHONPATH=. python3 x.py``, ``env -S'PYTHONPATH=lib …'``),
    as the analysis' one reader reads them (`wrappers.unwrap`, `env_args.read_env`; red team round
    51: a regex of this module's own read them before). The planner gives the wrapped part those
    words as its own assignments (read there by `_assignment_paths`), so the wrapper's copies are
    skipped; a wrapper the reader cannot read leaves every word to be read as a path."""
    from shellrt.analysis.programs.wrappers import WRAPPERS, unwrap

    argv = [w.value for w in part.argv]
    if not argv or os.path.basename(argv[0] or "") not in WRAPPERS:
        return set()
    got = unwrap([os.path.basename(argv[0] or ""), *argv[1:]], [w.raw for w in part.argv])
    return {id(part.argv[k]) for k in got.assigned if k < len(part.argv)}


def _assignment_paths(
    assignment: Assignment, root: Path, found: list[str], resolved: set[str], at: _Base
) -> str | None:
    """The workspace paths an environment assignment of the command makes it load (round 23).

    Every variable counts, not a list of known ones (``PYTHONPATH``, ``NODE_OPTIONS``,
    ``LD_PRELOAD``, ``RUBYLIB``, ``PERL5LIB``…): each part of the value that is not an option is
    read as a path, a directory is recorded whole, and one naming the workspace itself records
    the workspace tree. ``PWD`` (a server's cwd, `shellrt.permissions.server_lines`) inside the
    workspace records the tree too: toolchains search upward from their cwd (``npx`` runs
    ``node_modules/.bin``, ``uv run`` reads ``pyproject.toml``, ``python -m`` imports from it)."""
    word = assignment.value
    if word is None:
        return None
    value = word.value
    if value is None:
        value = _with_project_dir(word, at)
        if value is None:
            return f"{word.raw!r} cannot be resolved (a variable other than $CLAUDE_PROJECT_DIR)"
    if {"glob", "flag_glob", "brace", "brace_char"} & word.features:
        return f"{word.raw!r} expands to files chosen at run time"
    parts = [value] if assignment.name == "PWD" else _VALUE_PARTS.split(value)
    for part in parts:
        if not part or part.startswith("-"):
            continue
        rel = _inside(root, os.path.join(at.path, part))
        if rel is not None:
            found.append(WHOLE_WORKSPACE if rel == "." or assignment.name == "PWD" else rel)
    return None


def _word_paths(
    word: Word, root: Path, found: list[str], resolved: set[str], at: _Base, *, dirs: bool = True
) -> str | None:
    """Add the workspace path ``word`` names (if any) to ``found``; say why it cannot be resolved."""
    value = word.value
    if value is None and word.raw in resolved:
        return None  # the same source text, already resolved where the planner could read it
    if value is not None and ({"glob", "flag_glob", "brace", "brace_char"} & word.features):
        return f"{word.raw!r} expands to files chosen at run time"
    if value is not None and "tilde" in word.features:
        value = os.path.expanduser(value)
    if value is None:
        value = _with_project_dir(word, at)
        if value is None:
            return f"{word.raw!r} cannot be resolved (a variable other than $CLAUDE_PROJECT_DIR)"
        resolved.add(word.raw)
    if not value:
        return None
    rel = _inside(root, os.path.join(at.path, value))
    if rel is not None and rel != "." and (dirs or not os.path.isdir(os.path.join(root, rel))):
        found.append(rel)
    elif rel is None and (outside := _outside_named.get()) is not None:
        outside[os.path.realpath(os.path.join(at.path, value))] = None  # read by `outside_scripts`
    return None


def _with_project_dir(word: Word, at: _Base) -> str | None:
    """The value of a word whose only expansion is the project directory variable (or, when
    ``at.home``, ``$HOME``), else None."""
    pattern = _PROJECT_OR_HOME if at.home else _PROJECT_VAR
    found = pattern.findall(word.raw)
    if not word.features <= _RESOLVABLE or len(found) != 1:
        return None
    is_home = "HOME" in found[0] and "PROJECT_DIR" not in found[0]
    root = os.environ.get("HOME", "") if is_home else at.path
    if not os.path.isabs(root):
        return None  # an unset or relative HOME: not one known place
    if any(c in root for c in " \t\n*?[") and "quoted" not in word.features:
        return None  # split or globbed by the shell: not one path
    from shellrt.analysis import analyze

    replaced = pattern.sub(_PLACEHOLDER, word.raw)
    plan = analyze("echo " + replaced, "bash").plan
    if plan is None or len(plan.commands) != 1 or len(plan.commands[0].argv) != 2:
        return None
    value = plan.commands[0].argv[1].value
    if value is None or not value.startswith(_PLACEHOLDER) or value.count(_PLACEHOLDER) != 1:
        return None
    return root.rstrip(os.sep) + value[len(_PLACEHOLDER) :]


def _searched(program: str, args: list[str | None], root: Path, base: str) -> list[str]:
    """What a program named bare loads from the directory it runs in by itself (round 23): the
    manifests it reads (`content_anchor.MANIFESTS`: ``Makefile`` of ``make``, ``package.json`` of
    ``npm``) and the local binary a package runner prefers (``npx fmt`` runs
    ``node_modules/.bin/fmt``: a command planted one and the host's next hook ran it)."""
    from shellrt.permissions.content_anchor import MANIFESTS

    names = list(MANIFESTS.get(program, ()))
    if program in _NODE_RUNNERS or (program in _NODE_EXEC and args[:1] == ["exec"]):
        operands = [a for a in (args[1:] if program in _NODE_EXEC else args) if a and not a.startswith("-")]
        if operands:
            package = operands[0].rsplit("/", 1)[-1].split("@", 1)[0]  # @scope/fmt@1 -> fmt
            if package:
                names.append(os.path.join("node_modules", ".bin", package))
    out = []
    for name in names:
        rel = _inside(root, os.path.join(base, name))
        if rel is not None and rel != ".":
            out.append(rel)
    searches = (
        _loads_the_project(program, args)
        or loads_the_tree(program, args)
        or names_a_tree_loader(program, args)
    )
    if searches and _inside(root, base) is not None:
        out.append(WHOLE_WORKSPACE)  # a runner, or a tool that searches for code (rounds 47-48)
    return out


def _first_searched(
    program: str, words: Sequence[Word], root: Path, base: str, at: _Base, *, unsafe_env: bool = False
) -> list[str]:
    """The directory an interpreter takes code from by name before any other, when it lies in the
    workspace (`hook_tree_loaders.first_search_dir`, red team round 48): recorded whole, the
    workspace itself when it is the root (``python3 -m json.tool``, ``python3 check.py`` at the
    root, ``node -e``). ``words``: the command's argv; a script named through the project
    directory variable is resolved, and a script run by its own ``#!`` line is resolved as the
    command that line makes (`_shebang_paths`). An ``env`` prefix is read by `hook_shebang.
    env_prefix` (round 49), as a ``#!`` line's is; one it cannot read records the tree."""
    if not words:
        return []
    values = [w.value if w.value is not None else _with_project_dir(w, at) for w in words]
    if program == "env":
        # ``env -u PYTHONSAFEPATH python3 -m x``, ``env -i …``, ``env PYTHONSAFEPATH= …``: the
        # runner's value does not reach the program (its own part is planned without the wrapper).
        prefix = env_prefix(values[1:])
        if prefix.unknown is not None:
            return [WHOLE_WORKSPACE] if _inside(root, base) is not None else []
        unsafe_env = unsafe_env or prefix.clears_safe_path
        if not unsafe_env or not prefix.argv or prefix.argv[0] is None:
            return []
        values = prefix.argv
        program = os.path.basename(values[0] or "")
    first: str | None = None
    name = values[0]
    if not is_interpreter(program) and ("/" in (name or "") or words[0].value is None):
        if name is not None and (rel := _inside(root, os.path.join(base, name))) is not None:
            head = read_regular(os.path.join(root, rel), SHEBANG_BYTES) or b""
            line = shebang(head)
            if line is not None:
                script = os.path.realpath(os.path.join(root, rel))
                return _shebang_paths(line, script, root, base, at, unsafe_env=unsafe_env)
    else:
        safe = not unsafe_env and program.startswith(("python", "pypy")) and safe_path_holds(name or "", base)
        if other_interpreter_loads(program, values[1:], base) and _inside(root, base) is not None:
            return [WHOLE_WORKSPACE]  # a Perl/Ruby/PHP script's relative loads start at the cwd (round 53)
        first = first_search_dir(program, values[1:], safe_path=safe)
    if first is None:
        return []
    rel = _inside(root, os.path.realpath(os.path.join(base, first)))
    if rel is None or (rel != "." and first != "."):
        return []  # a script's own directory below the root is watched whole already (round 40)
    return [WHOLE_WORKSPACE if rel == "." else rel]


#: ``#!`` lines followed through scripts they name (Linux follows 4 levels), at most.
_MAX_SHEBANG_DEPTH = 4
_shebang_depth: ContextVar[int] = ContextVar("shellrt_hook_shebang_depth", default=0)
#: Files outside the workspace a hook line names (absolute, real paths), while `hook_files` reads
#: one: the operator's own scripts (``python3 ~/.claude/hooks/fmt.py``), read for what they load
#: and start from the workspace (`outside_scripts`).
_outside_named: ContextVar[dict[str, None] | None] = ContextVar("shellrt_hook_outside_named", default=None)


def _shebang_paths(
    line: list[str], script: str, root: Path, base: str, at: _Base, *, unsafe_env: bool
) -> list[str]:
    """What the workspace script ``script`` run by its path loads through its ``#!`` line (words
    ``line``): the command that line makes (``env -S PYTHONPATH=lib python3.11 -E`` and the
    script) resolved as a hook's own line (its assignments, paths, searching tools, the directory
    its interpreter searches first), the runner's ``PYTHONSAFEPATH`` dropped where the caller's
    or the line's ``env`` drops it (red team round 49). One that cannot be read records the tree."""
    import shlex

    prefix = shebang_program(line)
    depth = _shebang_depth.get()
    if prefix.unknown is not None or not prefix.argv or prefix.argv[0] is None or depth >= _MAX_SHEBANG_DEPTH:
        return [WHOLE_WORKSPACE] if _inside(root, base) is not None else []
    cleared = ["-u", SAFE_PATH_VAR] if unsafe_env or prefix.clears_safe_path else []
    command = shlex.join(["env", *cleared, *prefix.assignments, *[w or "" for w in prefix.argv], script])
    token = _shebang_depth.set(depth + 1)
    try:
        found, why = _command_paths(command, root, {}, at if base == at.path else _Base(base, at.home))
    finally:
        _shebang_depth.reset(token)
    if why is not None and why != _MODULE_WHY:
        found.append(WHOLE_WORKSPACE)
    return found


#: Project runners and the subcommands that load the project they run in by search (round 24):
#: ``uv run ruff`` runs ``.venv/bin/ruff`` and imports the editable project, ``poetry run`` /
#: ``pdm run`` likewise, ``bundle`` evaluates the ``Gemfile`` (Ruby) and its ``path:`` gems,
#: ``go run``/``test``/``generate`` compile the module (and run its ``//go:generate`` lines),
#: ``cargo`` runs ``build.rs`` and proc macros. None of them is bounded by named files.
_PROJECT_RUNNERS: dict[str, frozenset[str] | None] = {
    "uv": frozenset({"run", "sync"}),
    "poetry": frozenset({"run", "install", "build"}),
    "pipenv": frozenset({"run", "install", "sync"}),
    "pdm": frozenset({"run", "install", "sync"}),
    "hatch": None,  # every command may build its environment (the project's build hooks, round 48)
    "rye": frozenset({"run", "sync"}),
    "bundle": None,  # every subcommand evaluates the Gemfile
    "go": frozenset({"run", "test", "generate"}),
    "cargo": frozenset({"run", "test", "build", "check", "clippy", "bench"}),
    # Every subcommand reads the project's own configuration as code (round 46): yarn a
    # ``.yarnrc.yml``'s ``yarnPath`` release and plugins, Yarn PnP's ``.pnp.cjs`` and
    # ``.yarn/cache``; bun a ``bunfig.toml``'s ``preload`` scripts.
    "yarn": None,
    "yarnpkg": None,
    "bun": None,
}
#: Package managers whose ``run``/``test``/… runs a ``package.json`` script line (round 46).
_SCRIPT_RUNNERS = frozenset({"npm", "pnpm"})
#: Script lines followed into scripts they run (``npm run a`` running ``npm run b``), at most.
_MAX_SCRIPT_DEPTH = 8
_script_depth: ContextVar[int] = ContextVar("shellrt_hook_script_depth", default=0)


def _package_script_paths(
    program: str, args: list[str | None], root: Path, base: str, at: _Base
) -> list[str]:
    """What the ``package.json`` script lines ``program args`` runs load (`hook_package_scripts`):
    each line resolved as a hook command run from ``base``, and each bare program of it as the
    ``node_modules/.bin`` entry npm finds first on the script's ``PATH`` (a node tool: the whole
    ``node_modules`` is recorded for it). A line that cannot be resolved, or a subcommand that
    runs more than lines (an install), records the whole workspace (fail closed)."""
    from shellrt.analysis import analyze
    from shellrt.permissions.hook_package_scripts import BIN_DIR, script_lines

    if _inside(root, base) is None:
        return []
    lines = script_lines(program, args, base)
    depth = _script_depth.get()
    if lines is None or depth >= _MAX_SCRIPT_DEPTH:
        return [WHOLE_WORKSPACE]
    out: list[str] = []
    token = _script_depth.set(depth + 1)
    try:
        for line in lines:
            paths, why = _command_paths(line, root, {}, _Base(base, at.home))
            if why is not None:
                return [WHOLE_WORKSPACE]
            out += paths
            plan = analyze(line, "bash").plan
            for part in plan.commands if plan is not None else ():
                name = part.argv[0].value if part.argv else None
                if name and "/" not in name and (rel := _inside(root, os.path.join(base, BIN_DIR, name))):
                    out.append(rel)
    finally:
        _script_depth.reset(token)
    return out


#: The word a command line read from a hook script has where its operand is chosen at run time
#: (`hook_loads_python`, `hook_node_packages.started_commands`).
_STARTED_ARG = "SHELLRTHOOKARG"


def _searched_by_part(
    root: Path, at: _Base, part: PlanCommand, base: str, started: bool = False
) -> list[str]:
    """What one command of a hook's shell script loads by its program's own search, run from
    ``base`` (`_searched`, ``package.json`` script lines, and its environment assignments), as the
    hook's own command line is read (red team round 47: ``pytest``, ``make``, ``uv run``, ``npx``
    inside ``.claude/hooks/check.sh`` recorded nothing). ``started``: a command line a Python or
    node hook script starts: the files its words name are recorded too, as a hook line's are, and
    one it cannot resolve records the tree (round 50: ``subprocess.run(["python3", "tools/w.py"])``,
    ``fork("./tools/w.js")`` ran a command's file unrecorded; a shell script's own words are read
    by `hook_loads`)."""
    if started:
        named: list[str] = []
        why = _part_paths(part, root, named, set(), _Base(base, at.home))
        program = os.path.basename(part.argv[0].value or "") if part.argv else ""
        runs_operand = is_interpreter(program) or program in _RUNS_DIRECTORIES
        chosen = runs_operand and any(_STARTED_ARG in (w.value or w.raw) for w in part.argv[1:])
        if (chosen or (why is not None and why != _MODULE_WHY)) and _inside(root, base) is not None:
            named.append(
                WHOLE_WORKSPACE
            )  # ``subprocess.run(["python3", sys.argv[1]])``: a script chosen at run time
        searched = _searched_by_part(root, at, part, base)
        return searched + [p for p in named if p not in searched]
    if not part.argv or part.argv[0].value is None:
        return []
    program = os.path.basename(part.argv[0].value)
    args = [w.value for w in part.argv[1:]]
    found = _searched(program, args, root, base)
    unsafe = any(a.name == "PYTHONSAFEPATH" for a in part.assignments)
    found += _first_searched(program, part.argv, root, base, _Base(base, at.home), unsafe_env=unsafe)
    if program in _SCRIPT_RUNNERS:
        found += _package_script_paths(program, args, root, base, at)
    for assignment in part.assignments:
        value = assignment.value.value if assignment.value is not None else ""
        if value is not None and "/" not in value and value not in (".", ".."):
            continue  # ``LC_ALL=C sort``: no path (the hook's own line reads every part as one)
        if _assignment_paths(assignment, root, found, set(), _Base(base, at.home)) is not None:
            found.append(WHOLE_WORKSPACE)  # a value chosen at run time: fail closed
    return found


def _loads_the_project(program: str, args: list[str | None]) -> bool:
    """Whether ``program args`` loads the project around its cwd by search (`_PROJECT_RUNNERS`);
    an unresolvable word counts (fails closed)."""
    if program not in _PROJECT_RUNNERS:
        return False
    subcommands = _PROJECT_RUNNERS[program]
    if subcommands is None:
        return True
    # Any word, not the first operand: an option's value (``uv --project p run``) stands before it.
    return any(a is None or a in subcommands for a in args)


#: Package runners that run a project's local binary first (``npx fmt``), and package managers
#: whose ``exec`` does.
_NODE_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_NODE_EXEC = frozenset({"npm", "pnpm", "yarn", "bun"})


def _on_path(name: str, root: Path, base: str) -> list[str]:
    """Where a bare program name would be found inside the workspace through ``$PATH``."""
    dirs = _path_dirs_inside(os.environ.get("PATH", ""), str(root), base)
    return [os.path.normpath(os.path.join(d, name)) for d in dirs]


@functools.lru_cache(maxsize=64)
def _path_dirs_inside(path_env: str, root: str, base: str) -> tuple[str, ...]:
    """The ``$PATH`` entries that lie in the workspace (relative ones are read from ``base``,
    where hooks run)."""
    out = []
    for entry in path_env.split(os.pathsep):
        rel = _inside(Path(root), os.path.join(base, entry or "."))
        if rel is not None:
            out.append(rel)
    return tuple(out)


def _inside(root: Path, value: str) -> str | None:
    """``value`` (relative to ``root``) as a workspace-relative path, when it lies in the workspace."""
    absolute = os.path.normpath(os.path.join(root, value))
    base = str(root)
    if absolute == base:
        return "."
    if absolute.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, base)
    real = os.path.realpath(absolute)  # a link outside pointing in: what runs is workspace content
    if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(real, base)
    return None


# --- digests ----------------------------------------------------------------------------


def workspace_tree_digest(root: Path) -> str | None:
    """``sha256:…`` of ``root``'s whole tree but ``.git`` (the record of a server that loads it
    whole); another value when it is absent, unreadable or too large to vouch for."""
    return _digest(Path(os.path.realpath(root)), WHOLE_WORKSPACE)


def _digest(root: Path, rel: str) -> str | None:
    """``sha256:…`` of a file or of a directory tree; None when absent; ``outside:…`` out of it.
    Every digest comes from the active shared digests when there are (`shellrt.permissions.
    start_digests`): the session start's while its records are taken (the whole tree hashed once
    for them all, round 26), one check's before a hook runs (its workspace record and its
    writable roots' record hashed a hook's node packages each: twice per run, round 45)."""
    if (memo := active_digests()) is not None:
        # The whole tree by the root's path alone (as the start's records share it); any other
        # path with a NUL between, which no path holds.
        key = str(root) if rel == WHOLE_WORKSPACE else f"{root}\0{rel}"
        return memo.digest(key, lambda: _digest_now(root, rel))
    return _digest_now(root, rel)


def _digest_now(root: Path, rel: str) -> str | None:
    if rel == ROOT_FILES:  # the root's own entries, not its subdirectories
        return _root_files_digest(root)
    return _path_digest(root, rel)


def _path_digest(root: Path, rel: str) -> str | None:
    path = os.path.join(root, rel)
    real = os.path.realpath(path)
    base = str(root)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        return OUTSIDE_PREFIX + real
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable:{exc.strerror}"
    h = hashlib.sha256()
    if stat.S_ISDIR(st.st_mode):
        # The whole workspace but git's own directory, which every fetch and commit changes
        # (and no server loads as code; commands cannot write its config or hooks).
        if not _hash_tree(Path(real), h, skip=".git" if rel == WHOLE_WORKSPACE else None):
            return _TOO_LARGE
    elif stat.S_ISREG(st.st_mode):
        if st.st_size > MAX_HASHED_BYTES or not _hash_file(real, h):
            return "unreadable"
    else:
        return "not-a-file"
    return "sha256:" + h.hexdigest()


def _root_files_digest(root: Path) -> str:
    """``sha256:…`` of the workspace root's own entries (names and kinds; the content of its
    regular files; link targets), not of its subdirectories' contents."""
    h = hashlib.sha256()
    hashed = 0
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        return f"unreadable:{exc.strerror}"
    if len(names) > MAX_TREE_ENTRIES:
        return _TOO_LARGE
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        h.update(
            f"\0{name}\0{stat.S_IFMT(st.st_mode)}\0{st.st_mode & 0o111}\0".encode("utf-8", "surrogateescape")
        )
        if stat.S_ISLNK(st.st_mode):
            h.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            if not _hash_link_target(path, str(root), None, h):
                return _TOO_LARGE
        elif stat.S_ISREG(st.st_mode):
            hashed += st.st_size
            if hashed > MAX_HASHED_BYTES:
                return _TOO_LARGE
            if not _hash_entry_content(path, h):
                return "unreadable"
    return "sha256:" + h.hexdigest()


def _hash_link_target(link: str, top: str, skip: str | None, h: Any) -> bool:
    """What a link of a hashed tree leads to when the tree's own hash does not cover it (out of
    ``top``, or into its ``skip``: ``.git``): the target's path and its content, ``absent``
    when dangling; False (not vouched for) for a directory or anything else there. Round 25: a
    repository's ``sitecustomize.py -> .git/site.py`` kept the workspace's digest while a
    command wrote the target, and the next session's server imported it."""
    real = os.path.realpath(link)
    left = [os.path.join(top, skip)] if skip is not None else []
    inside = real == top or real.startswith(top.rstrip(os.sep) + os.sep)
    if inside and not any(real == s or real.startswith(s + os.sep) for s in left):
        return True  # hashed where it is
    h.update(b"\0->" + real.encode("utf-8", "surrogateescape") + b"\0")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        h.update(b"absent")
        return True
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HASHED_BYTES:
        return False
    return _hash_entry_content(real, h)


def _hash_entry_content(path: str, h: Any) -> bool:
    """A tree entry's content as its own SHA-256 (32 bytes): raw content fed into the tree's hash
    had no end, so a file holding the next entry's header and a payload hashed as that file cut
    short plus a new file (red team round 25: a hostile repository's data file, split by a command
    into ``sitecustomize.py``, kept the workspace's digest)."""
    inner = hashlib.sha256()
    if not _hash_file(path, inner):
        return False
    h.update(inner.digest())
    return True


def _hash_file(path: str, h: Any) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return False
        while chunk := fh.read(1 << 16):
            h.update(chunk)
    return True


def _hash_tree(top: Path, h: Any, skip: str | None = None) -> bool:
    """Names, kinds, link targets and contents of everything below ``top`` (but its entry
    ``skip``); False above the bounds, and when any of it cannot be read: ``os.walk`` skipped a
    directory it could not list, whose files a host program still opens by name (round 25)."""
    entries = 0
    hashed = 0
    unlisted: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(top, onerror=unlisted.append, followlinks=False):
        if unlisted:
            return False
        if skip is not None and dirpath == str(top):
            dirnames[:] = [d for d in dirnames if d != skip]
            filenames = [f for f in filenames if f != skip]
        dirnames.sort()
        for name in sorted([*dirnames, *filenames]):
            entries += 1
            if entries > MAX_TREE_ENTRIES:
                return False
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top)
            try:
                st = os.lstat(path)
            except OSError:  # gone or swapped while hashed: not vouched for
                return False
            h.update(
                f"\0{rel}\0{stat.S_IFMT(st.st_mode)}\0{st.st_mode & 0o111}\0".encode(
                    "utf-8", "surrogateescape"
                )
            )
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(path).encode("utf-8", "surrogateescape"))
                if not _hash_link_target(path, str(top), skip, h):
                    return False
            elif stat.S_ISREG(st.st_mode):
                hashed += st.st_size
                if hashed > MAX_HASHED_BYTES or not _hash_entry_content(path, h):
                    return False
    return not unlisted
