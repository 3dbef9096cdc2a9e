"""Which paths a modelled program reads or writes, and whether it walks directories.

Permission checks resolve these paths against the workspace and ``Read(...)`` deny
rules, so over-reporting is safe and under-reporting is not: a dynamic word adds
"" (unknown), an option naming a file that lists more files (``--files0-from``,
``sha256sum -c``) adds "" too, and a recursive program with no operand reads ".".
The files a program writes through its options or operands (``sort -o F``,
``uniq IN OUT``, ``git diff --output=F``) are reported the same way, so they need
permission to write like a redirection does.
"""

from __future__ import annotations

import re
from typing import Final

from .git import check_git, git_file_values
from .sed import SED_SPEC, script_writes
from .spec import ARG, ARG2, ProgramSpec, parse_args

__all__ = [
    "ALWAYS_RECURSIVE",
    "FLAG_RECURSIVE",
    "RESPONSE_FILE_PROGRAMS",
    "WRITING_PROGRAMS",
    "glob_may_name_file_option",
    "program_reads",
    "program_writes",
]

#: Programs that walk every directory operand.
ALWAYS_RECURSIVE: Final = frozenset({"find", "du", "rg", "tree", "fd", "fdfind"})
#: Programs whose operands are not paths (strings, numbers, names).
_NO_PATH_OPERANDS: Final = frozenset(
    {
        "echo",
        "printf",
        "seq",
        "sleep",
        "true",
        "false",
        ":",
        "test",
        "[",
        "date",
        "id",
        "groups",
        "uname",
        "hostname",
        "which",
        "type",
        "whoami",
        "printenv",
        "pgrep",
        "ps",
        "help",
        "history",
        "command",
        "tr",
        "basename",
        "dirname",
        "yes",
        "cd",
        "pushd",
        "popd",
        "dirs",
        "wait",
        "locale",
        "getconf",
        "nproc",
        "uptime",
        "free",
        "w",
        "arch",
        "tty",
        "env",
        "man",
        "expr",
        "numfmt",
        "cal",
    }
)
#: Programs whose first operand is a pattern or filter unless one of these options supplies it.
_PATTERN_FIRST: Final[dict[str, tuple[str, ...]]] = {
    "grep": ("-e", "-f", "--regexp", "--file"),
    "egrep": ("-e", "-f", "--regexp", "--file"),
    "fgrep": ("-e", "-f", "--regexp", "--file"),
    "rg": ("-e", "-f", "--regexp", "--file", "--files", "--type-list"),
    "jq": ("-f", "--from-file"),
    "fd": (),
    "fdfind": (),
}
#: Options whose value is a path the program reads.
_FILE_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "date": frozenset({"-f", "--file", "-r", "--reference"}),
    "diff": frozenset({"--from-file", "--to-file", "-X", "--exclude-from"}),
    "du": frozenset({"-X", "--exclude-from"}),
    "file": frozenset({"-m", "--magic-file"}),
    "hexdump": frozenset({"-f"}),
    "grep": frozenset({"-f", "--file", "--exclude-from"}),
    "egrep": frozenset({"-f", "--file", "--exclude-from"}),
    "fgrep": frozenset({"-f", "--file", "--exclude-from"}),
    "rg": frozenset({"-f", "--file", "--ignore-file"}),
    "jq": frozenset({"-f", "--from-file"}),
    "sort": frozenset({"--random-source"}),
    "realpath": frozenset({"--relative-to", "--relative-base"}),
    "fd": frozenset({"--ignore-file", "--search-path", "--base-directory"}),
    "fdfind": frozenset({"--ignore-file", "--search-path", "--base-directory"}),
    "tree": frozenset({"--fromfile"}),
    "pgrep": frozenset({"--pidfile", "-F"}),
}
#: Programs that replace every ``@FILE`` argument by the words FILE holds before they parse options,
#: even after ``--`` (binutils, through libiberty's ``expandargv``): ``strings @list`` reads the
#: files ``list`` names, which are unknown here.
RESPONSE_FILE_PROGRAMS: Final = frozenset({"strings"})
#: Options whose value is a file listing further files to read (those names are unknown here).
_LIST_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "wc": frozenset({"--files0-from"}),
    "du": frozenset({"--files0-from"}),
    "sort": frozenset({"--files0-from"}),
    "file": frozenset({"-f", "--files-from"}),
    "md5sum": frozenset({"-c", "--check"}),
    "sha1sum": frozenset({"-c", "--check"}),
    "sha224sum": frozenset({"-c", "--check"}),
    "sha256sum": frozenset({"-c", "--check"}),
    "sha384sum": frozenset({"-c", "--check"}),
    "sha512sum": frozenset({"-c", "--check"}),
    "b2sum": frozenset({"-c", "--check"}),
    "cksum": frozenset({"-c", "--check"}),
}
_RECURSIVE_FLAGS: Final[dict[str, frozenset[str]]] = {
    "grep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "egrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "fgrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "ls": frozenset({"-R", "--recursive"}),
    "diff": frozenset({"-r", "--recursive"}),
}
#: Programs a flag makes walk their directory operands: a glob that can expand to an option
#: (``grep x *`` next to a repository file named ``-r``) may make them recursive.
FLAG_RECURSIVE: Final = frozenset(_RECURSIVE_FLAGS)
_FIND_VALUE_PATHS: Final = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
#: Programs that list the working directory when given no operand.
_DOT_BY_DEFAULT: Final = frozenset({"ls", "dir", "vdir"})
#: sed's options as far as paths go (its judge model refuses -f; here -e/-f values are not operands).
_SED: Final = ProgramSpec("sed", short="nErsuz", short_arg="elf")


