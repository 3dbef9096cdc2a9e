"""A Bash command's parts as the permission engine judges them (`CommandPart`).

Why a module of its own: the analysis is pure (no I/O), but what a part may
touch depends on the machine — symlinks in the workspace (``cat link/hostname``
with ``link -> /etc``), the repository's git configuration. This module turns
the analysis's subcommands into parts with resolved read and write paths and a
read-only verdict that includes "inside the allowed reads" and "git would run
nothing the repository names".

Each subcommand's ``name``, ``env_names``, ``background``, ``writes``,
``reads`` and ``recursive`` come from the analysis when it provides them; for
an analysis that does not yet, they are derived conservatively from the plan
(command-wide assignments, ``&`` and redirections are attributed to every part).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from sandbox._hostread import read_regular
from shellrt.analysis import CommandAnalysis, CommandPlan, Subcommand, analyze
from shellrt.analysis.loaded_code import loaded_code
from shellrt.analysis.unread_code import unread_code
from shellrt.permissions.embedded import startup_from_stdin, unknown_code
from shellrt.permissions.interfaces import CommandPart
from shellrt.permissions.rules import is_safe_env_name
from shellrt.tools._bash_glob import bash_glob, dot_entries, is_bash_glob, option_values
from shellrt.tools._configfiles import config_hazard, config_program
from shellrt.tools._device_links import as_stdin, device_links
from shellrt.tools._gitdiscover import tops_up_to_git, tree_tops
from shellrt.tools._gitrepo import active_hooks, changed_paths, repo_code_keys

__all__ = ["GIT_HOOK_COMMANDS", "command_parts", "git_hazard", "git_reads_only", "runs_host_git"]

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_DECLARATIONS = frozenset({"export", "declare", "typeset", "readonly", "local"})
_NOT_STATIC_CHARS = frozenset("$`*?[]{}'\"\\~ \t\n")
_OUTPUT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<>"})
_INPUT_OPS = frozenset({"<", "<>", "<&"})
#: Programs that always walk the directories they are given.
_RECURSIVE_PROGRAMS = frozenset({"rg", "find", "tree", "du", "ag", "ack", "fd", "fdfind"})
#: git subcommands that search the tracked tree. (``show``/``log -p`` print history, which a
#: ``Read(...)`` rule on the work tree cannot describe: keep secrets out of history.)
_GIT_CONTENT = frozenset({"grep"})
_NULL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
#: Word features that make a word's meaning depend on run time (see ``analysis.nodes.Word``).
_RISKY_FEATURES = frozenset(
    {
        "parameter",
        "simple_parameter",
        "command_substitution",
        "process_substitution",
        "arithmetic",
        "pure_arithmetic",
        "ansi_c",
        "translated",
        "brace",
        "brace_char",
        "glob",
        "flag_glob",
        "unknown_node",
    }
)


def _stdin(plan: CommandPlan | None, argv: tuple[str, ...], source: str) -> tuple[str, ...]:
    """Where the part's standard input may come from (`CommandPart.stdin`): every plan command whose
    words end with the part's (a wrapper's too) counts, so a part named twice gets both (fail closed).
    In a pipeline, one the source shows only where a pipeline starts is first (``npm test | tail``:
    npm reads no pipe)."""
    found: list[str] = []
    commands = plan.commands if plan is not None and argv else []
    # The planner gives a here-document's redirection to the substitutions in its body too
    # (``cat <<EOF $(cp f m) EOF``): there it belongs to the first command that holds it.
    first: dict[int, object] = {}
    for command in commands:
        for redirect in command.redirects:
            first.setdefault(id(redirect), command)
    for command in commands:
        words = tuple(w.value for w in command.argv)
        if words[len(words) - len(argv) :] != argv:
            continue
        head = command.argv[0].value if command.argv else None
        if "pipeline" in command.context and _piped(head, source, command.context):
            found.append("|")
        for redirect in command.redirects:
            if redirect.fd not in (None, "0"):
                continue
            if first[id(redirect)] is not command and "command_substitution" in command.context:
                continue
            if redirect.kind != "file":
                found.append("<<")
            elif redirect.op in ("<", "<>"):
                found.append(redirect.target.value or "" if redirect.target is not None else "")
            elif redirect.op == "<&" and (redirect.target is None or redirect.target.value != "-"):
                found.append("")  # a descriptor the command opened: what it holds is not known here
    return tuple(dict.fromkeys(found))


def _opened_by_shell(plan: CommandPlan | None, argv: tuple[str, ...]) -> list[str]:
    """The files bash opens for reading before the part's program starts: input redirections on any descriptor
    (``ls < q``, ``ls 3<q``), the part's own and those of a compound around it (``{ ls; } < q``), as written.
    A program that looks at a name without opening it (`_OPENS_NOTHING`) still waits on these (round 53)."""
    if plan is None:
        return []
    redirects = list(plan.redirects)
    for command in plan.commands:
        words = tuple(w.value for w in command.argv)
        if argv and words[len(words) - len(argv) :] == argv:
            redirects += command.redirects
    return [
        r.target.value or ""
        for r in redirects
        if r.kind == "file"
        and r.op in ("<", "<>")
        and r.target is not None
        and not _fd_dup(r.op, r.target.value)
    ]


def _piped(word: str | None, source: str, context: Sequence[str]) -> bool:
    """Whether a command in a pipeline (first word ``word``, planner ``context``) may be fed by a
    pipe in ``source``: unless the source shows it only where a pipeline starts (the source's
    start, ``;``, ``&&``, ``||``, ``&``, a newline, ``(``) outside any compound command of the
    pipeline, fail closed (``cat s | { echo; guile; }``, ``| "guile"``, a word not written literally)."""
    inner = context[context.index("pipeline") + 1 :] if "pipeline" in context else []
    if not word or any(c in _COMPOUNDS for c in inner):
        return True
    spelled = [m.start() for m in re.finditer(r"(?<![\w./-])" + re.escape(word) + r"(?![\w./-])", source)]
    return not spelled or not all(_STARTS.search(source[:at]) for at in spelled)


#: Constructs whose commands share the pipeline's input (any of them may read it).
_COMPOUNDS = frozenset({"group", "subshell", "while", "until", "for", "if", "case", "select", "function"})
#: What may precede a command that starts a pipeline: a separator, then blanks, assignments, ``!``,
#: ``time [-p]``, and a quote that opens the word.
_STARTS = re.compile(
    r"(?:^|[;\n(]|(?<!\|)&|\|\|)(?:\s|\\\n|!|time\s|-p\s|[A-Za-z_][A-Za-z0-9_]*=\S*\s)*['\"\\]?$"
)


#: Programs that look at a name without opening it (``ls -l fifo``, ``test -p fifo``).
_OPENS_NOTHING = frozenset({"ls", "stat", "test", "[", "[[", "du", "find", "readlink", "realpath"})


def _not_a_file(reads: Sequence[str]) -> str:
    """Why reading one of ``reads`` (resolved host paths) is not a bounded read of data ("" when none is):
    a FIFO waits for a writer and takes what another command writes to it, and a device or socket in the
    workspace (``mkfifo``, ``mknod`` by an earlier call, or an unpacked archive) is not a file of data (red
    team, round 52: ``cat fifo`` was read-only, allowed unasked and in plan mode, and blocked until its
    timeout). ``stat`` does not open: it never waits on the FIFO."""
    for path in reads:
        try:
            mode = os.stat(path).st_mode if path and path != "/dev/null" else 0
        except (OSError, ValueError):
            continue  # nothing there (yet): what is made later is the sandbox's to bound
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            return f"it reads {path}, {kind}: opening it may wait for a writer or take another command's data"
    return ""


def runs_host_git(a: CommandAnalysis) -> bool:
    """Whether `command_parts` of ``a`` runs git on the host (to inspect a repository), or reads
    the configuration files a program finds from its directory (`_configfiles`, round 50): the
    steps of it that a hostile repository (or a hung filesystem above it) can make block."""
    return any((n := _name(sub)) == "git" or config_program(n, sub.argv) for sub in a.subcommands)


def command_parts(
    a: CommandAnalysis,
    cwd: str,
    inside: Callable[[str], bool],
    *,
    check_git: bool = True,
    to_host: Callable[[str], str] = os.path.realpath,
) -> list[CommandPart]:
    """The parts of ``a`` run in ``cwd`` (a host path); ``inside(path) -> bool`` says whether
    a resolved host path is inside the allowed reads; ``to_host`` resolves an absolute path
    as the sandbox sees it to the host (docker's container workspace)."""
    plan = a.plan
    plan_names: list[str] = []
    plan_writes: list[str] = []
    plan_reads: list[str] = []
    background = False
    per_part_ok = a.parse_ok
    if plan is not None:
        plan_names = [x.name for x in plan.assignments]
        for command in plan.commands:
            plan_names += [x.name for x in command.assignments]
        for redirect in plan.redirects:
            if redirect.kind != "file":
                continue
            value = redirect.target.value if redirect.target is not None else None
            if redirect.op in _OUTPUT_OPS and not _fd_dup(redirect.op, value) and value not in _NULL_TARGETS:
                plan_writes.append(value or "")
            if redirect.op in _INPUT_OPS and not _fd_dup(redirect.op, value):
                plan_reads.append(value or "")
        background = "&" in plan.operators
        per_part_ok = per_part_ok and _flat(plan)
    # Words bash expands as globs (quoted ``'.*'`` is a grep pattern, not a path); None: unknown.
    globs: set[str] | None = None
    if plan is not None:
        globs = set()
        for command in plan.commands:
            for w in [*command.argv, *[r.target for r in command.redirects if r.target is not None]]:
                if w.value is not None and not {"glob", "flag_glob"}.isdisjoint(w.features):
                    globs.add(w.value)
        for redirect in plan.redirects:
            target = redirect.target
            if (
                target is not None
                and target.value is not None
                and not {"glob", "flag_glob"}.isdisjoint(target.features)
            ):
                globs.add(target.value)
    bases = _cd_bases(cwd, a.cd_targets, to_host)
    cd_unknown = _cd_unknown(a) or _cd_logical(a.cd_targets, bases)
    # Where the parts may run; none named when a `cd` leads where no word says (round 16).
    dirs = () if cd_unknown or len(bases) > _MAX_BASES else tuple(sorted(set(bases)))
    linking = len(a.subcommands) > 1 and any(_makes_symlink(_name(s), s.argv) for s in a.subcommands)
    assigned = _assignment_sources(a)
    assigned_paths, history_files = _assigned_files(assigned)
    assignment_words = _all_assignments(a)
    # The analysis knows program writes for the command as a whole: every part carries them.
    program_writes = _resolve_writes([w for w in a.write_targets if w], bases, to_host, cd_unknown, globs)
    out: list[CommandPart] = []
    for sub in a.subcommands:
        argv = tuple(sub.argv)
        name = _name(sub)
        env_names = _attr_list(sub, "env_names")
        if env_names is None:
            env_names = list(plan_names)
        assignment_only = _assignment_only(argv)
        if assignment_only:
            env_names = [*env_names, *_declared(argv)]
        if (
            argv
            and argv[0] in _DECLARATIONS
            and any(w[:1] in "-+" and not w.startswith("--") and ("i" in w or "n" in w) for w in argv[1:])
        ):
            # -i: every assignment is arithmetic (``a[$(cmd)]`` runs cmd); -n: a listed name
            # becomes an alias of any variable (``declare -n LANG=PATH; LANG=.``).
            env_names = [*env_names, f"{argv[0]} -i/-n"]
        env_names = [*env_names, *_builtin_assigned(name, argv)]
        bg = getattr(sub, "background", None)
        is_bg = bool(bg) if bg is not None else background
        writes_raw = _attr_list(sub, "writes")
        writes_raw = plan_writes if writes_raw is None else [w for w in writes_raw if w not in _NULL_TARGETS]
        given_reads = _attr_list(sub, "reads")
        reads_raw = [
            *(plan_reads if given_reads is None else given_reads),
            *_word_reads(argv),
            *assigned_paths,
        ]
        rec = getattr(sub, "recursive", None)
        recursive = bool(rec) or _recursive(name, argv)
        if name == "git" and not _recursive(name, argv):
            # git diff/show/log -p print changes of *tracked* files only: a deny rule over an
            # untracked secret (`Read(./.env)`) must not make every `git diff` ask. What git history
            # holds is out of reach of path rules (docs/permissions.md, "What rules cannot cover").
            recursive = False
        writes = _resolve_writes([*writes_raw, *history_files], bases, to_host, cd_unknown, globs)
        if recursive:  # `grep -r S .*` walks `..` once a session set `shopt -u globskipdots` (round 56)
            reads_raw += [d for w in reads_raw if w and (globs is None or w in globs) for d in dot_entries(w)]
        reads = _resolve_all(reads_raw, bases, to_host, globs)
        if cd_unknown and any(w and not _absolute(w) for w in reads_raw):
            reads = tuple(sorted({*reads, ""}))  # relative to a directory a `cd` chose at run time
        if linking and not _makes_symlink(name, argv):
            # A link made by another part (``ln -s . up; cat up/secret``) leads where no path on
            # the disk says yet: what this part names is not known here.
            reads = tuple(sorted({*reads, ""})) if reads else reads
            writes = tuple(sorted({*writes, ""})) if writes else writes
        # First: listing a repository's changed files below must not run what it names.
        # Every directory the command may be in, last first: a `cd` can fail (a missing directory,
        # a file, `cd a b`) and leave bash where it was, and a git before a `cd` runs there (round 22).
        places = list(dict.fromkeys(reversed(bases))) if name == "git" else []
        hazard = next((h for p in places if (h := git_hazard(argv, p, hardened=a.read_only))), "") if (
            name == "git" and check_git) else ""
        if name == "git" and check_git and cd_unknown and not hazard:
            # The repository git obeys is where a `cd` led at run time, not the one checked (round 19).
            hazard = "git runs in a directory a `cd` chooses at run time, whose configuration was not checked"
        if name == "git" and check_git and not hazard and not a.read_only and git_reads_only(argv):
            # Only a read-only command gets the hardening environment (hooksPath=/dev/null):
            # a git read inside any other command (``git status > f``, ``git diff --output=f``)
            # runs the repository's own hooks when it refreshes the index.
            hooks = [h for p in places for h in active_hooks(_git_directory(argv, p))]
            if hooks:
                hazard = (
                    "the repository's own git hooks would run (" + ", ".join(hooks[:3]) + "); "
                    "review them before running git here"
                )
        if not hazard:
            hazard = path_lookup_hazard(name, a.shell)
        if not hazard and config_program(name, argv):
            # A configuration file found from where it runs may name code it runs (round 50).
            hazard = config_hazard(name, argv, () if cd_unknown else list(dict.fromkeys(bases)), inside)
        if name == "man" and any(w.startswith(("-M", "--manp")) for w in argv[1:]):
            # Pages from a chosen manpath: their ``.so FILE`` requests print any file.
            reads = tuple(sorted({*reads, ""}))
        if name in ("jq", "gojq", "jaq"):
            modules = _jq_modules(argv)
            nested = _jq_nested(argv, modules, bases)
            reads = tuple(sorted({*reads, *nested, *_resolve_all(modules, bases, to_host, set())}))
        if name == "git":
            # git walks up to find its repository: one above the workspace is read too.
            # Every ``.git`` on the way up to the one git takes (a ``mkdir .git`` is passed over: round 56).
            tops = {t for p in places for t in _git_tops(_git_directory(argv, p))}
            above = sorted(top for top in tops if not inside(top))
            reads = tuple(sorted({*reads, *above, *_git_object_reads(argv, bases)}))
            if any(_long_prefix(w, _GIT_STDIN_NAMES) for w in argv[1:]):  # `--batch-com`: an abbreviation
                reads = tuple(sorted({*reads, ""}))  # object names (HEAD:secrets/a) come from stdin
            if check_git and not hazard and _shows_changes(argv):
                # The diff prints the changed files' content: reads of each (a denied one asks).
                changed = [c for p in places for c in changed_paths(_git_directory(argv, p))]
                reads = tuple(sorted({*reads, *changed}))
        if recursive and _follows_links(name, argv):
            reads = tuple(sorted({*reads, *_linked_targets(reads)}))
        searches_tree = name == "git" and _git_split(argv, ".")[1] in _GIT_CONTENT
        if recursive and (searches_tree or not any(r and os.path.exists(r) for r in reads)):
            # No existing path named (or git grep, which searches the tree): the walk starts here.
            reads = tuple(sorted({*reads, *[os.path.realpath(b) for b in bases]}))
        why = ""
        read_only = False
        # Redirection writes are judged on their own (as writes), not as the program's effect.
        if not is_bg and not assignment_only:
            if a.read_only or (per_part_ok and _analyze(sub.text, a.shell).read_only):
                read_only = True
            else:
                why = "; ".join(a.reasons[:2]) or "it may change the system"
        if read_only and not name:
            read_only, why = False, "its program name is not static"
        unsafe = [n for n in env_names if not is_safe_env_name(n)]
        if read_only and unsafe:
            read_only, why = False, f"it sets {', '.join(unsafe)}, which can change what programs run"
        if read_only:
            outside = [r for r in reads if not r or not inside(r)]
            if outside:
                read_only = False
                shown = ", ".join(r or "(a path that is not known)" for r in outside[:3])
                why = f"it reads outside the workspace: {shown}"
        if read_only and hazard:
            read_only, why = False, hazard
        if read_only and name not in _OPENS_NOTHING and (odd := _not_a_file(reads)):
            read_only, why = False, odd  # `cat fifo` waits for a writer, or drains another's (round 52)
        if read_only and (odd := _not_a_file(_resolve_all(_opened_by_shell(plan, argv), bases, to_host, globs))):
            read_only, why = False, odd  # `ls < fifo`: bash opens it before `ls` starts (round 53)
        # `bash s <<< CODE` where `s -> /dev/stdin`: code no rule reads, spelt as a workspace file (round 53).
        linked_code = "" if read_only else _linked_code(name, argv, assignment_words, bases, to_host)
        out.append(
            CommandPart(
                text=sub.text,
                argv=argv,
                name=name,
                assignment_only=assignment_only,
                env_names=tuple(env_names),
                background=is_bg,
                writes=writes,
                reads=reads,
                program_writes=_part_program_writes(
                    program_writes,
                    _resolve_writes(
                        [*_aliased_sources(name, argv), *_download_writes(name, argv)],
                        bases,
                        to_host,
                        cd_unknown,
                    ),
                    linking,
                ),
                assigned=assigned,
                recursive=recursive,
                read_only=read_only,
                why_not=why,
                write_words=tuple(getattr(sub, "write_words", ())),
                hazard=hazard,
                dirs=dirs,
                stdin=_stdin(plan, argv, a.command),
                linked_code=linked_code,
            )
        )
    return out


#: Builtins of each shell dialect: run without a PATH search (POSIX sh: dash's set, which
#: BusyBox ash also has).
_SH_BUILTINS = frozenset(
    [
        ".", ":", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue", "echo", "eval", "exec", "exit",
        "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill", "local", "printf", "pwd", "read",
        "readonly", "return", "set", "shift", "test", "times", "trap", "true", "type", "ulimit", "umask", "unalias",
        "unset", "wait"
    ]
)
_BASH_BUILTINS = _SH_BUILTINS | frozenset(
    [
        "bind", "builtin", "caller", "compgen", "complete", "compopt", "declare", "dirs", "disown", "enable",
        "help", "history", "let", "logout", "mapfile", "popd", "pushd", "readarray", "shopt", "source", "suspend",
        "typeset"
    ]
)


#: Read-only programs that run further programs through a PATH search (man: groff, nroff, tbl,
#: preconv, the pager; locale --charmaps: gzip); one missing from the absolute entries comes from
#: any relative entry.
_PATH_SPAWNERS = frozenset({"man", "locale"})


def path_lookup_hazard(name: str, shell: str = "bash", path: str | None = None) -> str:
    """Why running ``name`` may run a file of the workspace: a relative ``PATH`` entry (``bin``,
    ``node_modules/.bin``, ``.``, an empty entry) is searched, from the command's own directory,
    before the first absolute entry holding the program. The command environment takes ``PATH``
    from the host's (``supervisor.env.base_env``), so ``ls`` there runs a repository's ``bin/ls``."""
    search = os.environ.get("PATH") if path is None else path
    if not search or not name or "/" in name:
        return ""
    relative = _relative_entries(search)
    if not relative or name in (_SH_BUILTINS if shell == "sh" else _BASH_BUILTINS):
        return ""
    if name in _PATH_SPAWNERS:
        return (
            f"{name} runs helper programs found on PATH, which searches the relative directory "
            f"{relative[0] or '.'!r}, so it may run a file of the workspace"
        )
    for entry in search.split(":"):
        if not entry.startswith("/"):
            return (
                f"PATH searches the relative directory {entry or '.'!r} for {name} before any absolute one "
                "holding it, so it may run a file of the workspace"
            )
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return ""
    return ""


_RELATIVE_ENTRIES: dict[str, tuple[str, ...]] = {}


def _relative_entries(search: str) -> tuple[str, ...]:
    """The relative entries of a ``PATH`` value ("" is the current directory), memoised per value."""
    found = _RELATIVE_ENTRIES.get(search)
    if found is None:
        found = tuple(e for e in search.split(":") if not e.startswith("/"))
        if len(_RELATIVE_ENTRIES) > 64:
            _RELATIVE_ENTRIES.clear()
        _RELATIVE_ENTRIES[search] = found
    return found


def _flat(plan: CommandPlan) -> bool:
    """Whether each simple command can be judged on its own: only simple commands joined by
    ``&& || ; | &`` (and declarations), every word static and literal. Anything else — loops,
    arithmetic, tests, case, functions, substitutions, here-documents, globs, expansions — is
    judged only as a whole (re-analysing one part's text would lose what made it dynamic)."""
    if plan.unsupported or plan.functions or plan.substitutions or plan.heredocs or plan.dynamic:
        return False
    if any(c.kind not in _DECLARATIONS for c in plan.constructs):
        return False
    for command in plan.commands:
        words = [*command.argv, *[a.value for a in command.assignments if a.value is not None]]
        words += [r.target for r in command.redirects if r.target is not None]
        if any(w.value is None or not _RISKY_FEATURES.isdisjoint(w.features) for w in words):
            return False
    return all(r.target is None or r.target.value is not None for r in plan.redirects)


def _git_split(argv: Sequence[str], cwd: str) -> tuple[str, str]:
    """(the directory git runs in after ``-C``, its subcommand or "")."""
    directory = cwd
    args = list(argv[1:])
    i = 0
    while i < len(args):
        if args[i] == "-C" and i + 1 < len(args):
            directory = _resolve(args[i + 1], directory)
            i += 2
            continue
        if args[i].startswith("-"):
            i += 1
            continue
        return directory, args[i]
    return directory, ""


def _git_directory(argv: Sequence[str], cwd: str) -> str:
    return _git_split(argv, cwd)[0]


def _shows_changes(argv: Sequence[str]) -> bool:
    """``git diff`` (any form) and ``git status -v``: they print uncommitted file content."""
    sub = _git_split(argv, ".")[1]
    if sub == "diff":
        return True
    return sub == "status" and any(w == "--verbose" or re.fullmatch(r"-[a-z]*v[a-z]*", w) for w in argv[2:])


#: git subcommands whose purpose includes running the repository's hooks (commit hooks,
#: checkout hooks...): an allow rule or approval for them accepts that.
GIT_HOOK_COMMANDS = frozenset(
    {
        "commit",
        "merge",
        "rebase",
        "checkout",
        "switch",
        "am",
        "pull",
        "push",
        "clone",
        "worktree",
        "cherry-pick",
        "revert",
        "reset",
        "restore",
        "add",
        "rm",
        "mv",
        "stash",
        "gc",
        "maintenance",
        "fetch",
        "branch",
        "tag",
        "update-ref",
        "apply",
        "submodule",
        "init",
        "notes",
        "replace",
    }
)


def git_reads_only(argv: Sequence[str]) -> bool:
    """Whether a git command's subcommand is not one that is meant to run hooks."""
    return _git_split(argv, ".")[1] not in GIT_HOOK_COMMANDS


def git_hazard(argv: Sequence[str], cwd: str, *, hardened: bool = True) -> str:
    """Why this git command would run a program the repository names ("" when none).
    ``hardened``: it runs with the override environment (a read-only command)."""
    directory = _git_directory(argv, cwd)
    if not os.path.isdir(directory):
        return ""
    keys = repo_code_keys(directory, hardened=hardened)
    alternates = _alternates(directory)
    if alternates:
        keys.append(alternates)
    if not keys:
        return ""
    return (
        "the repository's own git configuration names programs git would run or files it would write or read ("
        + ", ".join(keys[:4])
        + "); review them before running git here"
    )


def _alternates(directory: str) -> str:
    for candidate in (os.path.join(directory, ".git"), directory):
        path = os.path.join(candidate, "objects", "info", "alternates")
        if os.path.isfile(path):
            return f"objects/info/alternates ({path})"
    return ""


def _analyze(text: str, shell: str = "bash") -> CommandAnalysis:
    """A part's own analysis, in the dialect of the whole command's (``sh`` where bash is absent)."""
    return analyze(text, "sh" if shell == "sh" else "bash")


def _attr_list(sub: Subcommand, name: str) -> list[str] | None:
    value = getattr(sub, name, None)
    if value is None:
        return None
    return [str(v) for v in value]


def _name(sub: Subcommand) -> str:
    """The normalised static program name ("" when not static)."""
    given = getattr(sub, "name", None)
    if isinstance(given, str):
        return given  # the analysis normalises it (a path outside the system bin dirs stays a path)
    if not sub.argv:
        return ""
    first = sub.argv[0]
    if not first or any(c in _NOT_STATIC_CHARS for c in first) or _ASSIGNMENT.match(first):
        return ""
    return PurePosixPath(first).name


def _assignment_only(argv: Sequence[str]) -> bool:
    if not argv:
        return True
    if all(_ASSIGNMENT.match(w) for w in argv):
        return True
    if argv[0] in _DECLARATIONS:
        rest = [w for w in argv[1:] if not w.startswith("-")]
        return all(_ASSIGNMENT.match(w) or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w) for w in rest)
    return False


def _declared(argv: Sequence[str]) -> list[str]:
    names: list[str] = []
    for word in argv:
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)", word)
        if match and (_ASSIGNMENT.match(word) or (argv[0] in _DECLARATIONS and word != argv[0])):
            names.append(match.group(1))
    return names


