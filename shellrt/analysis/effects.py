"""What a plan writes, and whether it looks destructive (a UI hint, not a boundary).

Writes are reported for the permission engine ("writes outside the workspace
ask"). When a command might write somewhere we cannot name statically,
``writes_unknown`` is set: unknown means unknown, never "nothing".
"""

from __future__ import annotations

from typing import Final

from .nodes import CommandPlan, PlanCommand, Word, is_fd_number
from .programs import program_spec
from .programs.paths import WRITING_PROGRAMS, program_writes
from .programs.wrappers import program_name

__all__ = ["OPERAND_WRITERS", "Effects", "copies_tree", "operand_unknown", "plan_effects"]

_OUTPUT_OPS: Final = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&", "&>|"})
#: Programs whose every operand (not option) is a path they create/modify/remove.
_ALL_OPERANDS: Final = frozenset({"touch", "mkdir", "rm", "rmdir", "shred", "truncate", "unlink", "chmod", "chown",
                           "chgrp", "tee"})
#: Programs whose last operand is the destination.
_LAST_OPERAND: Final = frozenset({"cp", "mv", "ln", "install", "rsync", "scp"})
_MODE_FIRST: Final = frozenset({"chmod", "chown", "chgrp"})
#: Programs whose operands name what they write.
OPERAND_WRITERS: Final = _ALL_OPERANDS | _LAST_OPERAND


def operand_unknown(name: str, words: list[Word]) -> bool:
    """Whether a writer's operand words (``name`` in `OPERAND_WRITERS`) may write a file no word names
    (round 39): a run-time word that may be an option (``cp "$o" q``: ``-t DIR``), a run-time, globbed or
    brace-expanded destination (``cp q "$p"``, ``tee .git/hooks/{pre-commit,x}``; every operand of
    ``tee``, ``touch``…). ``cp -- "$x" q`` writes ``q``. The part's writes then hold ""."""
    ended = False
    last: Word | None = None
    for word in words:
        value = word.value
        if not ended and value == "--" and not word.features:
            ended = True
            continue
        unknown = value is None or not _EXPANDED.isdisjoint(word.features)
        if not ended and ("flag_glob" in word.features or (value is None and _may_be_option(word.raw))):
            return True
        if unknown and name in _ALL_OPERANDS:
            return True
        last = word
    return name in _LAST_OPERAND and last is not None and (last.value is None or not _EXPANDED.isdisjoint(last.features))


_EXPANDED: Final = frozenset({"glob", "flag_glob", "brace"})


def copies_tree(words: list[Word]) -> bool:
    """Whether ``cp`` copies directories whole (``-r``, ``-R``, ``-a``, ``--recursive``, ``--archive``,
    a run-time word that may be one): what lands below the destination is named by the source tree, as an archive's
    members are (``cp -r payload/. .`` writes ``.git/hooks/pre-commit``; round 39, review13)."""
    for word in words:
        value = word.value
        if value is None:
            if _may_be_option(word.raw):
                return True
            continue
        if value == "--":
            return False
        if value.startswith("--"):
            option = value[2:].partition("=")[0]
            if len(option) >= 3 and ("recursive".startswith(option) or "archive".startswith(option)):
                return True
        elif value.startswith("-") and not {"r", "R", "a"}.isdisjoint(value[1:]):
            return True
    return False


def _may_be_option(raw: str) -> bool:
    """Whether a run-time word may begin with ``-``: its first character (quotes aside) is not static."""
    first = raw.lstrip("\"'")[:1]
    return first in ("", "$", "`", "-", "\\")


class Effects:
    """Static write targets, an unknown-writes flag and destructive reasons.

    A plain class (mypyc compiles its ``__init__``; a dataclass's is generated at run time).
    """

    __slots__ = ("destructive", "write_targets", "writes_unknown")

    def __init__(self, write_targets: list[str], writes_unknown: bool, destructive: list[str]) -> None:
        self.write_targets = write_targets
        self.writes_unknown = writes_unknown
        self.destructive = destructive


