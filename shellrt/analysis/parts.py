"""Subcommands for permission rules: one per simple command, assignment and declaration.

Each part carries what a rule must see besides its words: the normalised command
name (``/bin/rm``, ``\\rm``, ``'rm'`` and ``timeout 5 rm`` are all ``rm``; ``""`` when
no static name exists), the variables it assigns, whether it runs in the
background, the files it writes through redirections and the paths it reads.
"""

from __future__ import annotations

import re
from typing import Final

from .arith_flow import may_hide_code
from .effects import OPERAND_WRITERS, copies_tree, operand_unknown
from .nodes import CommandPlan, PlanCommand, Subcommand, Word, is_fd_number
from .programs import program_spec, unwrap
from .programs.paths import (
    FLAG_RECURSIVE,
    RESPONSE_FILE_PROGRAMS,
    WRITING_PROGRAMS,
    glob_may_name_file_option,
    program_reads,
    program_writes,
)
from .programs.spec import ProgramSpec
from .programs.wrappers import program_name

__all__ = ["DECLARATIONS", "TRANSPARENT_WRAPPERS", "resolve_command", "subcommands"]

#: Wrappers a part's name looks through (the wrapped command is what runs).
TRANSPARENT_WRAPPERS: Final = frozenset({"env", "command", "nice", "timeout", "nohup", "stdbuf", "time"})
#: Command names that never count as static (what they run is decided at run time).
_NEVER_STATIC: Final = frozenset({"eval", "xargs", "busybox", "let"})
#: Plain names :func:`resolve_command` must look at (the rest are their own name).
_RESOLVED_NAMES: Final = _NEVER_STATIC | TRANSPARENT_WRAPPERS
#: Constructs that evaluate their operands as arithmetic (array subscripts run substitutions).
_EVALUATING_CONSTRUCTS: Final = frozenset(
    {"test", "test_bracket", "test_arithmetic", "test_variable", "arithmetic", "c_for"}
)
#: Word features under which quoted ``$(...)`` text may still be evaluated by bash.
_PLAIN_CODE: Final = frozenset({"arithmetic", "complex_parameter", "unknown_node"})
#: Builtins that take variable names, whose array subscripts bash evaluates as arithmetic (code).
_SUBSCRIPT_BUILTINS: Final = frozenset(
    {
        "unset",
        "declare",
        "typeset",
        "local",
        "readonly",
        "export",
        "printf",
        "read",
        "mapfile",
        "readarray",
        "getopts",
        "test",
        "[",
        "wait",
    }
)
DECLARATIONS: Final = frozenset({"export", "declare", "typeset", "local", "readonly", "unset"})
_OUTPUT_OPS: Final = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&", "&>|"})
_SHLEX_SAFE: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-"
_INPUT_OPS: Final = frozenset({"<", "<>"})


def resolve_command(argv: list[Word]) -> tuple[str, int, list[str]]:
    """(normalised name or "", index of the command word in ``argv``, names ``env`` assigns)."""
    index = 0
    env_names: list[str] = []
    for _ in range(16):
        if index >= len(argv):
            return "", index, env_names
        head = argv[index]
        value = head.value
        if value is None or "glob" in head.features:
            return "", index, env_names
        name = program_name(value)  # `/bin/rm` is `rm`
        if "/" in name:
            # `./ls`, `bin/ls`, `/tmp/ls`: a file of that name, not the program (an allow rule for
            # `ls` must not run it). The path as written is its name.
            return value, index, env_names
        if not name or name in _NEVER_STATIC:
            return "", index, env_names
        if name not in TRANSPARENT_WRAPPERS:
            return name, index, env_names
        values: list[str | None] = [name]
        values.extend([w.value for w in argv[index + 1 :]])
        result = unwrap(values, [w.raw for w in argv[index:]])
        # The names env sets (its NAME=VALUE words, as the planner reads them) and unsets (`-u`).
        env_names.extend([(values[i] or argv[index + i].raw).partition("=")[0] for i in result.assigned])
        env_names.extend(result.unset)
        if result.unknown or result.script is not None:
            return "", index, env_names
        if result.start is None:
            return name, index, env_names
        index += result.start
    return "", index, env_names