#: Builtins that assign a variable named by an option value (``printf -vNAME``) or operand.
_ASSIGNING_BUILTINS = {"printf": "-v", "read": "", "mapfile": "", "readarray": "", "getopts": ""}


def _builtin_assigned(name: str, argv: Sequence[str]) -> list[str]:
    """Variables a builtin assigns (an exported one changes what later programs run:
    ``printf -vGIT_CONFIG_VALUE_0 …; git status``). A name that is not known is "?"."""
    if name not in _ASSIGNING_BUILTINS:
        return []
    if name != "printf":
        names = [w for w in argv[1:] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)]
        return names or ["REPLY" if name == "read" else "MAPFILE"]
    found: list[str] = []
    args = list(argv[1:])
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        word = args[i]
        if word.startswith("-v"):
            found.append(word[2:] or (args[i + 1] if i + 1 < len(args) else "?"))
            i += 1 if word[2:] else 2
            continue
        i += 1
    return [re.sub(r"\[.*", "", f) or "?" for f in found]


def _fd_dup(op: str, value: str | None) -> bool:
    return op in (">&", "<&") and value is not None and (value == "-" or (value.isascii() and value.isdigit()))


#: Most bases a command's ``cd``s may lead to before the rest counts as unknown.
_MAX_BASES = 64
_CD_PROGRAMS = frozenset({"cd", "pushd", "popd"})


