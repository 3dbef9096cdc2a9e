"""Values bash evaluates as arithmetic, where a value the command computes may carry code.

bash evaluates a variable named in arithmetic (``(( v ))``, ``[[ v -eq 1 ]]``, ``${a[v]}``,
``a[v]=1``, ``declare -i i=v``, ``test -v 'a[v]'``, ``[[ -v $n ]]``…) as an expression, again and again: a value
``b[$(rm x)]`` runs ``rm x``. Rules see every command the source shows; a value built at run time
shows none: ``v=$'b[\\x24(\\x72m x)]'; (( v ))``, ``d='$'; v="b[${d}(…)]"``, ``: $'…'; (( _ ))``,
``[[ $'…' =~ (.*) ]]; (( BASH_REMATCH[1] ))``, ``for v in $'…'; do a[v]=1; done`` ran ``rm``
past ``Bash(rm:*)`` (red team, round 33).

:func:`hidden_arithmetic` follows names: the ones arithmetic evaluates here (and, through static
values, what those name), against the ones the command binds to a value it cannot read (an
expansion, ``$'…'``, a glob, ``read``/``mapfile``/``printf -v``/``getopts``, a loop over such
words, ``$_`` and ``BASH_REMATCH`` once anything is dynamic, a dynamic name, which may be any).
A meeting is a part no rule can check. A nameref whose target is computed is one too (``declare
-n r=$'a[…]'; echo $r`` evaluates the target's subscript on every use).
"""

from __future__ import annotations

import re
from typing import Final

from .nodes import CommandPlan, PlanCommand, Word
from .programs.wrappers import possible_program

__all__ = [
    "ANY_NAME", "RUNTIME_BOUND", "bound_reached", "code_plans", "code_texts", "dynamic_names", "hidden_arithmetic", "may_hide_code", "plan_words"
]

#: Constructs whose text is evaluated as arithmetic.
_ARITH_CONSTRUCTS: Final = frozenset({"arithmetic", "c_for", "test_arithmetic"})
#: Builtins whose name operands may hold a subscript bash evaluates (``unset 'a[v]'``).
_NAME_BUILTINS: Final = frozenset(
    {"unset", "declare", "typeset", "local", "readonly", "export", "printf", "read", "mapfile",
     "readarray", "getopts", "test", "[", "wait", "let"}
)
_DECLARATIONS: Final = frozenset({"declare", "typeset", "local", "readonly", "export"})
#: Builtins that bind names to data they read or decode (stdin, files, ``%b`` escapes, arguments).
_BINDERS: Final = {"read": "", "mapfile": "", "readarray": "", "getopts": "", "printf": "-v", "wait": "-p"}
#: What a dynamic word may bind besides its own variable: ``$_`` (the last argument), the
#: positional parameters (``set --``, a function's arguments), ``BASH_REMATCH`` (``=~``).
_IMPLICIT: Final = ("_", "@", "BASH_REMATCH", "BASH_ARGV", "REPLY", "MAPFILE", "OPTARG")
#: Names the directory sets: a repository's directory may be named ``b[$(rm x)]`` (``cd b*; ((
#: ${PWD##*/} ))``), whatever this command binds. Counted as bound always.
#: Variables a fresh shell has whose values hold text the command (or an earlier call) chose: shellrt's
#: runner keeps the command text in ``__shellrt_c`` while it runs (``eval "$__shellrt_c"``) and the
#: start directory in ``__shellrt_d``; ``BASH_EXECUTION_STRING`` holds the text given in argv;
#: ``BASH_COMMAND`` a running command's. ``echo '$(…)' "${__shellrt_c@P}"`` runs the quoted ``$(…)``
#: (red team, round 35). Counted as bound always, as the directory names are.
RUNTIME_BOUND: Final = ("__shellrt_c", "__shellrt_d", "BASH_EXECUTION_STRING", "BASH_COMMAND")
_PLACES: Final = ("PWD", "OLDPWD", "DIRSTACK", *RUNTIME_BOUND)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A subscript naming something, or a substring offset (``${x:v}``, not ``${x:-v}``).
_EVALUATED_PART = re.compile(r"\[([^\]]*[A-Za-z_$`][^\]]*)\]|\$\{[^}:]*:(?![-=?+])([^}]*)")
#: A declaration word that names its variable literally (``v=$'…'``, ``a[i]+=…``).
_ASSIGNED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")
_TRAILING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_POSITIONAL = re.compile(r"\$\{?[0-9@*]")
_ANY = ""
#: In :func:`dynamic_names`: a name computed at run time, which may be any.
ANY_NAME: Final = _ANY
#: Arithmetic that names something: a variable or an expansion (``(( v ))``, ``(( $1 ))``).
_NAMED = re.compile(r"[A-Za-z_$`]")
#: Word features whose value is the text as written, rearranged (``{1..3}``, ``a{b,c}``).
_SHOWN: Final = frozenset({"brace", "brace_char", "quoted", "dq_whole", "backslash", "tilde"})