def plan_effects(plan: CommandPlan, read_only: bool) -> Effects:
    """Collect writes and destructive hints for ``plan``."""
    effects = Effects([], False, [])
    for redirect in plan.redirects:
        if redirect.kind != "file" or redirect.op not in _OUTPUT_OPS:
            continue
        target = redirect.target
        if target is None:
            continue
        if target.value is None:
            effects.writes_unknown = True
        elif redirect.op in (">&",) and (is_fd_number(target.value) or target.value == "-"):
            continue
        elif target.value != "/dev/null":
            effects.write_targets.append(target.value)
            if redirect.op in (">", ">|", "&>") and not target.value.startswith("/dev/"):
                effects.destructive.append(f"{redirect.op} {target.value} overwrites the file")
    if read_only:
        # Nothing a read-only plan runs writes or destroys (no writer, no writing option, no rm/kill):
        # only its redirections, checked above, name files; a command with no name stays unknown.
        for command in plan.commands:
            if not command.argv or command.argv[0].value is None:
                effects.writes_unknown = True
                break
        return effects
    for command in plan.commands:
        argv = command.argv
        name = argv[0].value if argv else None
        if name is None:
            effects.writes_unknown = True  # a dynamic (or missing) name could be any writer
        else:
            if name in _MODELLED or name.startswith("mkfs"):
                _command(name, command, effects)
            _option_writes(name, command, effects)
    if not read_only and not effects.write_targets and not _all_known(plan):
        effects.writes_unknown = True
    if len(effects.write_targets) > 1:
        effects.write_targets = list(dict.fromkeys(effects.write_targets))
    if len(effects.destructive) > 1:
        effects.destructive = list(dict.fromkeys(effects.destructive))
    return effects


def _all_known(plan: CommandPlan) -> bool:
    """True when every command is either a modelled writer or a known read-only program."""
    for command in plan.commands:
        name = command.name
        if name is None or (name not in _ALL_OPERANDS and name not in _LAST_OPERAND and program_spec(name) is None
                            and name != "cd"):
            return False
    return not plan.unsupported and not plan.substitutions and not plan.functions


_DESTRUCTIVE_NAMES: Final = frozenset({"rm", "dd", "shred", "truncate", "wipefs", "fdisk", "sfdisk", "parted", "mkswap",
                                "chmod", "chown", "chgrp", "find", "git", "kill", "pkill", "killall", "shutdown",
                                "reboot", "halt", "poweroff"})


#: Names :func:`_command` looks at (writers and destructive-hint programs; also any ``mkfs*``).
_MODELLED: Final = _DESTRUCTIVE_NAMES | _ALL_OPERANDS | _LAST_OPERAND


def _command(name: str, command: PlanCommand, effects: Effects) -> None:
    """Writes and destructive hints of one command whose ``name`` is modelled (see ``_MODELLED``)."""
    values = [w.value for w in command.argv[1:]]
    operands = [v for v in values if v is None or not v.startswith("-") or v == "-"]
    flags = {v for v in values if v is not None and v.startswith("-")}
    if name in _ALL_OPERANDS or name in _LAST_OPERAND:
        if name in _MODE_FIRST and operands:
            operands = operands[1:]
        target = _target_directory(name, values) if name in _TARGET_DIRECTORY else None
        if target is not None:
            # `cp -t DIR a b` (round 39): every operand is a source, written into DIR under its own name.
            directory, sources = target
            operands = [directory or None, *(f"{directory}/{o.rstrip('/').rpartition('/')[2]}" for o in sources
                                             if directory and o and o != "-")]
        elif name in _LAST_OPERAND:
            sources, operands = operands[:-1], (operands[-1:] if len(operands) >= 2 else [])
            if not operands:
                effects.writes_unknown = True
            elif operands[0] and not flags & _NO_DIRECTORY:
                operands.extend(_into_directory(operands[0], sources))
        for operand in operands:
            if operand is None:
                effects.writes_unknown = True
            else:
                effects.write_targets.append(operand)
        if any(w.value is None or "glob" in w.features for w in command.argv[1:]):
            effects.writes_unknown = True
    _destructive(name, values, flags, operands, effects)


#: Options that make the last operand a file, never a directory to copy into.
_NO_DIRECTORY: Final = frozenset({"-T", "--no-target-directory"})


def _into_directory(destination: str, sources: list[str | None]) -> list[str]:
    """What ``cp a/conftest.py tests``, ``cp a/x .`` write when the destination is a directory (a word
    cannot say whether it is): ``tests/conftest.py``, ``x``; each static source under its own name
    (red team, round 39, review13: the destination alone was read)."""
    out: list[str] = []
    head = destination.rstrip("/")
    for source in sources:
        base = source.rstrip("/").rpartition("/")[2] if source else ""
        if base and base not in (".", "..", "-"):
            out.append(base if head in ("", ".") and destination != "/" else f"{head}/{base}")
    return out


#: Writers whose ``-t DIR``/``--target-directory=DIR`` names the directory their operands are copied into,
#: and the short options of theirs that take a value (a ``t`` after one is its value, not the option).
_TARGET_DIRECTORY: Final = {"cp": "S", "mv": "S", "ln": "S", "install": "Sgmo"}