def subcommands(plan: CommandPlan, unparsed: str | None, read_only: bool = False) -> list[Subcommand]:
    """Every part of ``plan``; when the parse failed the raw text is added too.

    A partial parse can hide commands in the part the parser could not read, so a
    rule matcher must also see the whole raw string (and should never allow it).
    ``read_only``: the plan was judged read-only (no part can write through an option).
    """
    out: list[Subcommand] = []
    seen: dict[str, list[Subcommand]] = {}  # parts by text: only parts with equal text can be equal
    for command in plan.commands:
        part = _part(command, read_only)
        if part is None:
            continue
        same_text = seen.get(part.text)
        if same_text is None:
            seen[part.text] = [part]
        elif any(_same(part, other) for other in same_text):
            continue
        else:
            same_text.append(part)
        out.append(part)
    # `[[ -v 'a[$(id)]' ]]`, `(( 'a[$(id)]' ))`: bash evaluates quoted text as arithmetic and runs
    # the substitution, which no command part shows. Such a test is a part no allow rule matches
    # (the outermost one: an operand inside it adds nothing).
    if plan.constructs:
        texts = [c.text for c in plan.constructs if c.kind in _EVALUATING_CONSTRUCTS and _code_text(c.text)]
        for text in dict.fromkeys(texts):
            if not any(text != other and text in other for other in texts):
                out.append(Subcommand(text, [text], "", False, [], False, [], [], False, ""))
    if plan.constructs or plan.dynamic:
        # `for PATH in .`, `(( PATH=1 ))`: a binding no assignment word shows is a part (round 48).
        from .bound_names import binding_parts

        out.extend(part for part in binding_parts(plan) if part.text not in seen)
    if may_hide_code(plan):
        out.extend(_hidden_code(plan))
        out.extend(part for part in _code_string_parts(plan) if not any(_same(part, o) for o in seen.get(part.text, ())))
    # `/usr/bin/rg` is `rg` (a system directory's program, round 51); a glob is no dynamic word: not gated
    if any(program_name(c.name or "") in _OPTION_PROGRAMS for c in plan.commands):
        out.extend(_run_time_programs(plan))
    if unparsed is not None:
        out.append(Subcommand(unparsed, [unparsed], "", False, [], False, [""], [""], False, ""))
    return out


def _hidden_code(plan: CommandPlan) -> list[Subcommand]:
    """Parts for code bash runs that no part shows (round 33): no rule can match them.

    ``v=$'b[\\x24(…)]'; (( v ))`` (a value built at run time, evaluated as arithmetic), ``printf -v
    PS4 %b '\\x24(…)'; set -x; :`` (a variable whose value runs, set at run time; a nameref),
    ``echo $"hello"`` (a translation from a catalog the command chose, expanded), ``set -k; ls
    LD_PRELOAD=./x.so`` (arguments that set the environment), ``fc -s`` (a history entry)."""
    # Imported here: most plans never pass `may_hide_code` (`shellrt classify ls` loads none of them).
    from .arith_flow import code_plans, hidden_arithmetic
    from .code_vars import computed_code_variable
    from .history_runs import history_rerun
    from .keyword_mode import keyword_switch
    from .translated import translated_word
    from .value_expansion import expanded_value

    found = [
        ("arithmetic on a value built at run time", hidden_arithmetic(plan)),
        ("a value built at run time, expanded as a prompt or a name", expanded_value(plan)),
    ]
    for each in [plan, *code_plans(plan)]:  # `trap 'set -k; …' EXIT`: code strings too
        found += [
            ("a variable whose value runs as code, set at run time", computed_code_variable(each)),
            ("translated by a message catalog, then expanded", translated_word(each)),
            ("keyword mode: NAME=VALUE arguments set the environment", keyword_switch(each)),
            ("fc runs a history entry, text no part shows", history_rerun(each)),
        ]
    texts = [f"{what}: {where}" for what, where in found if where]
    return [Subcommand(text, [text], "", False, [], False, [], [], False, "") for text in texts]