def may_hide_code(plan: CommandPlan) -> bool:
    """A cheap first look: whether anything below can find a part in ``plan`` (most commands are
    static words of programs that bind and evaluate nothing)."""
    if plan.dynamic or plan.constructs or plan.assignments:
        return True
    return any((command.name or "").rpartition("/")[2] in _LOOKED_AT for command in plan.commands)


def hidden_arithmetic(plan: CommandPlan) -> str:
    """The text of an arithmetic evaluation (or nameref) that may run code no rule sees ("" if none)."""
    plans = [plan, *code_plans(plan)]
    for each in plans:
        named = _computed_nameref(each) or _globbed_name(each)
        if named:
            return named
    sinks: list[tuple[str, set[str]]] = []
    integer = ""
    for each in plans:
        found, declared = _sinks(each)
        sinks += found
        integer = integer or declared
    if not sinks and not integer:
        return ""
    bound, static = _bindings(plans)
    if integer and not bound <= set(_PLACES):  # `declare -i n; read n`: the data is evaluated
        return integer
    for text, names in sinks:
        if _ANY in bound or _ANY in names or _reaches(names, bound, static):
            return text
    return ""


def _bindings(plans: list[CommandPlan]) -> tuple[set[str], dict[str, list[str]]]:
    """(names ``plans`` may bind at run time, each name's static values)."""
    bound: set[str] = set()
    static: dict[str, list[str]] = {}
    for each in plans:
        bound |= dynamic_names(each)
        for name, values in _static_values(each).items():
            static.setdefault(name, []).extend(values)
    return bound, static


def bound_reached(plans: list[CommandPlan], names: set[str]) -> bool:
    """Whether a name in ``names`` (or one their static values name) may hold a value ``plans`` bind at
    run time: what :func:`hidden_arithmetic` asks of its sinks, for other readers' sinks."""
    bound, static = _bindings(plans)
    return _ANY in bound or _ANY in names or _reaches(names, bound, static)


#: Builtins given code as a string the plan does not hold: ``trap CODE SIG``, ``mapfile -C CODE``
#: (and ``alias NAME=CODE``): (the letters of their options that take a value, as bash's getopt reads
#: them, clustered or not; those whose value is code). ``compgen -W LIST`` expands each word of LIST
#: (``$(…)`` runs), so its list is read as the words of a command (red team, round 35).
_CODE_OPTIONS: Final = {
    "mapfile": ("dnOsuCc", "C"), "readarray": ("dnOsuCc", "C"),
    "compgen": ("oAGWFCXPSV", "CW"), "complete": ("oAGWFCXPSV", "CW"),
}
#: Commands :func:`may_hide_code` looks at even when their words are static.
_LOOKED_AT: Final = (
    _NAME_BUILTINS | frozenset(_BINDERS) | frozenset(_CODE_OPTIONS) | {"trap", "set", "shopt", "bash", "sh", "env", "fc", "alias", "watch"}
)


_WATCH_VALUED: Final = frozenset({"-n", "--interval", "-q", "--equexit"})


def _watched(values: list[str | None]) -> list[str]:
    """The shell command ``watch`` runs: its words after the options, joined ([] under ``-x``)."""
    i = 0
    while i < len(values) and (values[i] or "").startswith("-"):
        word = values[i] or ""
        if word in ("-x", "--exec") or (word[1:2] != "-" and "x" in word[1:] and word[1:].isalpha()):
            return []
        i += 2 if word in _WATCH_VALUED else 1
    rest = [v for v in values[i:] if v is not None]
    return [" ".join(rest)] if rest and len(rest) == len(values) - i else []


#: A code string known only at run time, as a command whose name is not known: a nameless part.
UNKNOWN_CODE: Final = '"$__shellrt_unknown_code"'


