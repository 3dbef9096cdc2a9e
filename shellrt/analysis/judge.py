"""The read-only judgement: an allow-list over a :class:`CommandPlan`.

A plan is read-only only when nothing below objects. Each objection is a
human-readable reason; an empty list means read-only. Anything unknown objects.
"""

from __future__ import annotations

import re
from typing import Final

from .nodes import CommandPlan, Construct, PlanCommand, Redirect, Word, is_fd_number
from .programs import INTERPRETERS, JUDGED_WRAPPERS, WRAPPERS, check_program, check_wrapper, program_spec

__all__ = ["MAX_SUBCOMMANDS", "judge_plan"]

#: More simple commands than this is never read-only.
MAX_SUBCOMMANDS: Final = 50

_SAFE_CONSTRUCTS: Final = frozenset({"subshell", "group", "negation", "if", "elif", "else", "while", "until", "case",
                              "test", "test_bracket", "test_arithmetic", "test_variable"})
_CONSTRUCT_REASONS: Final = {
    "function": "defines a shell function (it can shadow any command)",
    "for": "for loop assigns a shell variable",
    "select": "select reads input and assigns a variable",
    "c_for": "arithmetic for loop (arithmetic evaluation can run command substitutions)",
    "arithmetic": "arithmetic command (( )) assigns variables and can run command substitutions",
    "declare": "declaration builtin changes shell state", "typeset": "declaration builtin changes shell state",
    "export": "export changes the environment", "local": "local assigns a variable",
    "readonly": "readonly changes shell state", "unset": "unset changes shell state",
}
#: Word features that never appear in a read-only command.
_FATAL_FEATURES: Final = {
    "ansi_c": "uses $'...' quoting",
    "line_break": "has a line break inside a word (bash ends the command there)",
    "translated": "uses $\"...\" locale translation",
    "brace": "uses brace expansion",
    "command_substitution": "contains a command substitution",
    "process_substitution": "contains a process substitution",
    "complex_parameter": "uses a parameter expansion with operators",
    "arithmetic": "arithmetic expansion with variables (can run command substitutions)",
    "unknown_node": "contains shell syntax that is not modelled",
}
_DATA_FEATURES: Final = frozenset({"brace_char", "parameter", "simple_parameter", "quoted", "pure_arithmetic", "glob", "tilde",
                            "backslash", "dq_whole"})
_SAFE_UNARY: Final = frozenset(["-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S", "-n", "-z"])
_SAFE_BINARY: Final = frozenset(["=", "==", "!=", "<", ">", "-nt", "-ot", "-ef"])
_INT: Final = re.compile(r"^[-+]?[0-9]+$")
_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OUTPUT_OPS: Final = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&", "&>|"})
_DUP_OPS: Final = frozenset({">&", "<&"})
_NET_PREFIXES: Final = ("/dev/tcp/", "/dev/udp/")
_BAD_NAME_FEATURES: Final = frozenset({"backslash", "quoted", "glob", "tilde"})
_ARITH_OPS: Final = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
#: Devices that never end: reading them is not a bounded read (``head`` stops by itself).
ENDLESS_DEVICES: Final = frozenset({"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/stdin",
                                    "/dev/tty", "/dev/fd/0", "/proc/self/fd/0"})
_DECLARATIONS: Final = frozenset({"export", "declare", "typeset", "local", "readonly", "unset"})
#: ``/proc`` names that lead to a process's descriptors or root (``/proc/thread-self/fd/0`` is standard input,
#: ``/proc/self/root/dev/zero`` is ``/dev/zero``) or drain the kernel log (red team, round 51).
_PROC_LINKS: Final = frozenset({"fd", "root", "cwd", "map_files", "kmsg"})