def _target_directory(name: str, values: list[str | None]) -> tuple[str, list[str | None]] | None:
    """(the directory ``-t``/``--target-directory`` names, "" when not static; the sources), None when
    not given: ``cp -t ~/bin ls`` writes ``~/bin/ls``, not ``ls`` (red team, round 39)."""
    valued = _TARGET_DIRECTORY[name]
    directory: str | None = None
    sources: list[str | None] = []
    i = 0
    while i < len(values):
        value = values[i]
        following = values[i + 1] if i + 1 < len(values) else None
        i += 1
        if value is None or value == "-" or not value.startswith("-"):
            sources.append(value)
        elif value == "--":
            sources.extend(values[i:])
            break
        elif value.startswith("--"):
            option, eq, attached = value[2:].partition("=")
            if len(option) >= 3 and "target-directory".startswith(option):
                directory = (attached if eq else following) or ""
                i += 0 if eq else 1
            elif not eq and len(option) >= 3 and "suffix".startswith(option):
                i += 1
        else:
            for k in range(1, len(value)):
                if value[k] == "t" or value[k] in valued:
                    attached = value[k + 1 :]
                    if value[k] == "t":
                        directory = (attached or following) or ""
                    i += 0 if attached else 1
                    break
    return None if directory is None else (directory, sources)


def _option_writes(name: str, command: PlanCommand, effects: Effects) -> None:
    """Files written through options or operands (``sort -o F``, ``uniq IN OUT``, ``/usr/bin/time -o F``).

    Never for a read-only plan: every such option or operand makes a command not read-only.
    """
    base = program_name(name)  # `/usr/bin/sort`, `//usr/bin/sort` (round 52: one reading of a path's program)
    if "/" in base:
        return  # `./sort` is some file, not the program
    if base not in WRITING_PROGRAMS or len(command.argv) < 2:
        return
    for target in program_writes(base, [w.value for w in command.argv[1:]], program_spec(base)):
        if target:
            effects.write_targets.append(target)
        else:
            effects.writes_unknown = True


def _short_flags(flags: set[str]) -> set[str]:
    return {ch for flag in flags if not flag.startswith("--") for ch in flag[1:]}


def _destructive(name: str, values: list[str | None], flags: set[str], operands: list[str | None],
                 effects: Effects) -> None:
    why = _destructive_reason(name, values, flags)
    if why is not None:
        # The description is only built for the (rare) destructive commands.
        effects.destructive.append(" ".join(v or "…" for v in [name, *values]) + why)


def _destructive_reason(name: str, values: list[str | None], flags: set[str]) -> str | None:
    shorts = _short_flags(flags) if flags else set()
    if name == "rm" and (shorts & {"r", "R", "f"} or flags & {"--recursive", "--force"}):
        return ": removes files recursively or forcibly"
    if name in ("dd", "shred", "truncate", "wipefs", "fdisk", "sfdisk", "parted", "mkswap") or name.startswith("mkfs"):
        return ": overwrites data"
    if name in ("chmod", "chown", "chgrp"):
        if "R" in shorts or "--recursive" in flags:
            return ": changes permissions recursively"
    elif name == "find":
        if "-delete" in values:
            return ": deletes files"
    elif name == "git":
        if values:
            return _git_reason(values, shorts)
    elif name in ("kill", "pkill", "killall"):
        if "9" in shorts or "-KILL" in flags:
            return ": kills processes"
    elif name in ("shutdown", "reboot", "halt", "poweroff"):
        return ": stops the machine"
    return None


_GIT_DESTRUCTIVE_SUBS: Final = frozenset({"reset", "clean", "push", "branch", "checkout", "restore", "stash"})


def _git_reason(values: list[str | None], shorts: set[str]) -> str | None:
    sub = next((v for v in values if v is not None and not v.startswith("-")), None)
    if sub not in _GIT_DESTRUCTIVE_SUBS:
        return None
    rest = set(v for v in values if v is not None)
    if sub == "reset" and "--hard" in rest:
        return ": discards local changes"
    if sub == "clean" and ("f" in shorts or "--force" in rest):
        return ": deletes untracked files"
    if sub == "push" and ("f" in shorts or rest & {"--force", "--force-with-lease", "--mirror", "--delete"}
                          or any(v.startswith("+") for v in rest)):
        return ": rewrites remote history"
    if sub == "branch" and ("D" in shorts or ("d" in shorts and "f" in shorts)):
        return ": deletes a branch"
    if sub in ("checkout", "restore") and ("." in rest or ("--" in rest and sub == "checkout")):
        return ": discards working-tree changes"
    if sub == "stash" and rest & {"drop", "clear"}:
        return ": drops stashed changes"
    return None