#: `option_programs.RUNNERS`' names (that module loads only for them).
_OPTION_RUNNERS: Final = frozenset({"rg", "fd", "fdfind"})
#: `option_programs.OPTION_PROGRAMS`: a run-time word of theirs may be an option that runs a program.
_OPTION_PROGRAMS: Final = _OPTION_RUNNERS | frozenset(
    {"zip", "tar", "rsync", "sort", "env", "find", "scp", "sftp", "ssh", "man", "sdiff", "diff3", "less",
     "script", "su", "runuser", "flock", "sg", "git", "split", "wget", "pandoc", "gcc", "g++", "cc", "c++",
     "gfortran", "cpp", "vi", "vim", "nvim", "gvim", "view", "rview", "vimdiff", "gvimdiff", "ex", "rvim", "evim",
     "gview", "vimx", "mvim", "nvi", "fzf", "tig", "mysql", "psql", "gpg", "gpg2", "svn", "hg", "rclone", "restic",
     "borg", "socat", "unison", "latexmk", "java", "nano", "dpkg", "apt-get", "apt", "make", "gmake",
     "sed", "gsed", "awk", "gawk", "mawk", "nawk"}
)  # fmt: skip


def _run_time_programs(plan: CommandPlan) -> list[Subcommand]:
    """Parts for a program named at run time that ``rg --pre``/``fd -x`` run, and for a run-time word
    that may be such an option (``rg "$p" y .``, round 35)."""
    from .option_programs import RUNNERS, run_time_option, run_time_program

    found = [("a program named at run time, run by an option", run_time_program(c))
             for c in plan.commands if program_name(c.name or "") in RUNNERS]  # fmt: skip
    found += [("a word known only at run time may be an option that runs a program", run_time_option(c))
              for c in plan.commands]  # fmt: skip
    return [Subcommand(f"{what}: {t}", [t], "", False, [], False, [], [], False, "") for what, t in found if t]


def _code_string_parts(plan: CommandPlan) -> list[Subcommand]:
    """The parts of the code strings bash keeps and runs (``trap CODE SIG``, ``mapfile -C CODE``,
    ``compgen -C CODE``, ``compgen -W LIST``, an alias body): a command built there at run time
    (``x=$(printf '\\x72m'); $x y``) is a nameless part no rule matches (red team, round 35)."""
    from .analyze import analyze  # the analyser calls this module: import on first use
    from .arith_flow import UNKNOWN_CODE, code_texts

    out: list[Subcommand] = []
    for code in code_texts(plan):
        if code == UNKNOWN_CODE:  # `compgen -C "$c"`: no rule can read what runs
            text = "a code string known only at run time (mapfile/compgen -C, compgen -W)"
            out.append(Subcommand(text, [text], "", False, [], False, [], [], False, ""))
        else:
            out.extend(analyze(code).subcommands)
    return out


def _same(a: Subcommand, b: Subcommand) -> bool:
    """Parts that say the same to a rule (the text is compared by the caller)."""
    return (
        a.argv == b.argv
        and a.writes == b.writes
        and a.write_words == b.write_words  # `cat q > "$d/x"; cat q > "$d/ls"` are two writes (round 45)
        and a.background == b.background
        and a.env_names == b.env_names
    )


def _code_text(text: str) -> bool:
    return "$(" in text or "`" in text or "$[" in text


_AWKS: Final = frozenset({"awk", "gawk", "mawk", "nawk"})
#: An awk program's output redirection (``print > "f"``, ``printf … >> f``): a write no shell word names.
_AWK_WRITE: Final = re.compile(r"\bprintf?\b[^;{}\n]*>").search