_NO_KEYS: Final[set[str]] = set()  # never mutated
_NO_OPTIONS: Final[frozenset[str]] = frozenset()


def program_reads(name: str, args: list[str | None], spec: ProgramSpec | None) -> tuple[list[str], bool]:
    """(paths ``name args`` may read, whether it walks directories); ``None`` args are dynamic words."""
    if name == "find":
        return _find(args)
    if name == "git":
        return _git(args)
    if spec is None:
        return [], False
    if not args:
        recursive = name in ALWAYS_RECURSIVE
        return (["."] if recursive or name in _DOT_BY_DEFAULT else []), recursive
    reads: list[str] = []
    static: list[str] = []
    has_option = False
    for arg in args:
        if arg is None:
            reads.append("")
        else:
            static.append(arg)
            if arg[:1] == "-" and arg != "-":
                has_option = True
    if name in RESPONSE_FILE_PROGRAMS:
        for arg in static:
            if arg[:1] == "@" and len(arg) > 1:
                reads.extend([arg[1:], ""])  # the response file, and the words it holds
    if name == "jq":
        for index, arg in enumerate(static[:-2]):
            if arg in ("--slurpfile", "--rawfile"):
                reads.append(static[index + 2])
    keys: set[str] = _NO_KEYS
    recursive = name in ALWAYS_RECURSIVE
    if spec.free_form or not has_option:
        positionals = static  # no options: nothing to parse (the common case)
    else:
        parsed = parse_args(_SED if name == "sed" else spec, static)
        options = parsed.options
        positionals = parsed.positionals
        keys = {key for key, _ in options}
        file_options = _FILE_OPTIONS.get(name, _NO_OPTIONS)
        list_options = _LIST_OPTIONS.get(name, _NO_OPTIONS)
        for key, value in options:
            if key in file_options and value is not None:
                reads.append(value)
            if key in list_options:
                if value is not None:
                    reads.append(value)
                reads.append("")
        if parsed.reasons and (name in _FILE_OPTIONS or name in _LIST_OPTIONS):
            reads.extend(_abbreviated_file_values(name, static, spec))
        if not recursive and not keys.isdisjoint(_RECURSIVE_FLAGS.get(name, _NO_OPTIONS)):
            recursive = True
        if name in ("grep", "egrep", "fgrep") and any(
            key in ("-d", "--directories") and _recurse_value(v) for key, v in options
        ):
            recursive = True  # `-d rec`: grep takes any unambiguous abbreviation of the value
        if not recursive and name in _RECURSIVE_FLAGS and parsed.reasons:
            recursive = _abbreviated_recursion(name, static)
    if name == "jq":
        reads.extend(_jq_module_reads(static, parse_args(spec, static).values("-L") if has_option else []))
    pattern_opts = _PATTERN_FIRST.get(name)
    if pattern_opts is not None and positionals and keys.isdisjoint(pattern_opts):
        positionals = positionals[1:]
    if name in _NO_PATH_OPERANDS:
        positionals = []
    if name == "sed" and positionals and not keys & {"-e", "--expression", "-f", "--file"}:
        positionals = positionals[1:]
    if name == "xxd":
        positionals = positionals[:1]
    if name == "who" and len(positionals) > 1:
        positionals = []  # `who am i`: two operands are not a file (one is: a utmp file it prints)
    for path in positionals:
        if path != "-":
            reads.append(path)
    if not positionals and (recursive or name in _DOT_BY_DEFAULT) and name != "diff":
        reads.append(".")
    return reads, recursive