def _cd_bases(cwd: str, targets: Sequence[str], to_host: Callable[[str], str]) -> list[str]:
    """Every directory the command may be in: each ``cd`` target from every directory reached
    before it (``cd a; cd b`` is in a/b, not only in b), the last one reached last."""
    bases = [cwd]
    for target in targets:
        if not target:
            continue
        if _absolute(target):
            reached = [to_host(os.path.expanduser(target))]
        else:
            reached = [_resolve(target, base) for base in bases]
        bases += [r for r in reached if r not in bases] or [reached[-1]]
        if len(bases) > _MAX_BASES:
            break
    return bases


def _cd_unknown(a: CommandAnalysis) -> bool:
    """Whether a ``cd`` may lead where no word says: ``cd -`` ($OLDPWD), ``pushd +1`` (the stack),
    a target known at run time, ``CDPATH`` (set here or inherited) or ``shopt -s cdable_vars``
    (``x=..; cd x``), or more ``cd``s than `_cd_bases` follows."""
    if (
        len(a.cd_targets) > 8
        or "CDPATH" in a.command
        or "cdable_vars" in a.command
        or os.environ.get("CDPATH")
    ):
        return True
    if any(_env_chdir(sub.argv) for sub in a.subcommands):
        return True  # `env -C DIR cmd`: cmd's relative paths are below DIR
    for sub in a.subcommands:
        name = _name(sub)
        if name not in _CD_PROGRAMS:
            continue
        words = sub.argv[1:]
        if _stack_move(name, words):
            return True
        for word in words:
            # `*?[`: bash changes into a directory whose name matches (`cd x?` is `cd xy`), round 19.
            if word == "-" or re.fullmatch(r"[+-]\d+", word) or any(c in word for c in "$`*?["):
                return True
            if _STACK_TILDE.match(word):
                return True  # `~-` is $OLDPWD, `~1`/`~+1`/`~-1` stack entries (round 22)
    return False