def _part(command: PlanCommand, read_only: bool) -> Subcommand | None:
    words = command.argv
    if command.redirects:
        writes = _writes(command)
        reads = _redirect_reads(command)
        write_words = _write_words(command)
    else:
        writes = []
        reads = []
        write_words = []
    via = command.wrapped_by or ""
    assigned = [a.name for a in command.assignments] if command.assignments else []
    if not words:
        argv = [a.raw for a in command.assignments]
        if not argv:
            if not command.redirects:
                return None
            # A redirection alone (`> f`): no program, but the file is opened; no rule names it.
            text = " ".join(
                [
                    (r.fd or "") + r.op + (" " + r.target.raw if r.target is not None else "")
                    for r in command.redirects
                ]
            )
            return Subcommand(text, [], "", False, [], command.background, writes, reads, False, via, write_words)
        return Subcommand(
            " ".join(argv), argv, "", False, assigned, command.background, writes, reads, False, via, write_words
        )
    argv = []
    dynamic = False
    for w in words:
        value = w.value
        if value is None:
            dynamic = True
            argv.append(w.raw)
        else:
            argv.append(value)
    if dynamic:
        # Static words are shell-quoted (shlex.quote), dynamic words keep their source text.
        text = " ".join([w.raw if w.value is None else _quote(w.value) for w in words])
    else:
        text = " ".join(argv)
        # Joined as-is when no word needs quoting (no unsafe character, no space, not empty).
        if not _all_safe(text, _SAFE_JOINED) or "" in argv or text.count(" ") != len(argv) - 1:
            text = " ".join([_quote(v) for v in argv])
    head = words[0]
    head_value = head.value
    if head_value and not head.features and "/" not in head_value and head_value not in _RESOLVED_NAMES:
        no_names: list[str] = []
        name, start, env_names = head_value, 0, no_names  # a plain name (the common case)
    else:
        name, start, env_names = resolve_command(words)
        if start and "" in _wrapper_writes([w.value for w in words[:start]]):
            writes = [*writes, ""]  # `time -o $f cmd`
    if dynamic and name and any(_code_text(w.raw) and not _PLAIN_CODE.isdisjoint(w.features) for w in words):
        name = ""  # `echo $(( 'a[$(id)]' ))`: arithmetic or an expansion operator evaluates quoted code
    if name in _SUBSCRIPT_BUILTINS and any("[" in arg and ("$(" in arg or "`" in arg) for arg in argv[1:]):
        name = ""  # `unset 'a[$(id)]'`: bash evaluates the subscript, running the substitution
    if words[0].value in DECLARATIONS:
        name = words[0].value or "" if name else ""
        assignment_raws = {a.raw for a in command.assignments}
        for w in words[1:]:
            value = w.value
            if value is None:
                if w.raw not in assignment_raws:
                    assigned.append("")  # a dynamic word: it may name any variable
            elif not value.startswith("-") and "=" not in value:
                assigned.append(value)
        return Subcommand(
            text, argv, name, bool(name), assigned, command.background, writes, reads, False, via, write_words
        )
    recursive = False
    if name in OPERAND_WRITERS and not read_only and operand_unknown(name, words[start + 1 :]):
        writes = [*writes, ""]  # `cp q "$p"`, `tee a/{b,c}`: a write no word names (round 39)
    elif name in ("sqlite3", "sqlite") and [w for w in words[start + 2 :] if (w.value or "-")[:1] != "-"]:
        writes = [*writes, ""]  # `.output f`, `.save f`, `writefile('f', …)`, `VACUUM INTO 'f'` (round 39, review13)
    elif name in _AWKS and any(_AWK_WRITE(w.value or ">") or w.value == "inplace" for w in words[start + 1 :]):
        writes = [*writes, ""]  # `awk '{print > "s"}'`, `gawk -i inplace`: files its code names (round 40)
    elif name == "cp" and not read_only and copies_tree(words[start + 1 :]):
        writes = [*writes, ""]  # `cp -r payload/. .`: the source tree's own names (round 39, review13)
    if name in _ASSIGNING_BUILTINS:
        assigned.extend(_assigned_by_builtin(name, [w.value for w in words[start + 1 :]]))
    spec = program_spec(name) if name else None
    if spec is not None or name == "git" or name == "find" or (not read_only and name in WRITING_PROGRAMS):
        args: list[str | None] = [w.value for w in words[start + 1 :]] if len(words) > start + 1 else []
        if spec is not None or name == "git" or name == "find":
            program_paths, recursive = program_reads(name, args, spec)
            if program_paths:
                reads.extend(program_paths)
            if spec is not None and _option_glob(name, spec, words[start + 1 :]):
                reads.append("")  # `date -f*` beside a file named `-f.env`: reads what no word names
            if name in RESPONSE_FILE_PROGRAMS and _glob_may_start(words[start + 1 :], "@"):
                # `strings ?list` beside a file named `@list`: a response file, whose words are unknown.
                reads.append("")
            if not recursive and name in FLAG_RECURSIVE:
                # `grep x *` beside a repository file named `-r` (or `-drecurse`, `ls *` beside `-R`):
                # a glob that can expand to an option may turn the walk on, so say it walks.
                recursive = _glob_may_be_option(words[start + 1 :])
        if not read_only and name in WRITING_PROGRAMS and args and "" in program_writes(name, args, spec):
            # `sort $opts`: a dynamic word may be `-o FILE`, a write no rule can check (named option
            # writes, `sort -o F`, are the analysis' write_targets, like the files `cp` writes).
            writes = [*writes, ""]
    if env_names:
        assigned = assigned + env_names
    return Subcommand(
        text, argv, name, bool(name), assigned, command.background, writes, reads, recursive, via, write_words
    )