#: A jq module directive (``import "p" as $x;``, ``include "p";``) or ``modulemeta`` (which loads the
#: module its input names, at run time), not a field or variable named so.
_JQ_DIRECTIVE: Final = re.compile(r"(?<![.$\w])(?:import|include|modulemeta)\b")
_JQ_MODULE: Final = re.compile(r"(?<![.$\w])(?:import|include)\s*\"((?:[^\"\\]|\\.)*)\"")


def _jq_module_reads(args: list[str], dirs: list[str]) -> list[str]:
    """Files a jq filter's modules load: ``import "p" as $x`` reads ``p.json``, ``import "p" as x``
    and ``include "p"`` read ``p.jq`` (or ``p/p.jq``), searched in each ``-L DIR``, the current
    directory and jq's default path (``~/.jq``, beside the jq binary): that last part and any
    ``{search: ...}`` metadata are not known here, so a directive adds "" (unknown) too, and so
    does ``modulemeta`` (it loads ``NAME.jq`` for a NAME computed at run time, ``..`` allowed)."""
    if not any("import" in a or "include" in a or "modulemeta" in a for a in args):
        return []
    found: list[str] = []
    directives = False
    for arg in args:
        if arg[:1] == "-" or _JQ_DIRECTIVE.search(arg) is None:  # a filter is no option word
            continue
        directives = True
        for module in _JQ_MODULE.findall(arg):
            base = module.rpartition("/")[2]
            found.extend([module, f"{module}.json", f"{module}.jq", f"{module}/{base}.jq"])
    if not directives:
        return []
    for directory in dirs:
        found.extend([f"{directory}/{path}" for path in found if not path.startswith("/")])
    return [*dirs, *found, ""]


def _abbreviated_file_values(name: str, args: list[str], spec: ProgramSpec) -> list[str]:
    """What file and list options read when spelled as an abbreviation the model does not know:
    getopt_long takes any unambiguous prefix (``sort --files0=LIST`` prints the files LIST names).
    The part is not read-only already (an unknown option); this keeps its reads honest for the
    rules: a file option's value, and "" (unknown) for the files a list names."""
    files = [o[2:] for o in _FILE_OPTIONS.get(name, _NO_OPTIONS) if o[:2] == "--"]
    lists = [o[2:] for o in _LIST_OPTIONS.get(name, _NO_OPTIONS) if o[:2] == "--"]
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg[:2] != "--":
            continue
        option, eq, value = arg[2:].partition("=")
        if not option or option in spec.long:
            continue  # a known option: the parse has read it
        listed = any(known.startswith(option) for known in lists)
        if not listed and not any(known.startswith(option) for known in files):
            continue
        if not eq:
            value = args[index + 1] if index + 1 < len(args) else ""  # `--files0-f LIST`
        if value:
            out.append(value)
        if listed:
            out.append("")
    return out


