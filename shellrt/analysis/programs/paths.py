"""Which paths a modelled program reads, and whether it walks directories.

Permission checks resolve these paths against the workspace and ``Read(...)`` deny
rules, so over-reporting is safe and under-reporting is not: a dynamic word adds
"" (unknown), an option naming a file that lists more files (``--files0-from``,
``sha256sum -c``) adds "" too, and a recursive program with no operand reads ".".
"""

from __future__ import annotations

from typing import Final

from .spec import ProgramSpec, parse_args

__all__ = ["ALWAYS_RECURSIVE", "program_reads"]

#: Programs that walk every directory operand.
ALWAYS_RECURSIVE: Final = frozenset({"find", "du", "rg", "tree", "fd", "fdfind"})
#: Programs whose operands are not paths (strings, numbers, names).
_NO_PATH_OPERANDS: Final = frozenset({
    "echo", "printf", "seq", "sleep", "true", "false", ":", "test", "[", "date", "id", "groups", "uname", "hostname",
    "which", "type", "whoami", "printenv", "pgrep", "ps", "help", "history", "command", "top", "tr", "basename",
    "dirname", "yes", "cd", "pushd", "popd", "dirs", "wait", "locale", "getconf", "nproc", "uptime", "free", "who",
    "w", "users", "arch", "tty", "env", "man", "expr", "numfmt", "cal",
})
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
}
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
    "cksum": frozenset({"--check"}),
}
_RECURSIVE_FLAGS: Final[dict[str, frozenset[str]]] = {
    "grep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "egrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "fgrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "ls": frozenset({"-R", "--recursive"}),
    "diff": frozenset({"-r", "--recursive"}),
}
_FIND_VALUE_PATHS: Final = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
#: Programs that list the working directory when given no operand.
_DOT_BY_DEFAULT: Final = frozenset({"ls", "dir", "vdir"})
#: sed's options as far as paths go (its judge model refuses -f; here -e/-f values are not operands).
_SED: Final = ProgramSpec("sed", short="nErsuz", short_arg="elf")


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
    for arg in args:
        if arg is None:
            reads.append("")
        else:
            static.append(arg)
    if name == "jq":
        for index, arg in enumerate(static[:-2]):
            if arg in ("--slurpfile", "--rawfile"):
                reads.append(static[index + 2])
    options: list[tuple[str, str | None]] = []
    if spec.free_form or not any(arg[:1] == "-" and arg != "-" for arg in static):
        positionals = static  # no options: nothing to parse (the common case)
    else:
        parsed = parse_args(_SED if name == "sed" else spec, static)
        options = parsed.options
        positionals = parsed.positionals
    keys = {key for key, _ in options}
    file_options = _FILE_OPTIONS.get(name, frozenset())
    list_options = _LIST_OPTIONS.get(name, frozenset())
    for key, value in options:
        if key in file_options and value is not None:
            reads.append(value)
        if key in list_options:
            if value is not None:
                reads.append(value)
            reads.append("")
    pattern_opts = _PATTERN_FIRST.get(name)
    if pattern_opts is not None and positionals and keys.isdisjoint(pattern_opts):
        positionals = positionals[1:]
    if name in _NO_PATH_OPERANDS:
        positionals = []
    if name == "sed" and positionals and not keys & {"-e", "--expression", "-f", "--file"}:
        positionals = positionals[1:]
    if name == "xxd":
        positionals = positionals[:1]
    recursive = name in ALWAYS_RECURSIVE or not keys.isdisjoint(_RECURSIVE_FLAGS.get(name, frozenset()))
    if name in ("grep", "egrep", "fgrep") and any(v == "recurse" for _, v in options):
        recursive = True
    for path in positionals:
        if path != "-":
            reads.append(path)
    if not positionals and (recursive or name in _DOT_BY_DEFAULT) and name != "diff":
        reads.append(".")
    return reads, recursive


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


_GIT_CONTENT: Final = frozenset({"show", "diff", "grep", "cat-file", "blame", "annotate", "diff-tree", "diff-index",
                                 "diff-files", "stash", "archive", "format-patch"})
_GIT_LOGS: Final = frozenset({"log", "whatchanged", "reflog", "rev-list", "shortlog"})
_CONTENT_FLAGS: Final = ("-p", "--patch", "-u", "-U", "--unified", "-L", "-S", "-G", "--word-diff", "--color-words",
                         "--pickaxe", "--full-diff", "--cc", "-c", "--remerge-diff", "--binary")


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
                sub == "config" and key == "-f"):
            if eq:
                reads.append(attached)
            elif index + 1 < len(rest):
                reads.append(rest[index + 1])
    if sub in ("diff", "grep") and "--no-index" in rest:
        reads.extend([v for v in rest if v and not v.startswith("-")] or ["."])
        recursive = sub == "grep"
    if recursive and "." not in reads:
        reads.append(".")
    return reads, recursive
