"""What a trusted shell hook script loads by a path, resolved as the running hook resolves it.

Why: trust records the files a hook *command* names and their directories, but a script
``scripts/x.sh`` that runs ``. ./lib.sh`` or ``source lib/x.sh`` loads those relative to the
hook's working directory (the workspace root), not beside itself: a command could rewrite
``lib.sh`` and the trusted hook ran it on the host. So each shell script a hook runs is
parsed (never matched by regex), and what it sources, runs by a path, or hands to an
interpreter is resolved against every directory it may be working in: the workspace root,
and what its ``cd``s name. Those files join the hook's files (their directories are then
recorded whole, bounded, by `shellrt.permissions.hook_files`); a sourced file is a shell
script and is read the same way.

A load whose path is chosen at run time (a variable other than the project directory or the
script's own directory, a command substitution, a ``cd`` to such a place before a relative
load) cannot be bounded: it is reported, and the settings file is never trusted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from shellrt.permissions.hook_loads_python import PythonLoads, is_python_script, module_paths, python_loads
from shellrt.permissions.hook_read import read_regular
from shellrt.permissions.hook_shebang import drops_safe_path, shebang, shebang_program, without_safe_path

if TYPE_CHECKING:
    from shellrt.analysis.models import PlanCommand, Word

#: What one command of a shell script loads by its program's own search, run from a directory
#: (`shellrt.permissions.hook_files` resolves a hook's command line so): workspace-relative paths.
#: ``(part, base, started)``: ``started`` when the part is a command line a hook script starts (its
#: words name files it runs: read as a hook's own line's are, round 50), not a shell script's part.
PartResolver = Callable[["PlanCommand", str, bool], list[str]]

__all__ = [
    "MAX_SCANNED_SCRIPTS",
    "SHELLS",
    "PartResolver",
    "ScriptKind",
    "ScriptLoads",
    "is_shell_script",
    "script_kind",
    "script_loads",
    "started_loads",
]

#: Programs that run their operand as a shell script.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
#: Programs whose first operand is a script they run (besides the shells).
_INTERPRETERS = frozenset({"python", "python3", "node", "deno", "bun", "ruby", "perl", "php"})
#: Scripts read per settings file; more cannot be vouched for.
MAX_SCANNED_SCRIPTS = 64
#: Bytes read of one script; a larger one cannot be vouched for.
MAX_SCRIPT_BYTES = 1 << 20
_LOADERS = frozenset({"source", "."})
_DIR_CHANGERS = frozenset({"cd", "pushd"})
#: Spellings of the running script's directory: ``$0`` is the hook script, ``BASH_SOURCE`` the
#: file being read (a sourced one).
_ZERO_DIR = re.compile(
    r'\$\(\s*(?:cd\s+)?(?:dirname|realpath)\s+(?:--\s+)?"?\$(?:0|\{0\})"?\s*(?:&&\s*pwd\s*)?\)|\$\{0%/\*\}'
)
_SOURCE_DIR = re.compile(
    r'\$\(\s*(?:cd\s+)?(?:dirname|realpath)\s+(?:--\s+)?"?\$(?:BASH_SOURCE|\{BASH_SOURCE(?:\[0\])?\})"?'
    r"\s*(?:&&\s*pwd\s*)?\)|\$\{BASH_SOURCE(?:\[0\])?%/\*\}"
)
_PROJECT = re.compile(
    r"\$(?:\{(?:CLAUDE|SHELLRT)_PROJECT_DIR\}|(?:CLAUDE|SHELLRT)_PROJECT_DIR(?![A-Za-z0-9_]))"
)
_PLACEHOLDER = "SHELLRTHOOKLOADBASE"


@dataclass
class ScriptLoads:
    """Workspace paths the scanned scripts load, and the loads that cannot be bounded."""

    paths: list[str] = field(default_factory=list)
    unbounded: list[str] = field(default_factory=list)
    #: Files outside the workspace the scripts source or run (absolute, real), by how they are read:
    #: the operator's own helpers, read in turn by the caller (red team round 53).
    outside: dict[str, ScriptKind | None] = field(default_factory=dict)


def is_shell_script(path: str) -> bool:
    """A ``#!`` line naming a shell, or no ``#!`` line and a ``.sh``/``.bash`` name."""
    head = read_regular(path, 256)
    if head is None:
        return False
    line = shebang(head)
    if line is not None:  # read as every hook reader reads it (round 49: ``env -S bash -e``)
        program = shebang_program(line).argv
        return bool(program) and os.path.basename(program[0] or "") in SHELLS
    return path.endswith((".sh", ".bash"))