def _recurse_value(value: str | None) -> bool:
    """Whether grep reads a ``--directories`` value as ``recurse`` (a prefix of it: ``rec``)."""
    return bool(value) and "recurse".startswith(value or "-")


def _abbreviated_recursion(name: str, args: list[str]) -> bool:
    """Whether a long option the model does not know may be an abbreviation getopt_long expands to
    a recursion flag (``grep --recur``, ``--derefer``, ``--dir=rec``, ``ls --recur``). The part is
    not read-only already (an unknown option); this makes an allow rule's part walk, so a
    ``Read(...)`` deny rule inside the walk still applies."""
    longs = [flag[2:] for flag in _RECURSIVE_FLAGS[name] if flag[:2] == "--"]
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        if arg[:2] != "--":
            continue
        option, eq, value = arg[2:].partition("=")
        if not option:
            continue
        if any(flag.startswith(option) for flag in longs):
            return True
        if name in ("grep", "egrep", "fgrep") and "directories".startswith(option):
            if not eq:
                value = args[index + 1] if index + 1 < len(args) else ""
            if _recurse_value(value):
                return True
    return False


def _find(args: list[str | None]) -> tuple[list[str], bool]:
    reads: list[str] = []
    i = 0
    count = len(args)
    while i < count and (args[i] in ("-H", "-L", "-P", "-D") or (args[i] or "").startswith("-O")):
        i += 2 if args[i] == "-D" else 1
    start = i
    while i < count:
        arg = args[i]
        if arg is None:
            reads.append("")
        elif arg.startswith("-") or arg in ("(", ")", "!", ","):
            break
        else:
            reads.append(arg)
        i += 1
    if i == start:
        reads.append(".")
    while i < count:
        arg = args[i]
        i += 1
        if arg is None:
            reads.append("")
        elif (arg in _FIND_VALUE_PATHS or (arg.startswith("-newer") and len(arg) == 8)) and i < count:
            reads.append(args[i] or "")
            i += 1
        elif arg == "-files0-from" and i < count:
            reads.extend([args[i] or "", ""])
            i += 1
    return reads, True


_GIT_CONTENT: Final = frozenset(
    {
        "show",
        "diff",
        "grep",
        "cat-file",
        "blame",
        "annotate",
        "diff-tree",
        "diff-index",
        "diff-files",
        "stash",
        "archive",
        "format-patch",
    }
)
_GIT_LOGS: Final = frozenset({"log", "whatchanged", "reflog", "rev-list", "shortlog"})
_CONTENT_FLAGS: Final = (
    "-p",
    "--patch",
    "-u",
    "-U",
    "--unified",
    "-L",
    "-S",
    "-G",
    "--word-diff",
    "--color-words",
    "--pickaxe",
    "--full-diff",
    "--cc",
    "-c",
    "--remerge-diff",
    "--binary",
)


def _git(args: list[str | None]) -> tuple[list[str], bool]:
    """git reads its repository (the working directory); these are the paths it reads besides."""
    reads: list[str] = []
    values = [a or "" for a in args]
    if None in args:
        reads.append("")
    sub = next((v for v in values if not v.startswith("-")), "")
    rest = values[values.index(sub) + 1 :] if sub else []
    # Subcommands that print file contents from the repository (any commit, any path in it): a
    # recursive read of the tree, so a Read deny rule inside it is not auto-allowed.
    recursive = sub in _GIT_CONTENT or (sub in _GIT_LOGS and any(v.startswith(_CONTENT_FLAGS) for v in rest))
    for index, value in enumerate(rest):
        key, eq, attached = value.partition("=")
        if key in ("--contents", "--ignore-revs-file", "--exclude-from", "--file", "--blob") or (
            sub == "config" and key == "-f"
        ):
            if eq:
                reads.append(attached)
            elif index + 1 < len(rest):
                reads.append(rest[index + 1])
    if None not in args:
        reads.extend([v for v in git_file_values(values) if v not in reads])
    if sub in ("diff", "grep") and "--no-index" in rest:
        reads.extend([v for v in rest if v and not v.startswith("-")] or ["."])
        recursive = sub == "grep"
    if recursive and "." not in reads:
        reads.append(".")
    return reads, recursive