#: Tilde words bash reads from OLDPWD or the directory stack, not from any name in the command.
_STACK_TILDE = re.compile(r"~(-|[+-]?\d)")


def _stack_move(name: str, words: Sequence[str]) -> bool:
    """Whether a ``pushd``/``popd`` moves through the directory stack rather than to a named
    directory (round 22): ``popd`` returns to an entry pushed earlier, ``pushd`` with no directory
    swaps the top two, ``pushd -n DIR`` stacks DIR without entering it. Which entry that is
    depends on every earlier move, so the directory is unknown (git there asks)."""
    if name == "popd":
        return True
    operands = [w for w in words if w != "--" and not (w.startswith("-") and len(w) > 1)]
    return name == "pushd" and (not operands or any(w.startswith("-") and "n" in w[1:] for w in words))


def _cd_logical(targets: Sequence[str], bases: Sequence[str]) -> bool:
    """Whether bash's logical ``cd`` may end where the physical bases do not say (round 22).

    ``cd``/``pushd`` resolve ``..`` by dropping the name before it, a symlink included:
    ``cd l/..`` (``l -> clean/d``) returns to the directory holding ``l``, where ``realpath`` says
    ``clean``. So a ``..`` in any target, once any target passed through a symlink from any
    base, leaves the directory unknown (over-approximated: any target, any base)."""
    if not any(".." in target.split("/") for target in targets if target):
        return False
    for target in targets:
        if not target:
            continue
        expanded = os.path.expanduser(target)
        for base in ["/"] if os.path.isabs(expanded) else bases:
            current = base
            for name in expanded.split("/"):
                if name in ("", "."):
                    continue
                current = os.path.dirname(current) if name == ".." else os.path.join(current, name)
                if name != ".." and os.path.islink(current):
                    return True
    return False