def _option_code(values: list[str | None], valued: str, code: str) -> list[str]:
    """The values of the options in ``code`` among ``values`` (a builtin's words), read as bash's
    getopt reads them: clustered (``-tC CODE``), attached (``-CCODE``) or the next word, up to the
    first operand or ``--``; ``-W``'s list as the words of a command (``: LIST``). A value that is
    not static is `UNKNOWN_CODE`."""
    found: list[str] = []
    i = 0
    while i < len(values):
        word = values[i]
        i += 1
        if word is None or word == "--" or word[:1] != "-" or len(word) < 2:
            break
        for index in range(1, len(word)):
            letter = word[index]
            if letter not in valued:
                continue
            value: str | None = word[index + 1 :]
            if not value and i < len(values):
                value = values[i]
                i += 1
            if letter in code and value is None:
                found.append(UNKNOWN_CODE)  # `compgen -C "$c"`, `-W "$v"`: expanded (again) when it runs
            elif letter in code and value:
                found.append(": " + value if letter == "W" else value)
            break
    return found


def code_texts(plan: CommandPlan) -> list[str]:
    """The code strings ``trap``, ``alias``, ``watch``, the ``-C`` callbacks and ``compgen -W`` run."""
    codes: list[str] = []
    for command in plan.commands:
        name = possible_program(command.name or "")  # `/usr/bin/watch 'cmd'` too (round 52)
        values = [w.value for w in command.argv[1:]]
        if name == "trap":
            operands = [v for v in values if v is None or not v.startswith("-")]
            codes += [v for v in operands[:1] if v and len(operands) > 1]  # `trap INT` resets INT
        elif name == "watch":  # `watch 'cmd'`: sh -c runs the words joined (not with -x)
            codes += _watched(values)
        elif name == "alias":  # `alias k='set -k'`: the body runs where `k` is a command word
            codes += [v.partition("=")[2] for v in values if v and "=" in v and not v.startswith("-")]
        elif name in _CODE_OPTIONS:
            valued, code = _CODE_OPTIONS[name or ""]
            codes += _option_code(values, valued, code)
    return codes


def code_plans(plan: CommandPlan) -> list[CommandPlan]:
    """Plans of the code strings ``trap``, ``alias`` and the ``-C`` callbacks run (one level deep)."""
    codes = code_texts(plan)
    if not codes:
        return []
    from .analyze import analyze  # the analyser calls this module: import on first use

    found = [analyze(code).plan for code in codes]
    return [p for p in found if p is not None]


def _names(text: str) -> set[str]:
    found = set(_IDENT.findall(text))
    if _POSITIONAL.search(text):
        found.add("@")
    return found


def _subscript_names(text: str, assoc: frozenset[str] = frozenset()) -> set[str]:
    """Names in the subscripts and substring offsets of ``text`` (what bash evaluates there);
    an associative array's subscript is a string, not evaluated."""
    found: set[str] = set()
    for match in _EVALUATED_PART.finditer(text):
        if match.group(1) is not None and _array_name(text, match.start()) in assoc:
            continue
        found |= _names(match.group(1) or match.group(2) or "")
    return found


def _array_name(text: str, bracket: int) -> str:
    found = _TRAILING_NAME.search(text, 0, bracket)
    return found.group(0) if found is not None else ""


def _associative(plan: CommandPlan) -> frozenset[str]:
    """Names declared associative (``declare -A m``) outside any function (where they are local)."""
    names: set[str] = set()
    for command in plan.commands:
        if command.name in _DECLARATIONS and "function" not in command.context and _has_flag(command, "A"):
            for word in command.argv[1:]:
                value = word.value if word.value is not None else word.raw
                found = _IDENT.match(value)
                if found is not None and not value.startswith(("-", "+")):
                    names.add(found.group(0))
    return frozenset(names)