# -- writes --------------------------------------------------------------------------------

#: Short and long options whose value is a file or directory the program writes (long names may be
#: abbreviated, as getopt_long accepts: ``sort --out=F``).
_WRITE_SHORT: Final[dict[str, str]] = {"sort": "oT", "tree": "o", "time": "o", "strace": "o", "ltrace": "o"}
_WRITE_LONG: Final[dict[str, tuple[str, ...]]] = {
    "sort": ("output", "temporary-directory"),
    "tree": (),
    "time": ("output",),
    "strace": ("output",),
    "ltrace": ("output",),
}
#: Programs whose operands after the first are output files (``uniq IN OUT``, ``xxd IN OUT``).
_OUTPUT_OPERANDS: Final = frozenset({"uniq", "xxd"})
#: GNU time as a program (``/usr/bin/time -o F cmd``): options end at the command it runs.
_TIME: Final = ProgramSpec(
    "time",
    short="apqvV",
    short_arg="fo",
    posix_order=True,
    long={
        "append": 0,
        "format": 1,
        "portability": 0,
        "output": 1,
        "verbose": 0,
        "quiet": 0,
        "help": 0,
        "version": 0,
    },
)
#: Tracers write their trace to ``-o FILE``; their options end at the command they run.
_WRAPPER_SPECS: Final = {
    "time": _TIME,
    "strace": ProgramSpec("strace", short_arg="eopsuEIbaOPSX", posix_order=True),
    "ltrace": ProgramSpec("ltrace", short_arg="oepsuan", posix_order=True),
}
#: find actions that write the file named by their first value.
_FIND_WRITES: Final = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
#: Every program :func:`program_writes` knows a writing option or operand of.
WRITING_PROGRAMS: Final = frozenset({*_WRITE_SHORT, *_OUTPUT_OPERANDS, "git", "find", "sed", "file"})


def program_writes(name: str, args: list[str | None], spec: ProgramSpec | None) -> list[str]:
    """Files ``name args`` writes through its options or operands ("" = a file whose name is not static).

    Over-reporting is safe and under-reporting is not: a dynamic word of such a program may
    be a writing option (``sort $opts``), so it adds "".
    """
    if name == "git":
        return _git_writes(args)
    if name == "find":
        return _find_writes(args)
    if name == "sed":
        return _sed_writes(args)
    if name == "file":
        return (
            [""]
            if any(
                a is None or a == "--compile" or (a[:1] == "-" and a[1:2] != "-" and "C" in a) for a in args
            )
            else []
        )
    spec = _WRAPPER_SPECS.get(name, spec)
    if spec is None or name not in WRITING_PROGRAMS:
        return []
    writes, operands = _option_writes(spec, args, _WRITE_SHORT.get(name, ""), _WRITE_LONG.get(name, ()))
    if name in _OUTPUT_OPERANDS:
        writes.extend([o or "" for o in operands[1:]])
    if (
        name == "tree"
        and any(a is not None and a[:1] == "-" and a[1:2] != "-" and "H" in a for a in args)
        and any(a is not None and a[:1] == "-" and a[1:2] != "-" and "R" in a for a in args)
    ):
        writes.append("")  # tree -R -H writes 00Tree.html files into the directories it lists
    return writes