def _env_chdir(argv: Sequence[str]) -> bool:
    """Whether an ``env`` in ``argv`` changes directory before it runs its command: ``-C DIR``,
    ``-iCDIR``, ``--chdir=DIR`` or an abbreviation (``--ch DIR``), read among env's own options."""
    for start, word in enumerate(argv):
        if word.rpartition("/")[2] != "env":
            continue
        j = start + 1
        while j < len(argv):
            option = argv[j]
            if option == "--" or not (option.startswith("-") or "=" in option) or option == "-":
                break
            j += 1
            if option.startswith("--"):
                if _long_prefix(option, ("chdir",)):
                    return True
                if "=" not in option and _long_prefix(option, ("unset", "split-string")):
                    j += 1
                continue
            if option.startswith("-"):
                for k in range(1, len(option)):
                    if option[k] == "C":
                        return True
                    if option[k] in "uS":
                        j += 1 if k == len(option) - 1 else 0
                        break
    return False


def _part_program_writes(
    command_wide: tuple[str, ...], sources: tuple[str, ...], linking: bool
) -> tuple[str, ...]:
    writes = tuple(sorted({*command_wide, *sources}))
    return (*writes, "") if linking and writes else writes


def _aliased_sources(name: str, argv: Sequence[str]) -> list[str]:
    """Files a part takes away from their path or gives a second, writable name: the sources of
    ``mv`` (renamed away: ``mv keep.txt k`` is as much an edit of keep.txt as ``rm``), of a hard
    ``ln`` and of ``cp -l``/``--link`` (writing the new name writes the same file)."""
    words = list(argv[1:])
    options = [w for w in words if w.startswith("-") and w != "-"]
    if name == "ln" and _makes_symlink(name, argv):
        return []
    if name == "cp" and not any(_long_prefix(w, ("link",)) or (w[1:2] != "-" and "l" in w[1:]) for w in options):
        return []
    if name not in ("mv", "ln", "cp"):
        return []
    operands: list[str] = []
    skip = False
    ended = False
    target_given = False
    for word in words:
        if skip:
            skip = False
            continue
        if not ended and word == "--":
            ended = True
            continue
        if not ended and word.startswith("-") and word != "-":
            if word[:2] == "--":
                # getopt_long abbreviations: ``--targ=DIR``, ``--targ DIR``, ``--suf X``.
                long_value = _long_prefix(word, ("target-directory", "suffix"))
                skip = long_value and "=" not in word
                target_given = target_given or _long_prefix(word, ("target-directory",))
                continue
            for k in range(1, len(word)):  # a bundle: ``-ft DIR``, ``-ftDIR``, ``-bS.bak``
                if word[k] in "tS":
                    skip = k == len(word) - 1
                    target_given = target_given or word[k] == "t"
                    break
            continue
        operands.append(word)
    return operands if target_given else operands[:-1]