#: How a file a hook runs is read for what it loads.
ScriptKind = Literal["shell", "python"]


def script_kind(root: Path, rel: str, hint: ScriptKind | None = None) -> ScriptKind | None:
    """``hint`` (the program it was given to), else what its name and ``#!`` line say; None: neither."""
    if hint is not None:
        return hint
    path = os.path.join(root, rel)
    if is_shell_script(path):
        return "shell"
    head = read_regular(path, 256)
    if head is not None and is_python_script(path, head):
        return "python"
    return None


def script_loads(
    root: Path,
    scripts: dict[str, ScriptKind],
    *,
    cwd: Path | None = None,
    resolve: PartResolver | None = None,
    hook_args: bool = False,
) -> ScriptLoads:
    """What ``scripts`` (files relative to ``root``, by kind) load, transitively, when the hook
    runs from ``cwd`` (default ``root``; also the project directory). ``resolve``: what each
    command of a shell script loads by its program's search (manifests, ``npx``'s local binary,
    project runners, tools that search for code: red team round 47, applied before to the hook's
    own command line only). ``hook_args``: the scripts' positional parameters are the hook line's
    own words, read there (the operator's scripts outside the workspace, an interpreter shim's
    ``exec python3 "$@"``: red team round 53)."""
    out = ScriptLoads()
    queue: list[tuple[str, str, ScriptKind]] = [(rel, rel, kind) for rel, kind in scripts.items()]
    seen: set[str] = set()
    python = PythonLoads()  # sys.path is one per process: every file's additions serve every import
    while queue:
        while queue:
            rel, top, kind = queue.pop(0)
            if rel in seen:
                continue
            seen.add(rel)
            if len(seen) > MAX_SCANNED_SCRIPTS:
                out.unbounded.append(f"more than {MAX_SCANNED_SCRIPTS} hook scripts load one another")
                return out
            loads = (
                _one_script(root, rel, top, out, cwd or root, resolve, hook_args)
                if kind == "shell"
                else _one_python(root, rel, out, python, cwd or root, resolve)
            )
            _add(root, out, queue, loads, top)
        paths, unbounded = module_paths(python.import_dirs, python.modules)
        out.unbounded += [u for u in unbounded if u not in out.unbounded]
        _add(root, out, queue, _python_found(root, paths), "")
    return out


def _add(
    root: Path,
    out: ScriptLoads,
    queue: list[tuple[str, str, ScriptKind]],
    loads: list[tuple[str, ScriptKind | None]],
    top: str,
) -> None:
    for found, found_kind in loads:
        if found not in out.paths:
            out.paths.append(found)
            if found_kind is not None and os.path.isfile(os.path.join(root, found)):
                queue.append((found, top, found_kind))  # absent candidates (``lib/os.py``) are not read


def _one_python(
    root: Path,
    rel: str,
    out: ScriptLoads,
    python: PythonLoads,
    cwd: Path,
    resolve: PartResolver | None = None,
) -> list[tuple[str, ScriptKind | None]]:
    data = read_regular(os.path.join(root, rel), MAX_SCRIPT_BYTES + 1)
    if data is None:
        return []
    if len(data) > MAX_SCRIPT_BYTES:
        out.unbounded.append(f"hook script {rel} is over {MAX_SCRIPT_BYTES >> 20} MiB, too large to read")
        return []
    loads = python_loads(root, rel, data)
    out.unbounded += [u for u in loads.unbounded if u not in out.unbounded]
    python.import_dirs += [d for d in loads.import_dirs if d not in python.import_dirs]
    python.modules |= loads.modules
    return _python_found(root, loads.paths) + started_loads(
        loads.commands, cwd, resolve, cleared=loads.cleared, cwds=loads.cwds
    )