def _option_writes(
    spec: ProgramSpec, args: list[str | None], shorts: str, longs: tuple[str, ...]
) -> tuple[list[str], list[str | None]]:
    """(values of the writing options, operands), parsed as getopt_long does (bundles, abbreviations)."""
    writes: list[str] = []
    operands: list[str | None] = []
    count = len(args)
    i = 0
    while i < count:
        arg = args[i]
        i += 1
        if arg is None:
            writes.append("")  # may be any option (`--output=...`) or an operand
            operands.append(None)
            continue
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg == "-" or arg[:1] != "-":
            operands.append(arg)
            if spec.posix_order:
                operands.extend(args[i:])
                break
            continue
        if arg[1] == "-":
            long_name, eq, attached = arg[2:].partition("=")
            if long_name and any(option.startswith(long_name) for option in longs):
                if eq:
                    writes.append(attached)
                elif i < count:
                    writes.append(args[i] or "")
                    i += 1
                continue
            arity = spec.long.get(long_name)
            if arity is None:
                matches = [v for k, v in spec.long.items() if k.startswith(long_name)]
                arity = matches[0] if len(matches) == 1 else 0
            if not eq and arity in (ARG, ARG2):
                i += 2 if arity == ARG2 else 1
            elif eq and arity == ARG2:
                i += 1
            continue
        body = arg[1:]
        for j, ch in enumerate(body):
            if ch in shorts or ch in spec.short_arg:
                short_value = body[j + 1 :]
                if not short_value:
                    short_value = (args[i] or "") if i < count else ""  # a dynamic value: unknown
                    i += 1
                if ch in shorts:
                    writes.append(short_value)
                break
            if ch in spec.short_opt:
                break
    return writes, operands


#: git subcommands that rewrite, create or delete files of the work tree (``git checkout -- f``
#: restores f, ``git rm f`` deletes it, ``git stash`` reverts every change).
_GIT_WORK_TREE_WRITERS: Final = frozenset(
    {
        "checkout", "restore", "switch", "rm", "mv", "clean", "stash", "apply", "am", "merge", "pull",
        "rebase", "cherry-pick", "revert", "read-tree", "checkout-index", "sparse-checkout", "worktree",
        "submodule", "clone", "bisect", "filter-branch", "mergetool",
    }
)  # fmt: skip


def _git_writes_work_tree(sub: str | None, args: list[str | None]) -> bool:
    """Whether ``git <sub> args`` may write work-tree files (``reset`` only with ``--hard``/``--merge``/``--keep``)."""
    if sub == "reset":
        return any(a in ("--hard", "--merge", "--keep") for a in args)
    return sub in _GIT_WORK_TREE_WRITERS


def _git_writes(args: list[str | None]) -> list[str]:
    """``--output[=]F`` of any subcommand, ``format-patch -o DIR``, ``archive -o F``, ``bundle create F``, ``config -f F``."""
    writes: list[str] = []
    sub: str | None = ""
    count = len(args)
    i = 0
    while i < count:
        arg = args[i]
        i += 1
        if arg is None:
            writes.append("")
            if sub == "":
                sub = None  # the subcommand is not known
            continue
        if sub == "" and arg[:1] != "-":
            sub = arg
            if sub == "bundle" and i + 1 < count and args[i] == "create":
                writes.append(args[i + 1] or "")
            continue
        if arg[:2] == "--":
            long_name, eq, value = arg[2:].partition("=")
            directory = sub == "format-patch" and long_name and "output-directory".startswith(long_name)
            if long_name and ("output".startswith(long_name) or directory):
                if eq:
                    writes.append(value)
                elif i < count:
                    writes.append(args[i] or "")
                    i += 1
        elif arg[:2] == "-o" and sub in ("format-patch", "archive"):
            writes.append(arg[2:] or (args[i] or "" if i < count else ""))
    if _git_writes_work_tree(sub, args):
        writes.append("")  # files of the work tree, named by pathspecs, commits or patches
    if sub == "format-patch" and not writes and "--stdout" not in args:
        writes.append(".")  # one patch file per commit, in the working directory
    if sub == "config":  # a writing form with a chosen file writes that file
        static = [a for a in args if a is not None]
        if check_git(static):
            for index, arg in enumerate(static):
                if arg in ("-f", "--file") and index + 1 < len(static):
                    writes.append(static[index + 1])
                elif arg.startswith("--file="):
                    writes.append(arg[len("--file=") :])
    return writes