#: Output options of programs the analysis does not model (``curl -o F``, ``wget -O F``).
_OUTPUT_OPTIONS: dict[str, tuple[str, ...]] = {
    "curl": (
        "-o",
        "--output",
        "--output-dir",
        "-c",
        "--cookie-jar",
        "-D",
        "--dump-header",
        "--trace",
        "--stderr",
    ),
    "wget": (
        "-O",
        "--output-document",
        "-P",
        "--directory-prefix",
        "-o",
        "--output-file",
        "-a",
        "--append-output",
    ),
}


#: Short options of those programs that take a value (the rest of a bundle is that value).
_VALUE_LETTERS: dict[str, str] = {"curl": "AbcCdDeEFHKmoPQrtTuUwxXyYz", "wget": "aAbBdDeiIlnoOPQRtTUwXY"}


def _download_writes(name: str, argv: Sequence[str]) -> list[str]:
    """Files ``curl``/``wget``/``dd`` write by an option ("" = a name the URL or server picks):
    ``curl -o keep.txt URL`` overwrote a file an ``Edit(...)`` rule denies."""
    words = list(argv[1:])
    if name == "dd":
        return [w[3:] for w in words if w.startswith("of=")]
    options = _OUTPUT_OPTIONS.get(name)
    if options is None:
        return []
    found: list[str] = []
    for i, word in enumerate(words):
        option, eq, value = word.partition("=")
        following = words[i + 1] if i + 1 < len(words) else ""
        if word in options:
            found.append(following)
        elif eq and option in options and option.startswith("--"):
            found.append(value)
        elif word[:1] == "-" and word[1:2] not in ("-", "") and len(word) > 2:
            # A bundle (``curl -sSo F``, ``-sSoF``, ``wget -qO F``): letters up to the first one
            # that takes a value; an output option takes the rest of the word or the next one.
            for k in range(1, len(word)):
                if "-" + word[k] in options:
                    found.append(word[k + 1 :] or following)
                    break
                if name == "curl" and word[k] in "OJ":
                    found.append("")  # -O/-J: named by the URL or the server
                if word[k] in _VALUE_LETTERS[name]:
                    break  # `curl -XPOST`: the rest is that option's value
        if name == "curl" and word in ("--remote-name", "--remote-name-all", "-O", "-J"):
            found.append("")  # named by the URL or the server
    if name == "wget" and not found:
        found.append("")  # saved under the URL's file name
    return found


def _makes_symlink(name: str, argv: Sequence[str]) -> bool:
    """``ln -s``/``--symbolic``, ``cp -s``/``--symbolic-link`` (bundles such as ``-sf`` included)."""
    if name not in ("ln", "cp"):
        return False
    long = "symbolic" if name == "ln" else "symbolic-link"
    return any(
        _long_prefix(w, (long,)) or (w[:1] == "-" and w[1:2] not in ("-", "") and "s" in w[1:]) for w in argv[1:]
    )


def _absolute(word: str) -> bool:
    return os.path.isabs(os.path.expanduser(word)) or word == "~+" or word.startswith("~+/")


def _resolve_writes(
    words: Sequence[str],
    bases: Sequence[str],
    to_host: Callable[[str], str],
    unknown: bool,
    globs: set[str] | None = None,
) -> tuple[str, ...]:
    """Write targets from every directory the command may be in ("" = not known); a word bash
    expands as a glob (``rm -rf ./*``) also writes what it expands to."""
    out: set[str] = set()
    for word in words:
        if not word or "{}" in word:  # find -exec / xargs -I fill `{}` in with what they found
            out.add("")
            continue
        resolved = {_resolve_host(word, base, to_host) for base in bases}
        if globs is None or word in globs:
            for base in bases:
                resolved.update(_glob_matches(word, base, to_host))
        out.update(resolved)
        if (unknown and not _absolute(word)) or any(_hard_linked(r) for r in resolved):
            out.add("")
    return tuple(sorted(out))


def _hard_linked(path: str) -> bool:
    """A regular file with more than one name: writing it writes every other name, which no path
    says (``link keep.txt h`` earlier, then ``echo x > h``)."""
    try:
        st = os.lstat(path) if path else None
    except OSError:
        return False
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def _assigned_files(assigned: Sequence[str]) -> tuple[list[str], list[str]]:
    """Files the shell opens by a variable's name: ``HISTFILE`` (``HISTFILE=secret; history -r;
    history`` prints it, ``history -w`` writes it), as (reads, writes). Values known only at run
    time are left out (the assignment is then judged as any dynamic value is)."""
    files: list[str] = []
    for raw in assigned:
        name, eq, value = raw.partition("=")
        value = value.strip("'\"")
        if eq and value and name.rstrip("+") == "HISTFILE" and not any(c in value for c in "$`"):
            files.append(value)
    return files, files


def _linked_code(
    name: str, argv: Sequence[str], assigned: Sequence[str], bases: Sequence[str], to_host: Callable[[str], str]
) -> str:
    """Why the part runs code no rule reads once its workspace links are read as what they lead to ("" when it
    does not): ``bash s`` with ``s -> /dev/stdin`` is ``bash /dev/stdin`` (red team, round 53)."""
    words = [*argv[1:], *assigned]  # the program word is `name`'s: a link there is a program, run as itself
    if not any(_code_read_through(name, argv, assigned, reading) for reading in as_stdin(words)):
        return ""  # not even every value as standard input makes code: no link can
    links = device_links(words, bases, to_host)
    code = _code_read_through(name, argv, assigned, links) if links else ""
    if not code:
        return ""
    shown = ", ".join(f"{w} is {t}" for w, t in list(links.items())[:2])
    return f"through a link of the workspace ({shown}), {code}"


def _code_read_through(name: str, argv: Sequence[str], assigned: Sequence[str], links: dict[str, str]) -> str:
    """Why the part runs code no rule reads with each word of ``links`` read as its value there ("" if not)."""
    words = [*argv[:1], *(links.get(w, w) for w in argv[1:])]
    return (
        unknown_code(name, words)
        or startup_from_stdin([*(links.get(w, w) for w in assigned), *words])
        or loaded_code(name, words)
        or unread_code(name, words)
    )


def _all_assignments(a: CommandAnalysis) -> tuple[str, ...]:
    """Every assignment of the command as written, its commands' prefixes too (``BASH_ENV=s bash -c :``)."""
    plan = a.plan
    if plan is None:
        return ()
    return tuple(x.raw for x in [*plan.assignments, *(y for c in plan.commands for y in c.assignments)])


def _assignment_sources(a: CommandAnalysis) -> tuple[str, ...]:
    """The command's assignments as written (``GIT_EXTERNAL_DIFF='rm f' git diff``: the prefix is
    no word of the part, yet git runs its value); the whole command when there is no plan."""
    plan = a.plan
    if plan is None:
        return (a.command,)
    return tuple(x.raw for x in plan.assignments)