def started_loads(
    lines: list[str],
    cwd: Path,
    resolve: PartResolver | None,
    *,
    cleared: set[str] | None = None,
    cwds: dict[str, str | None] | None = None,
) -> list[tuple[str, ScriptKind | None]]:
    """What the tools a hook script starts (command lines read from it) load by their own search,
    run from ``cwd``: each line planned and its commands resolved as a hook's own line (round 47).
    ``cleared``: lines started with an environment the script made, without the runner's
    ``PYTHONSAFEPATH`` (round 49): each of their commands is resolved as if it were unset. ``cwds``:
    lines started in another directory, resolved from there; one chosen at run time (None) records
    the tree (``"."``, `hook_files.WHOLE_WORKSPACE`)."""
    if resolve is None:
        return []
    from shellrt.analysis import analyze

    found: list[tuple[str, ScriptKind | None]] = []
    for line in lines:
        where = (cwds or {}).get(line, str(cwd))
        if where is None:
            found += [(".", None)] if all(f != "." for f, _ in found) else []
            continue
        plan = analyze(line, "bash").plan
        parts = plan.commands if plan is not None else []
        dropped = bool(cleared and line in cleared) or drops_safe_path(parts)
        for part in parts:
            part = without_safe_path(part) if dropped else part
            found += [(p, None) for p in resolve(part, where, True) if all(p != f for f, _ in found)]
    return found


def _python_found(root: Path, paths: list[str]) -> list[tuple[str, ScriptKind | None]]:
    found: list[tuple[str, ScriptKind | None]] = []
    for path in paths:
        inside = _inside(root, path)
        if inside is not None and all(inside != f for f, _ in found):
            found.append((inside, "python" if inside.endswith(".py") else None))
    return found


def _one_script(
    root: Path,
    rel: str,
    top: str,
    out: ScriptLoads,
    cwd: Path,
    resolve: PartResolver | None = None,
    hook_args: bool = False,
) -> list[tuple[str, ScriptKind | None]]:
    """(path, how it is read) for each load of the shell script ``rel``; problems go to ``out``."""
    from shellrt.analysis import analyze

    data = read_regular(os.path.join(root, rel), MAX_SCRIPT_BYTES + 1)
    if data is None:
        return []  # absent, unreadable or not a file: its digest says so
    if len(data) > MAX_SCRIPT_BYTES:
        out.unbounded.append(f"hook script {rel} is over {MAX_SCRIPT_BYTES >> 20} MiB, too large to read")
        return []
    analysis = analyze(data.decode("utf-8", "surrogateescape"), "bash")
    plan = analysis.plan
    if not analysis.parse_ok or plan is None or plan.syntax_errors:
        out.unbounded.append(f"hook script {rel} cannot be parsed")
        return []
    dirs = {
        "$0": os.path.join(root, os.path.dirname(top)),
        "source": os.path.join(root, os.path.dirname(rel)),
        "project": str(cwd),
    }
    bases, moved_to_unknown = [str(cwd)], None
    loads: list[tuple[Word, bool]] = []
    searched: list[str] = []
    dropped = drops_safe_path(plan.commands)  # anywhere in the script: for every command (round 50)
    for part in plan.commands:
        argv = list(part.argv)
        if not argv:
            continue
        name = argv[0].value
        part = without_safe_path(part) if dropped else part
        if resolve is not None:
            # From every directory the script may be in here (a ``cd`` to one chosen at run time:
            # the root and the known ones; such a load is read as the tool's search of the root).
            searched += [
                p for base in dict.fromkeys(bases) for p in resolve(part, base, False) if p not in searched
            ]
        if name in _DIR_CHANGERS:
            target = next((w for w in argv[1:] if w.value != "--"), None)
            where = _value(target, root, dirs) if target is not None else None
            if where is None or where.startswith(("-", "~")):
                moved_to_unknown = f"`{name} {target.raw}`" if target is not None else f"`{name}`"
            else:
                bases.append(os.path.join(cwd, where))
            continue
        if name in _LOADERS:
            operand = next((w for w in argv[1:] if w.value != "--"), None)
            if operand is not None:
                loads.append((operand, True))
            continue
        if name is None or "/" in name:
            loads.append((argv[0], _is_shell_name(name)))
        program = os.path.basename(name or "")
        if program in SHELLS or program in _INTERPRETERS:
            operand = _script_operand(argv[1:])
            if operand is not None:
                loads.append((operand, program in SHELLS))
    found: list[tuple[str, ScriptKind | None]] = [(p, None) for p in searched]
    for word, is_shell in loads:
        if hook_args and word.raw in _HOOK_ARGS:
            continue  # the hook line's own words, read where the line is
        value = _value(word, root, dirs)
        if value is None:
            out.unbounded.append(f"hook script {rel} loads {word.raw!r}, a path chosen at run time")
            continue
        if not os.path.isabs(value) and moved_to_unknown is not None:
            out.unbounded.append(
                f"hook script {rel} loads {word.raw!r} relative to a directory chosen at run time "
                f"({moved_to_unknown})"
            )
            continue
        for base in bases if not os.path.isabs(value) else [str(root)]:
            inside = _inside(root, os.path.join(base, value))
            if inside is not None and all(inside != f for f, _ in found):
                found.append((inside, script_kind(root, inside, "shell" if is_shell else None)))
            elif inside is None and os.path.isfile(there := os.path.realpath(os.path.join(base, value))):
                out.outside.setdefault(there, "shell" if is_shell else None)
    return found