def _glob_may_be_option(words: list[Word]) -> bool:
    """Whether a glob before any ``--`` may expand to an option (a file named ``-r``)."""
    for word in words:
        if word.value == "--" and not word.features:
            return False
        if "flag_glob" in word.features:
            return True
    return False


def _option_glob(name: str, spec: ProgramSpec, words: list[Word]) -> bool:
    """Whether an option word holding a pattern, before any ``--``, may name a file to read."""
    globbed: list[str] = []
    for word in words:
        if word.value == "--" and not word.features:
            break
        if word.value is not None and word.value[:1] == "-" and "glob" in word.features:
            globbed.append(word.value)
    return bool(globbed) and glob_may_name_file_option(name, spec, globbed)


def _glob_may_start(words: list[Word], char: str) -> bool:
    """Whether a glob may expand to a name starting with ``char`` (it starts with a pattern)."""
    for word in words:
        value = word.value
        if value is not None and ("flag_glob" in word.features or (value[:1] == char and "glob" in word.features)):
            return True
    return False


def _wrapper_writes(values: list[str | None]) -> list[str]:
    """Files the wrappers in front of a command write (``time -o F``); "" for a dynamic word."""
    out: list[str] = []
    for index, value in enumerate(values):
        if value is None:
            out.append("")
        elif value.rpartition("/")[2] in WRITING_PROGRAMS:
            out.extend(program_writes(value.rpartition("/")[2], values[index + 1 :], None))
    return out


_ASSIGNING_BUILTINS: Final = frozenset({"read", "printf", "mapfile", "readarray", "getopts"})
_READ_VALUED: Final = frozenset({"-d", "-n", "-N", "-p", "-t", "-u", "-i"})