def special_file(value: str, bases: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(path, why) when a path word names a device or an endless file (its spellings read as the kernel
    does): a device other than ``/dev/null`` (opening one may act, as ``/dev/watchdog`` arms a reboot
    timer and a tape rewinds, or never end), a ``/proc`` descriptor or root link, ``kmsg``, ``trace_pipe``."""
    if not bases and "/" not in value:
        return None  # a word with no slash names no file outside its directory
    from .kernel_paths import kernel_reading  # loaded only for a path word (`shellrt classify ls` needs none)

    paths, doubt = kernel_reading(value, bases)
    if doubt:  # `/var/run/../dev/zero`: `..` after a link is the link target's parent (round 52)
        return doubt + "/..", "a `..` after a name that may be a link (where it leads is not known)"
    for path in paths:
        if path in ENDLESS_DEVICES:
            return path, "which never ends"
        names = path.split("/")
        if names[1] == "dev" and len(names) > 2 and path != "/dev/null":
            return path, "a device file (opening one may act on the device, or never end)"
        if names[1] == "proc" and not _PROC_LINKS.isdisjoint(names[2:]):
            return path, "a process's descriptor or root, or the kernel log (it may never end)"
        if names[1] == "sys" and names[-1].startswith("trace_pipe"):
            return path, "which never ends (and its reads consume the trace)"
    return None


def _shown(value: str, path: str) -> str:
    return value if value == path else f"{value} ({path})"


def _cd_bases(plan: CommandPlan) -> tuple[str, ...]:
    """The system directories a ``cd`` in the plan may move to (``cd /dev && cat zero`` reads ``/dev/zero``):
    each target read as the kernel does, a relative one from the directories the ``cd``s before it reach
    (``cd /; cd dev``) and, when it climbs, from the root (``cd ../../../dev``: round 52)."""
    from .kernel_paths import kernel_reading  # loaded only for a plan with a `cd`

    reached: list[str] = []
    for target in plan.cd_targets:
        paths, doubt = kernel_reading(target, tuple(reached))
        reached += [*paths, f"{doubt}/.."] if doubt else paths  # a word below `x/..` keeps the doubt
    bases = [path for path in reached
             if path == "/" or path.split("/")[1:2] in (["dev"], ["proc"], ["sys"]) or path.endswith("/..")]
    return tuple(dict.fromkeys(bases))


def judge_plan(plan: CommandPlan) -> list[str]:
    """Reasons the plan is not read-only; empty means read-only."""
    reasons: list[str] = []
    for kind in plan.unsupported:
        reasons.append(f"unsupported shell construct: {kind}")
    if len(plan.commands) > MAX_SUBCOMMANDS:
        reasons.append(f"more than {MAX_SUBCOMMANDS} subcommands")
    # Any substitution objects, even when the commands inside are read-only
    # (`cat <(id)` is refused): its output is unchecked data fed to a program.
    for sub in plan.substitutions:
        reasons.append(f"command substitution {sub.text!r} runs commands")
    if "&" in plan.operators:
        reasons.append("runs a background job (&) that outlives the command")
    for construct in plan.constructs:
        reasons.extend(_construct(construct))
    for assignment in plan.assignments:
        reasons.append(f"assigns {assignment.name or 'a variable'} ({assignment.raw!r})")
    bases = _cd_bases(plan) if plan.cd_targets else ()
    for redirect in plan.redirects:
        reasons.extend(_redirect(redirect, bases))
    for heredoc in plan.heredocs:
        for word in heredoc.expansions:
            reasons.extend(_data_word(word, "here-document expansion"))
    for command in plan.commands:
        # Commands run by other wrappers are not judged: the wrapper itself is never read-only.
        if command.wrapped_by is None or command.wrapped_by in JUDGED_WRAPPERS:
            reasons.extend(_command(command, bases))
    return list(dict.fromkeys(reasons)) if len(reasons) > 1 else reasons


def _construct(construct: Construct) -> list[str]:
    kind = construct.kind
    if kind not in _SAFE_CONSTRUCTS:
        return [_CONSTRUCT_REASONS.get(kind, f"{kind} construct is not read-only")]
    reasons: list[str] = []
    if kind == "test_arithmetic":
        for word in construct.words:
            if word.value is None or not _INT.match(word.value):
                reasons.append(f"arithmetic test operand {word.raw!r} is evaluated as an expression "
                               "(can run command substitutions)")
    elif kind == "test_variable":
        for word in construct.words:
            if word.value is None or not _NAME.match(word.value):
                reasons.append(f"test -v operand {word.raw!r} is evaluated (array subscripts run code)")
    elif kind == "test_bracket":
        reasons.extend(_test_command(construct.words))
    elif kind in ("test", "case"):
        for word in construct.words:
            reasons.extend(_data_word(word, f"{kind} operand"))
    return reasons


def _data_word(word: Word, where: str) -> list[str]:
    """A word that is only compared or printed: plain parameter expansions are fine."""
    if word.value is not None and not (word.features - _DATA_FEATURES):
        return []
    bad = [text for feature, text in _FATAL_FEATURES.items() if feature in word.features]
    if bad:
        return [f"{where} {word.raw!r} {bad[0]}"]
    if word.features - _DATA_FEATURES:
        return [f"{where} {word.raw!r} is not modelled"]
    return []


def _redirect(redirect: Redirect, bases: tuple[str, ...]) -> list[str]:
    op = redirect.op
    target = redirect.target
    if redirect.kind == "heredoc":
        return []
    if redirect.kind == "herestring":
        return _data_word(target, "here-string") if target is not None else []
    if op in ("<&-", ">&-"):
        return []
    if target is None:
        return [f"redirection {op} is not modelled"]
    value = target.value
    if value is None:
        return [f"redirection target {target.raw!r} is dynamic"]
    if op in _DUP_OPS and (is_fd_number(value) or value == "-"):
        return []
    if value.startswith(_NET_PREFIXES):
        return [f"redirection to {value} opens a network connection"]
    if "glob" in target.features:
        return [f"redirection target {target.raw!r} is a glob"]
    if op == "<":
        special = special_file(value, bases)
        return [f"reads {_shown(value, special[0])}, {special[1]}"] if special else []
    if op in _OUTPUT_OPS or op in _DUP_OPS:
        if value == "/dev/null":
            return []
        return [f"redirection {op} {value} writes a file"]
    return [f"redirection {op} is not modelled"]


def _command(command: PlanCommand, bases: tuple[str, ...] = ()) -> list[str]:
    reasons: list[str] = []
    for assignment in command.assignments:
        reasons.append(f"environment prefix {assignment.raw!r} changes how the command runs")
    if not command.argv:
        return []  # a standalone assignment: plan.assignments says why it is not read-only
    head = command.argv[0]
    name = head.value
    if name is None:
        return [*reasons, f"command name {head.raw!r} is dynamic"]
    if head.features and not _BAD_NAME_FEATURES.isdisjoint(head.features):
        return [*reasons, f"command name {head.raw!r} uses quoting, escapes or globbing"]
    if "/" in name:
        return [*reasons, f"runs {name} by path (only known programs looked up by name are read-only)"]
    if name in _DECLARATIONS:
        return [*reasons, _CONSTRUCT_REASONS[name]]
    if name in JUDGED_WRAPPERS:
        why = check_wrapper(name, [w.value for w in command.argv])
        if why is not None:
            # Empty: the wrapped command (or -c script) is judged as its own part.
            return reasons + why
    spec = program_spec(name)
    if spec is None:
        if name in WRAPPERS:
            return [*reasons, f"{name} runs another command"]
        if name in INTERPRETERS:
            return [*reasons, f"{name} runs code"]
        return [*reasons, f"{name} is not a known read-only program"]
    args = command.argv[1:]
    if name == "test" or name == "[":
        return reasons + _test_command(args)
    values: list[str] = []
    for word in args:
        special = special_file(word.value, bases) if word.value else None
        if special and not (name == "head" and special[0] in ENDLESS_DEVICES):  # head stops by itself
            return [*reasons, f"{name} reads {_shown(word.value or '', special[0])}, {special[1]}"]
    for word in args:
        value = word.value
        if value is None or word.features:
            break
        values.append(value)  # a plain static word: nothing below objects to it
    else:
        # Every argument is a plain static word (the common case).
        if reasons:
            return reasons
        return check_program(name, values)
    for index in range(len(values), len(args)):
        word = args[index]
        value = word.value
        if value is not None and not word.features:
            values.append(value)
            continue
        values.append(value or "")
        if spec.data_args and not (name == "printf" and index == 0):
            reasons.extend(_data_word(word, f"{name} argument"))
            continue
        if word.value is None:
            # Any expansion outside echo-like data can inject options: not read-only.
            bad = [text for feature, text in _FATAL_FEATURES.items() if feature in word.features]
            reasons.append(f"{name} argument {word.raw!r} " + (bad[0] if bad else
                           "is dynamic (an expansion can inject options)"))
            continue
        if "flag_glob" in word.features and not spec.glob_safe:
            reasons.append(f"{name} argument {word.raw!r} is a glob that could expand to an option")
        elif "glob" in word.features and spec.max_positional is not None:
            reasons.append(f"{name} argument {word.raw!r} is a glob that could expand to several operands")
    if reasons:
        return reasons
    if name in ("cd", "pushd", "popd") and any(w.value is None for w in args):
        return [f"{name} target is dynamic"]
    return check_program(name, values)


def _test_command(args: list[Word]) -> list[str]:
    """``test``/``[`` re-parse their operands after expansion, so dynamic words are
    only accepted as one double-quoted word in ``[ OP "$x" ]`` or ``[ A OP B ]``."""
    reasons: list[str] = []
    values = [w.value for w in args]
    dynamic = [i for i, w in enumerate(args) if w.value is None]
    if dynamic:
        shape_ok = (len(args) == 2 and values[0] in _SAFE_UNARY and dynamic == [1]) or (
            len(args) == 3 and values[1] in _SAFE_BINARY and 1 not in dynamic)
        if not shape_ok:
            reasons.append("test with expanded operands outside `[ OP \"$x\" ]` / `[ A OP B ]` "
                           "(expansions can become operators such as -v)")
        for i in dynamic:
            if "dq_whole" not in args[i].features:
                reasons.append(f"test operand {args[i].raw!r} is not one double-quoted word")
    for index, word in enumerate(args):
        reasons.extend(_data_word(word, "test operand"))
        if word.value in _ARITH_OPS:
            for neighbour in (index - 1, index + 1):
                value = values[neighbour] if 0 <= neighbour < len(values) else None
                if value is None or not _INT.match(value):
                    reasons.append("test arithmetic operand is not an integer literal")
        if word.value in ("-v", "-R"):
            value = values[index + 1] if index + 1 < len(values) else None
            if value is None or not _NAME.match(value):
                reasons.append("test -v operand is not a plain variable name")
    return reasons