def _reaches(names: set[str], bound: set[str], static: dict[str, list[str]]) -> bool:
    """Whether a name in ``names`` (or one a static value of theirs names, transitively) is bound."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in bound:
            return True
        for value in static.get(name, []):
            todo.extend(_names(value))
    return False


def plan_words(plan: CommandPlan) -> list[Word]:
    """Every word of the plan: arguments, assignment values, redirection targets, loop and test words."""
    out: list[Word] = []
    for command in plan.commands:
        out.extend(command.argv)
        out.extend([a.value for a in command.assignments if a.value is not None])
        out.extend([r.target for r in command.redirects if r.target is not None])
    for construct in plan.constructs:
        out.extend(construct.words)
    for assignment in plan.assignments:
        if assignment.value is not None:
            out.append(assignment.value)
    for heredoc in plan.heredocs:
        out.extend(heredoc.expansions)
    return out


def _sinks(plan: CommandPlan) -> tuple[list[tuple[str, set[str]]], str]:
    """(each text bash evaluates as arithmetic, with the names it evaluates; an integer declaration or "")."""
    sinks: list[tuple[str, set[str]]] = []
    integer = ""
    assoc = _associative(plan)
    for construct in plan.constructs:
        if construct.kind in _ARITH_CONSTRUCTS and _NAMED.search(construct.text) is not None:
            sinks.append((construct.text, _names(construct.text)))
        elif construct.kind == "test_variable" and construct.text.startswith("-v") and any(
            w.value is None for w in construct.words
        ):
            # `[[ -v $n ]]`: the name, and its subscript, are computed, as `test -v "$n"`'s (round 49;
            # `[[ ]]` globs nothing: `a[1]` is a name)
            sinks.append((construct.text, {_ANY}))
        elif construct.kind == "test_variable" and _EVALUATED_PART.search(construct.text) is not None:
            sinks.append((construct.text, _subscript_names(construct.text, assoc)))
    for word in plan_words(plan):
        features = word.features
        if ("arithmetic" in features or "pure_arithmetic" in features) and _NAMED.search(word.raw) is not None:
            sinks.append((word.raw, _names(word.raw)))
        elif "complex_parameter" in features and _EVALUATED_PART.search(word.raw) is not None:
            sinks.append((word.raw, _subscript_names(word.raw, assoc)))
    for assignment in [*plan.assignments, *[a for c in plan.commands for a in c.assignments]]:
        target, _, value = assignment.raw.partition("=")
        if ("[" in target or value.startswith("(")) and assignment.name.partition("[")[0] not in assoc:
            names = _subscript_names(assignment.raw, assoc)
            if names:
                sinks.append((assignment.raw, names))
    for command in plan.commands:
        name = command.name
        if name not in _NAME_BUILTINS:
            continue
        text = command.text
        if name == "let":
            sinks.append((text, _names(text)))
            continue
        operands = _name_operands(name, command.argv[1:])
        if any(_dynamic(w) and _ASSIGNED.match(w.raw) is None for w in operands):
            sinks.append((text, {_ANY}))  # `unset "$n"`: the name, and its subscript, are computed
        else:
            # A nameref's target is a name too (``declare -n r=a[v]``: each use of r evaluates v).
            whole = name in _DECLARATIONS and _has_flag(command, "n")
            names = _subscript_names(
                " ".join([(w.value or w.raw) if whole else (w.value or w.raw).partition("=")[0] for w in operands]),
                assoc,
            )
            if names:
                sinks.append((text, names))
        if name in _DECLARATIONS and _has_flag(command, "i"):
            integer = integer or text  # every later assignment to the name is evaluated
    return sinks, integer


#: Options of the name builtins whose value follows: the name itself (``printf -v NAME``), or data.
_NAME_OPTIONS: Final = {"printf": "-v", "test": "-v -R", "[": "-v -R", "wait": "-p"}
_DATA_OPTIONS: Final = frozenset({"-d", "-n", "-N", "-p", "-t", "-u", "-i", "-C", "-c", "-O", "-s"})


def _name_operands(name: str, words: list[Word]) -> list[Word]:
    """The words ``name`` reads as variable names (``declare`` words up to their ``=``)."""
    named = _NAME_OPTIONS.get(name)
    if named is not None:
        options = named.split()
        return [w for i, w in enumerate(words) if i and words[i - 1].value in options]
    out: list[Word] = []
    skip = False
    for word in words:
        value = word.value
        if skip:
            skip = False
        elif value is not None and value[:1] in ("-", "+") and len(value) > 1:
            skip = name not in _DECLARATIONS and value in _DATA_OPTIONS
        else:
            out.append(word)
    if name == "getopts":
        return out[1:2]
    return out


def _globbed_name(plan: CommandPlan) -> str:
    """A variable name a glob gives (``unset *``, ``test -v *``): a file of the repository named
    ``a[$(rm x)]`` is a subscript bash evaluates, no binding needed."""
    for command in plan.commands:
        name = command.name
        if name in _NAME_BUILTINS and name != "let":
            operands = _name_operands(name or "", command.argv[1:])
            if any("glob" in w.features or "flag_glob" in w.features for w in operands):
                return command.text
    return ""


def _has_flag(command: PlanCommand, letter: str) -> bool:
    for word in command.argv[1:]:
        value = word.value
        if value is None:
            if _ASSIGNED.match(word.raw) is None:
                return True  # a dynamic word may be any option
            continue
        if value[:1] in ("-", "+") and value[1:2] != "-" and letter in value[1:]:
            return True
    return False


def _computed_nameref(plan: CommandPlan) -> str:
    """A nameref declaration whose target is not static (``declare -n r=$'a[…]'``)."""
    for command in plan.commands:
        if command.name in _DECLARATIONS and _has_flag(command, "n") and any(w.value is None for w in command.argv[1:]):
            return command.text
    return ""


def _dynamic(word: Word) -> bool:
    """Whether bash may give ``word`` a value its text does not show (brace expansion only
    rearranges the text it holds; globs name files, which the repository names)."""
    features = word.features
    if word.value is not None:
        return "glob" in features or "flag_glob" in features
    return not features or not features <= _SHOWN


def dynamic_names(plan: CommandPlan) -> frozenset[str]:
    """Names the command may bind to a value it cannot read; ``_ANY`` when a name is computed.
    The last plan's answer is kept: both readers of a plan ask for it, one after the other."""
    last = _LAST_BOUND[0]
    if last[0] is plan:
        return last[1]
    found = frozenset(_dynamic_names(plan))
    _LAST_BOUND[0] = (plan, found)
    return found