def _assigned_by_builtin(name: str, args: list[str | None]) -> list[str]:
    """Variables ``read``/``printf -v``/``mapfile``/``getopts`` assign ("" when a name is dynamic)."""
    out: list[str] = []
    operands: list[str | None] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg is None:
            out.append("")
        elif arg in ("-v", "-a") or (name != "read" and arg in ("-u", "-C", "-c", "-d", "-n", "-O", "-s")):
            value = args[i] if i < len(args) else None
            if arg in ("-v", "-a"):
                out.append(value or "")
            i += 1
        elif name == "read" and arg in _READ_VALUED:
            i += 1
        elif arg.startswith("-") and arg != "-":
            continue
        else:
            operands.append(arg)
    if name == "read":
        out.extend([o or "" for o in operands] or ["REPLY"])
    elif name in ("mapfile", "readarray"):
        out.append((operands[-1] or "") if operands else "MAPFILE")
    elif name == "getopts" and len(operands) >= 2:
        out.append(operands[1] or "")
    return out


def _writes(command: PlanCommand) -> list[str]:
    out: list[str] = []
    for redirect in command.redirects:
        if redirect.kind != "file" or redirect.op not in _OUTPUT_OPS:
            continue
        target = redirect.target
        value = target.value if target is not None else None
        if target is None or value is None or "glob" in target.features:
            out.append("")
            if target is not None:
                out.extend(_static_directory(target.raw))
        elif redirect.op == ">&" and (is_fd_number(value) or value == "-"):
            continue
        elif value != "/dev/null":
            out.append(value)
    return out


def _write_words(command: PlanCommand) -> list[str]:
    """The output redirections of ``command`` whose target is known only at run time, as written
    (``> "$d/ls"``, ``>> "$(dirname "$(command -v git)")/ls"``): `Subcommand.write_words`."""
    return [
        (r.fd or "") + r.op + " " + r.target.raw
        for r in command.redirects
        if r.kind == "file" and r.op in _OUTPUT_OPS and r.target is not None
        and (r.target.value is None or "glob" in r.target.features)
    ]


def _static_directory(raw: str) -> list[str]:
    """The static directory a run-time redirection target lies in (``.git/hooks`` of
    ``.git/hooks/"$h"``), as a write too: a later program may find code there (a hook, a copy on
    ``PATH``) though the file's name is not known (red team, round 38). [] when none is static."""
    head, slash, _name = raw.rpartition("/")
    for home in ("$HOME/", "${HOME}/", '"$HOME"/', "~/"):  # `> $HOME/bin/$n`: the home is known (round 39)
        if head.startswith(home) or head + "/" == home:
            head = "~/" + head[len(home) :] if head + "/" != home else "~"
            break
    if not slash or not head or any(c in head[1:] if head.startswith("~/") else c in head for c in "$`*?[{\\'\"~"):
        return []
    return [head]


def _redirect_reads(command: PlanCommand) -> list[str]:
    out: list[str] = []
    for redirect in command.redirects:
        if redirect.kind != "file" or redirect.op not in _INPUT_OPS:
            continue
        target = redirect.target
        value = target.value if target is not None else None
        out.append("" if target is None or value is None or "glob" in target.features else value)
    return out


def _quote(value: str) -> str:
    """``shlex.quote``, inline (same output: its safe characters, else single quotes)."""
    if not value:
        return "''"
    if _all_safe(value, _SAFE_WORD):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


#: shlex's safe characters (``[\w@%+=:,./-]`` under re.ASCII) by ASCII code point, as bit flags:
#: _SAFE_WORD, and _SAFE_JOINED for those and the space between the words of a joined text. A scan
#: of code points (``ord(text[i])``: compiled, no string per character) costs a fraction of a regex call.
_SAFE: Final = bytes(
    [
        (1 if char in _SHLEX_SAFE else 0) | (2 if char in _SHLEX_SAFE or char == " " else 0)
        for char in [chr(code) for code in range(128)]
    ]
)
_SAFE_WORD: Final = 1
_SAFE_JOINED: Final = 2


def _all_safe(text: str, flag: int) -> bool:
    """True when no character of ``text`` needs shell quoting (``_SAFE_JOINED``: spaces are fine too)."""
    for index in range(len(text)):
        code = ord(text[index])
        if code >= 128 or not _SAFE[code] & flag:
            return False
    return True