#: A script's positional parameters passed on whole.
_HOOK_ARGS = frozenset({'"$@"', "$@", '"$*"', "$*", '"${@}"', "${@}"})


def _is_shell_name(name: str | None) -> bool:
    """A program path a shell reads as a script by its name alone."""
    return name is not None and name.endswith((".sh", ".bash"))


def _script_operand(words: list[Word]) -> Word | None:
    """An interpreter's script operand: its first word that is not an option (None: ``-c``/``-m``/``-e``)."""
    for word in words:
        value = word.value
        if value is not None and value.startswith("-"):
            if value in ("-c", "-m", "-e", "-r", "--eval", "--command"):
                return None
            continue
        return word
    return None


def _value(word: Word, root: Path, dirs: dict[str, str]) -> str | None:
    """The word's value with the script's and the project's directory spelled out; None when
    something else is chosen at run time."""
    if word.value is not None:
        if {"glob", "flag_glob", "brace", "brace_char"} & word.features:
            return None
        return os.path.expanduser(word.value) if "tilde" in word.features else word.value
    raw = word.raw
    replaced = _ZERO_DIR.sub(_PLACEHOLDER + "0", raw)
    replaced = _SOURCE_DIR.sub(_PLACEHOLDER + "S", replaced)
    replaced = _PROJECT.sub(_PLACEHOLDER + "P", replaced)
    if replaced == raw:
        return None
    from shellrt.analysis import analyze

    plan = analyze("echo " + replaced, "bash").plan
    if plan is None or len(plan.commands) != 1 or len(plan.commands[0].argv) != 2:
        return None
    value = plan.commands[0].argv[1].value
    if value is None or value.count(_PLACEHOLDER) != 1 or not value.startswith(_PLACEHOLDER):
        return None
    kind, rest = value[len(_PLACEHOLDER)], value[len(_PLACEHOLDER) + 1 :]
    base = {"0": dirs["$0"], "S": dirs["source"], "P": dirs["project"]}[kind]
    return base + rest


def _inside(root: Path, absolute: str) -> str | None:
    """``absolute`` as a workspace-relative path when it lies in the workspace (as written or resolved)."""
    base = str(root).rstrip(os.sep) + os.sep
    candidate = os.path.normpath(absolute)
    if not candidate.startswith(base):
        candidate = os.path.realpath(absolute)  # a link outside pointing in: what runs is workspace content
    return os.path.relpath(candidate, base) if candidate.startswith(base) else None