#: Most option letters of one bundle followed; a longer run of letters is an unknown read.
_MAX_BUNDLE_LETTERS = 64


def _bundle_tails(body: str) -> list[str]:
    """Every value a short-option bundle may hold (``lfFILE``: ``fFILE``, ``FILE``): any letter
    may take the rest of the word, so each tail after a run of option letters is a possible path;
    the first character that is no letter or digit lies inside the value."""
    tails: list[str] = []
    k = 1
    while k < len(body) and body[k - 1].isascii() and body[k - 1].isalnum():
        if k > _MAX_BUNDLE_LETTERS:
            return [*tails, ""]
        tails.append(body[k:])
        k += 1
    return tails


def _word_reads(argv: Sequence[str]) -> list[str]:
    """Every word that may name a path: arguments, ``--opt=VALUE`` and ``-fVALUE`` values (every
    tail of a bundle: ``-lfVALUE``), the
    value of a ``key=VALUE`` operand (``dd if=F``) and a file named after ``@`` or ``<`` (response
    files ``gcc @F``, ``curl -d @F``, ``curl -F f=@F``: the program reads F).
    Over-inclusive on purpose: a pattern taken for a path can only make a call ask."""
    found: list[str] = []
    unknown = False
    for word in argv[1:]:
        if not word or word == "-":
            continue
        if word.startswith("-"):
            if "=" in word:
                found.append(word.split("=", 1)[1])
            if not word.startswith("--") and len(word) > 2:
                tails = _bundle_tails(word[1:])
                unknown = unknown or "" in tails
                found.extend(tails)
            continue
        found.append(word)
        if "=" in word:
            found.append(word.split("=", 1)[1])
    found += [w[1:] for w in found if w[:1] in ("@", "<")]
    return [w for w in found if w] + ([""] if unknown else [])


def _long_prefix(word: str, names: Sequence[str]) -> bool:
    """Whether ``word`` is ``--X`` or ``--X=...`` with X a prefix of one of ``names``: getopt_long
    takes any unambiguous abbreviation (``grep --recur``, ``--derefer``), so every prefix counts."""
    if word[:2] != "--":
        return False
    option = word[2:].partition("=")[0]
    return bool(option) and any(name.startswith(option) for name in names)


def _grep_recurse_value(argv: Sequence[str]) -> bool:
    """``grep -d rec``, ``-drec``, ``--dir=rec``: grep reads any prefix of ``recurse`` as it."""
    for index, word in enumerate(argv[1:], start=1):
        if word == "--":
            return False
        value: str | None = None
        if _long_prefix(word, ("directories",)):
            value = word.partition("=")[2] if "=" in word else (argv[index + 1] if index + 1 < len(argv) else "")
        elif word[:1] == "-" and word[1:2] != "-" and "d" in word[1:]:
            rest = word[word.index("d", 1) + 1 :]
            value = rest or (argv[index + 1] if index + 1 < len(argv) else "")
        if value and "recurse".startswith(value):
            return True
    return False


def _recursive(name: str, argv: Sequence[str]) -> bool:
    if name in _RECURSIVE_PROGRAMS:
        return True
    flags = [w for w in argv[1:] if w.startswith("-")]
    if name in ("grep", "egrep", "fgrep", "zgrep"):
        return any(
            _long_prefix(w, ("recursive", "dereference-recursive"))
            or (not w.startswith("--") and ("r" in w[1:] or "R" in w[1:]))
            for w in flags
        ) or _grep_recurse_value(argv)
    if name in ("tar", "bsdtar", "7z", "7za", "pax", "cpio"):
        return True  # archivers recurse into the directories they are given
    if name in ("ls", "cp", "chmod", "chown", "diff", "zip", "rsync", "scp"):
        short = "Rra" if name in ("cp", "rsync") else "Rr"
        return any(
            _long_prefix(w, ("recursive", "archive", "recurse-paths"))
            or (not w.startswith("--") and any(c in w[1:] for c in short))
            for w in flags
        )
    if name == "git":
        words = [w for w in argv[1:] if not w.startswith("-")]
        if words and words[0] in ("add", "stash"):
            # Staging a directory (or everything) copies a denied file into the index and history.
            paths = words[1:]
            return (
                not paths
                or any(os.path.isdir(p) or not _GLOB_CHARS.isdisjoint(p) for p in paths)
                or any(w in ("-A", "--all", "-u", "--update", "--include-untracked") for w in flags)
            )
        return bool(words) and words[0] in _GIT_CONTENT
    return False


def _resolve(word: str, base: str) -> str:
    expanded = os.path.expanduser(word)
    return os.path.realpath(os.path.join(base, expanded))


def _resolve_host(word: str, base: str, to_host: Callable[[str], str]) -> str:
    if word == "~+" or word.startswith("~+/"):  # $PWD, not a user named "+" (``> ~+/f``)
        return _resolve(base + word[2:], base)
    if re.match(r"~(-|[+-]?\d)", word):
        return ""  # ``~-`` is $OLDPWD, ``~N`` the directory stack: not known here
    expanded = os.path.expanduser(word)
    return to_host(expanded) if os.path.isabs(expanded) else _resolve(expanded, base)


def _resolve_all(
    words: Sequence[str], bases: Sequence[str], to_host: Callable[[str], str], globs: set[str] | None = None
) -> tuple[str, ...]:
    """Resolved paths of ``words`` from each base; a word in ``globs`` (None: every word)
    also reads what it expands to."""
    out: set[str] = set()
    for word in words:
        if not word or any(c in word for c in "$`") or re.match(r"~(-|[+-]?\d)", word):
            out.add("")  # ``~-`` is $OLDPWD, ``~N`` the directory stack: not known here
            continue
        if word == "~+" or word.startswith("~+/"):
            for base in bases:
                out.add(_resolve(base + word[2:], base))
            continue
        if os.path.isabs(os.path.expanduser(word)):
            out.add(to_host(os.path.expanduser(word)))
            if to_host is os.path.realpath:  # host paths as they are: the name as written counts too
                out.add(os.path.normpath(os.path.expanduser(word)))
            if globs is None or word in globs:
                out.update(_glob_matches(to_host(os.path.expanduser(word)), "/", to_host))
            continue
        for base in bases:
            # Resolved and as written (``.env -> store/x``): deny rules match either (docs/permissions.md).
            out.add(_resolve(word, base))
            out.add(os.path.normpath(os.path.join(base, os.path.expanduser(word))))
            if globs is None or word in globs:
                out.update(_glob_matches(word, base, to_host))
    return tuple(sorted(out))


_GLOB_CHARS = frozenset("*?[")
_GLOB_LIMIT = 10_000
#: Option values (every tail of each ``-`` name) one word's matches may name before its reads count as
#: unknown: a name is up to 254 of them, and 2,000 such names took 14 s to resolve (round 56, reviewa).
_OPTION_VALUES_LIMIT = 20_000