def _find_writes(args: list[str | None]) -> list[str]:
    """Files of ``-fprint``/``-fprint0``/``-fprintf``/``-fls``; with ``-delete``, the starting points."""
    writes: list[str] = []
    starts: list[str] = []
    expression = False
    deletes = False
    count = len(args)
    i = 0
    while i < count:
        arg = args[i]
        i += 1
        if arg is None:
            writes.append("")
            continue
        if (
            not expression
            and (arg[:1] == "-" or arg in ("(", ")", "!", ","))
            and arg not in ("-H", "-L", "-P")
            and arg != "-D"
            and not arg.startswith("-O")
        ):
            expression = True
        elif not expression:
            if arg == "-D":
                i += 1
            elif arg[:1] != "-":
                starts.append(arg)
            continue
        if arg in _FIND_WRITES:
            writes.append((args[i] or "") if i < count else "")
            i += 1
        elif arg == "-delete":
            deletes = True
    if deletes:
        writes.extend(starts or ["."])
    return writes


def _sed_writes(args: list[str | None]) -> list[str]:
    """``sed -i`` writes its file operands; a script with a ``w`` command or ``s///w`` writes a file."""
    if None in args:
        return [""]
    static = [a for a in args if a is not None]
    parsed = parse_args(SED_SPEC, static)
    writes: list[str] = []
    scripts = parsed.values("-e", "--expression")
    operands = parsed.positionals
    if not scripts and not parsed.has("-f", "--file") and operands:
        scripts = [operands[0]]
        operands = operands[1:]
    if parsed.has("-f", "--file") or any(script_writes(s) for s in scripts) or (
            len(scripts) > 1 and script_writes("\n".join(scripts))):
        writes.append("")
    if parsed.has("-i", "--in-place"):
        writes.extend([o for o in operands if o != "-"])
    return writes


_PATTERN_CHARS: Final = frozenset("*?[")


def glob_may_name_file_option(name: str, spec: ProgramSpec, globs: list[str]) -> bool:
    """Whether an option word holding a pattern (``--from-file=*``, ``-f*``) may become an option whose
    value is a file the program reads, naming a file no word names.

    Why: bash matches the whole word against the directory's names, so beside a repository file
    named ``--from-file=.env`` (or ``-f.env``), ``diff --from-file=* f`` and ``date -f*`` run as
    ``diff --from-file=.env f`` and ``date -f.env``: each prints ``.env``, and the value the word
    shows (``*``) is not what is read (red team, round 56). A literal option name that names no
    file (``--include=*.py``, ``--exclude=*.o``) costs nothing. A pattern that starts with a
    wildcard (``?f.env``) is the tools' to expand: they read the names its matches give."""
    files = _FILE_OPTIONS.get(name, _NO_OPTIONS) | _LIST_OPTIONS.get(name, _NO_OPTIONS)
    longs = [o[2:] for o in files if o[:2] == "--"]
    shorts = [o for o in files if o[:2] != "--"]
    for value in globs:
        if value[:2] == "--":
            key, eq, _ = value[2:].partition("=")
            if not eq or not _PATTERN_CHARS.isdisjoint(key):
                if longs:
                    return True  # the name itself is a pattern: any long option
                continue
            if key in longs or (key not in spec.long and any(o.startswith(key) for o in longs)):
                return True
        elif value[:1] == "-" and shorts:
            return True  # `-f*`, `-n?f*`: the pattern may spell a short file option and its value
    return False