#: (plan, its dynamic names): one entry, replaced whole (a reader in another thread sees either).
_LAST_BOUND: list[tuple[CommandPlan | None, frozenset[str]]] = [(None, frozenset())]


def _dynamic_names(plan: CommandPlan) -> set[str]:
    bound: set[str] = set()
    anything = False
    for assignment in [*plan.assignments, *[a for c in plan.commands for a in c.assignments]]:
        value = assignment.value
        if value is None or _dynamic(value) or "$" in (value.value or "") or "`" in (value.value or ""):
            bound.add(assignment.name.partition("[")[0].rstrip("+"))
    for construct in plan.constructs:
        loop = construct.kind in ("for", "select") and construct.name
        # A loop word holding `$(`/a backquote binds code as `v='a[$(…)]'` does (round 48).
        if loop and (construct.kind == "select" or any(_dynamic(w) or _holds_code(w) for w in construct.words)):
            bound.add(construct.name or "")
        if any(_dynamic(w) for w in construct.words):
            anything = True
        if "=~" in construct.operators:
            bound.add("BASH_REMATCH")
    for word in plan_words(plan):
        if "complex_parameter" in word.features:
            bound.update(_DEFAULTED.findall(word.raw))  # `: ${GIT_EDITOR:=…}` assigns the name
    for command in plan.commands:
        argv = command.argv
        if any(_dynamic(w) for w in argv):
            anything = True
        name = command.name
        binder = _BINDERS.get(name or "")
        if binder is not None and (not binder or _binds(argv[1:], binder)):
            bound.update(_bound_by(argv[1:]))
        elif name in _DECLARATIONS and any(_dynamic(w) and "=" not in w.raw for w in argv[1:]):
            bound.add(_ANY)  # `declare "$n=…"`: a name known only at run time
    if anything or bound:
        bound.update(_IMPLICIT)
    bound.update(_PLACES)
    return bound


def _holds_code(word: Word) -> bool:
    value = word.value or ""
    return "$" in value or "`" in value


def _binds(words: list[Word], option: str) -> bool:
    """Whether the builtin's options may hold its naming ``option`` (``printf -v``, ``wait -p``): spelt
    alone, glued to its name (``-vNAME``), among other letters (``wait -np``), or a word known only at
    run time where options are read (``v=-v; printf $v NAME``: red team, round 37, review3)."""
    for word in words:
        value = word.value
        if value is None:
            return True
        if value == "--" or not value.startswith("-") or value == "-":
            return False
        if not value.startswith("--") and option[1] in value[1:]:
            return True
    return False


def _bound_by(words: list[Word]) -> set[str]:
    """Names a binding builtin sets (``_ANY`` for a dynamic one); every operand counts, and a name glued
    to a naming option (``printf -vNAME``, ``read -raNAME``, ``wait -pNAME``) too (fail closed)."""
    out: set[str] = set()
    for word in words:
        value = word.value
        if value is None:
            out.add(_ANY)
        elif not value.startswith("-"):
            out.add(value.partition("[")[0])
        elif not value.startswith("--"):
            at = next((i for i, c in enumerate(value) if c in "avp"), -1)
            glued = value[at + 1 :] if at > 0 else ""
            if glued:
                out.add(glued.partition("[")[0])
    out.update(("REPLY", "MAPFILE", "OPTARG"))
    return out


def _static_values(plan: CommandPlan) -> dict[str, list[str]]:
    """Each name's static values (an assignment's, a loop's words): what it may name in turn."""
    values: dict[str, list[str]] = {}
    for assignment in [*plan.assignments, *[a for c in plan.commands for a in c.assignments]]:
        if assignment.value is not None and assignment.value.value is not None:
            values.setdefault(assignment.name.partition("[")[0].rstrip("+"), []).append(assignment.value.value)
    for construct in plan.constructs:
        if construct.kind == "for" and construct.name:
            values.setdefault(construct.name, []).extend([w.value or "" for w in construct.words])
    return values