def _glob_matches(word: str, base: str, to_host: Callable[[str], str]) -> list[str]:
    """What a glob word expands to (resolved): ``cat sec*/a`` reads ``secrets/a``, which a
    ``Read(...)`` deny rule must see. In bash's dialect, under any shell option (`bash_glob`):
    hidden names, any case, ``**`` at any depth (over-inclusive on purpose)."""
    if not is_bash_glob(word):
        return []
    expanded = os.path.expanduser(word)
    found: list[str] = []
    values_left = _OPTION_VALUES_LIMIT
    for match in bash_glob(expanded, "/" if os.path.isabs(expanded) else base, _GLOB_LIMIT):
        if not match:
            found.append("")  # too many to judge one by one: unknown, which fails closed
            break
        found.append(to_host(match) if os.path.isabs(word) else os.path.realpath(match))
        if not os.path.isabs(word):
            found.append(os.path.normpath(match))
            values = option_values(os.path.relpath(match, base))  # `?f.env` -> `-f.env`: reads `.env`
            values_left -= len(values)
            if values_left < 0:
                found.append("")  # too many option values to resolve one by one: unknown (fails closed)
                break
            found.extend(_resolve_all(values, [base], to_host, set()))
    return found


#: Flags with which a recursive program follows symlinks found inside the tree it walks.
_FOLLOW_FLAGS: dict[str, tuple[str, ...]] = {
    "grep": ("-R", "--dereference-recursive"),
    "egrep": ("-R", "--dereference-recursive"),
    "fgrep": ("-R", "--dereference-recursive"),
    "rg": ("-L", "--follow"),
    "find": ("-L", "-follow"),
    "fd": ("-L", "--follow"),
    "fdfind": ("-L", "--follow"),
    "tree": ("-l",),
    "du": ("-L", "--dereference"),
    "ls": ("-L", "--dereference"),
    "ag": ("-f", "--follow"),
}


def _may_expand_to_option(word: str) -> bool:
    """Whether a (possibly glob) word may expand to a name starting with ``-``: a pattern opening
    with ``*``, ``?``, a bracket or an extglob operator, or ``-`` followed by a glob. Quoting is
    gone by now, so a quoted pattern counts too (fails closed: more reads, never fewer)."""
    if not word or not any(c in word for c in "*?["):
        return False
    return word[0] in "*?[-" or (word[0] in "@!+" and word[1:2] == "(")


def _follows_links(name: str, argv: Sequence[str]) -> bool:
    """Whether a recursive walk follows symlinks below its roots (unknown programs: yes)."""
    flags = _FOLLOW_FLAGS.get(name)
    if flags is None:
        return True
    for word in argv[1:]:
        if word == "--":
            break
        if _may_expand_to_option(word):
            return True  # a repository file named ``-R`` (red team, round 13)
        if word in flags or _long_prefix(word, ("follow", "dereference", "dereference-recursive")):
            return True  # getopt_long abbreviations too (``--derefer``, ``--fol``)
        short = [f[1] for f in flags if len(f) == 2]
        if word.startswith("-") and not word.startswith("--") and any(c in word[1:] for c in short):
            return True
    return False


def _linked_targets(roots: Sequence[str], limit: int = 20_000) -> list[str]:
    """Resolved targets of the symlinks below ``roots``: a walk that follows them reads there."""
    found: list[str] = []
    seen = 0
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for entry in (*dirnames, *filenames):
                seen += 1
                full = os.path.join(dirpath, entry)
                if os.path.islink(full):
                    found.append(os.path.realpath(full))
            if seen > limit:
                found.append("")  # not walked to the end: unknown, which fails closed
                return found
    return found


#: git options that read object names or paths from stdin: what they print is not known here.
_GIT_STDIN_NAMES = ("batch", "batch-command", "stdin", "stdin-paths")
_JQ_KEYWORD = re.compile(r"(?<![.$\w])(?:import|include)\b")
_JQ_MODULE = re.compile(r"\b(?:import|include)\s*\"((?:[^\"\\]|\\.)*)\"")


def _jq_modules(argv: Sequence[str]) -> list[str]:
    """Files a jq filter loads: ``import "p" as $x`` reads p.json, ``import "p" as x`` and
    ``include "p"`` read p.jq (searched from the current directory and ``-L`` dirs, which are
    read words already). A module directive jq may take from elsewhere is unknown ("")."""
    found: list[str] = []
    for word in argv[1:]:
        if "import" not in word and "include" not in word:
            continue
        paths = _JQ_MODULE.findall(word)
        if len(_JQ_KEYWORD.findall(word)) > len(paths):
            found.append("")  # a directive written some other way (a comment inside): unknown
        for path in paths:
            if "\\" in path or os.path.isabs(path) or path.startswith("~"):
                found.append("")
                continue
            found += [path, f"{path}.json", f"{path}.jq", os.path.join(path, os.path.basename(path) + ".jq")]
    return found


def _jq_nested(argv: Sequence[str], modules: Sequence[str], bases: Sequence[str]) -> list[str]:
    """A filter read from a file (``-f FILE``) or a module that itself imports: where those
    directives resolve is not modelled, so any of them is an unknown read ("")."""
    files: list[str] = []
    args = list(argv[1:])
    for i, word in enumerate(args):
        if word in ("-f", "--from-file") and i + 1 < len(args):
            files.append(args[i + 1])
        elif word.startswith("--from-file="):
            files.append(word.split("=", 1)[1])
    files += [m for m in modules if m.endswith(".jq")]
    for name in files:
        for base in bases:
            path = _resolve(name, base)
            data = read_regular(path, 1 << 20)  # never a FIFO's blocking open on the host
            if data is None:
                continue
            text = data.decode("utf-8", "replace")
            if _JQ_KEYWORD.search(text):
                return [""]
    return []


def _git_object_reads(argv: Sequence[str], bases: Sequence[str]) -> list[str]:
    """Paths named by git object names ``REV:path`` / ``:path`` / ``:N:path``: ``git show
    HEAD:secrets/a`` prints that file as committed. A path starting ``./`` or ``../`` is
    relative to the current directory, any other to the repository's top level."""
    found: list[str] = []
    for word in argv[1:]:
        if word.startswith("-") or ":" not in word or "://" in word:
            continue
        path = word.split(":", 1)[1]
        if re.fullmatch(r"[0-3]:.*", path):
            path = path[2:]
        if not path:
            continue
        if path.startswith("/"):
            found.append("")  # ':/text' searches commit messages; an absolute path is unknown here
            continue
        for base in bases:
            found.append(_resolve(path, base))
            if not path.startswith(("./", "../")):
                # Relative to the top of the tree: of every repository git may take from here (round 56).
                found += [_resolve(path, top) for top in tree_tops(base)]
    return found


def _git_tops(directory: str) -> list[str]:
    """`tops_up_to_git`, or ``directory`` itself outside any repository."""
    return tops_up_to_git(directory) or [os.path.realpath(directory)]
