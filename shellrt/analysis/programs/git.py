"""``git``: read subcommands only, without options that run code or write files.

Global options that redirect git to other repositories or configuration
(``-c``, ``--config-env``, ``-C``, ``--git-dir``, ``--work-tree``,
``--exec-path``) or start a pager (``-p``) are refused. Value options of git
subcommands are modelled attached-only (``--format=x``) unless git is known to
consume the next word, so a dangerous option can never hide as a "value".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .spec import ARG, OPTARG, ParsedArgs, ProgramSpec, longs, parse_args

#: Options git reads with an optional value, attached only (``--stat[=N]``, ``-M[N]``): the word after
#: them is never their value, so a ``--`` there ends the options for git as for the model. Any other
#: option that may take a value gives git's parser the next word, ``--`` included (see :func:`_parsed`).
_OPTIONAL_LONG: Final = frozenset(longs(
    "stat dirstat dirstat-by-file submodule color color-moved word-diff color-words abbrev break-rewrites "
    "find-renames find-copies relative ignore-submodules pretty expand-tabs notes show-notes decorate "
    "show-linear-break no-walk branches tags remotes ancestry-path untracked-files ignored porcelain column "
    "batch batch-check hash exclude-existing dirty broken"
))
_OPTIONAL_SHORT: Final = frozenset("MCBuwn")

__all__ = ["check_git", "git_file_values", "git_subcommand"]

_GLOBAL_OK: Final = frozenset(
    ["--no-pager", "-P", "--no-optional-locks", "--no-replace-objects", "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-lazy-fetch", "--no-advice", "--version"]
)
_GLOBAL_BAD: Final = {
    "-c": "sets configuration (can run code, e.g. core.fsmonitor)",
    "--config-env": "sets configuration from the environment",
    "-C": "runs in another directory (its config and hooks)",
    "--git-dir": "uses another repository", "--work-tree": "uses another work tree",
    "--exec-path": "runs git programs from another directory", "-p": "starts a pager",
    "--paginate": "starts a pager", "--namespace": "not modelled", "--bare": "not modelled",
    "--super-prefix": "not modelled", "--list-cmds": "not modelled", "--help": "opens a manual viewer",
}

_FORBIDDEN: Final = {
    "--output": "writes to a file", "--ext-diff": "runs an external diff program",
    "--textconv": "runs textconv filters", "--show-signature": "runs gpg", "--filters": "runs filters",
    "-O": "runs a pager", "--open-files-in-pager": "runs a pager", "--exec": "runs a program",
    "--upload-pack": "runs a program", "--receive-pack": "runs a program", "--edit": "opens an editor",
    "--dirty": "refreshes the index (rewrites .git/index)", "--broken": "refreshes the index (rewrites .git/index)",
    "--remerge-diff": "writes a temporary object directory in .git/objects (and runs merge drivers)",
}
#: ``--diff-merges=`` values that remerge (as ``--remerge-diff`` does).
_REMERGE: Final = frozenset({"r", "remerge"})

_DIFF_LONG: Final = (
    "patch no-patch unified=? output= output-indicator-new= output-indicator-old= output-indicator-context= "
    "raw patch-with-raw indent-heuristic no-indent-heuristic minimal patience histogram anchored= "
    "diff-algorithm=? stat=? compact-summary numstat shortstat dirstat=? cumulative dirstat-by-file=? summary "
    "patch-with-stat name-only name-status submodule=? color=? no-color color-moved=? no-color-moved "
    "color-moved-ws=? no-color-moved-ws word-diff=? word-diff-regex=? color-words=? no-renames rename-empty "
    "no-rename-empty check ws-error-highlight=? full-index binary abbrev=? break-rewrites=? find-renames=? "
    "find-copies=? find-copies-harder irreversible-delete diff-filter=? find-object=? pickaxe-all "
    "pickaxe-regex relative=? no-relative text ignore-cr-at-eol ignore-space-at-eol ignore-space-change "
    "ignore-all-space ignore-blank-lines ignore-matching-lines=? inter-hunk-context=? function-context exit-code "
    "quiet ext-diff no-ext-diff textconv no-textconv ignore-submodules=? src-prefix=? dst-prefix=? no-prefix "
    "default-prefix line-prefix=? ita-invisible-in-index ita-visible-in-index cached staged merge-base no-index "
    "stat-width=? stat-name-width=? stat-count=? stat-graph-width=? skip-to=? rotate-to=? "
    "diff-merges=? no-diff-merges combined-diff dense-combined remerge-diff"
)
_LOG_LONG: Final = (
    "oneline pretty=? format=? abbrev-commit no-abbrev-commit no-abbrev encoding=? expand-tabs=? no-expand-tabs "
    "notes=? no-notes show-notes=? standard-notes no-standard-notes show-signature relative-date date=? parents "
    "children left-right graph no-graph show-linear-break=? decorate=? no-decorate decorate-refs=? "
    "decorate-refs-exclude=? source mailmap no-mailmap use-mailmap no-use-mailmap full-diff log-size "
    "follow max-count=? skip=? since=? after=? until=? before=? since-as-filter=? author=? committer=? "
    "grep-reflog=? grep=? all-match invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings "
    "perl-regexp remove-empty merges no-merges min-parents=? max-parents=? no-min-parents no-max-parents "
    "first-parent exclude-first-parent-only not all branches=? tags=? remotes=? glob=? exclude=? "
    "exclude-hidden=? reflog alternate-refs single-worktree ignore-missing bisect stdin cherry-mark "
    "cherry-pick left-only right-only cherry walk-reflogs merge boundary simplify-by-decoration "
    "show-pulls full-history dense sparse simplify-merges ancestry-path=? topo-order date-order "
    "author-date-order reverse no-walk=? do-walk clear-decorations show-origin count in-commit-order "
    "objects objects-edge unpacked no-object-names"
)
_GIT_LOG: Final = longs(_DIFF_LONG + " " + _LOG_LONG)
_DIFF_SHORT: Final = "pusRaWbwzN"
_DIFF_OPT: Final = "UMCBlSGOI"
_LOG_SHORT: Final = _DIFF_SHORT + "iEFPgcmtrq"


def _spec(name: str, short: str = "", short_arg: str = "", short_opt: str = "", long: str = "",
          base: dict[str, int] | None = None, numeric: bool = False) -> ProgramSpec:
    table = dict(base or {})
    table.update(longs(long))
    # Attached-only values (`--format=x`): a separate word is never swallowed as a
    # value, so a forbidden option can never hide behind one (`--output` is refused
    # by name whatever its form).
    table = {name: (OPTARG if arity == ARG and name != "output" else arity) for name, arity in table.items()}
    return ProgramSpec(f"git {name}", short=short, short_arg=short_arg, short_opt=short_opt, long=table,
                       numeric=numeric, forbidden=_FORBIDDEN)


def _parsed(spec: ProgramSpec, args: list[str]) -> ParsedArgs:
    """``parse_args`` plus git's reading of ``--`` after an option that may take a value.

    git's parser gives a required value the next word whatever it is: ``git log --decorate-refs --
    --output=f`` takes ``--`` as the pattern and then writes the log to ``f``; ``git blame --contents
    -- --output=f x`` truncates ``f``. The model reads such options attached-only and ``--`` as the
    end of options, so every ``--`` must follow a word that cannot take it (round 32)."""
    parsed = parse_args(spec, args)
    # git also takes the value as the next word (`--diff-merges r`), which the model reads as an operand.
    spaced = any(args[at - 1] == "--diff-merges" and args[at] in _REMERGE for at in range(1, len(args)))
    if spaced or any(key == "--diff-merges" and value in _REMERGE for key, value in parsed.options):
        parsed.reasons.append(f"{spec.name} --diff-merges=remerge: {_FORBIDDEN['--remerge-diff']}")
    for at in range(1, len(args)):
        if args[at] == "--" and _may_take_next(spec, args[at - 1]):
            parsed.reasons.append(
                f"{spec.name}: git may read `--` as the value of {args[at - 1]} (the words after it are then "
                "options); attach the value (`--opt=value`) or drop the `--`"
            )
            break
    return parsed


def _may_take_next(spec: ProgramSpec, word: str) -> bool:
    """True when git may take the word after ``word`` as its value while the model does not."""
    if word[:1] != "-" or word == "-" or word == "--" or "=" in word:
        return False
    if word[:2] == "--":
        name = word[2:]
        return spec.long.get(name) == OPTARG and name not in _OPTIONAL_LONG
    body = word[1:]
    for index, ch in enumerate(body):
        if ch in spec.short_arg:
            return False  # the model gives it the next word (or the rest of this one) as git does
        if ch in spec.short_opt:
            return index == len(body) - 1 and ch not in _OPTIONAL_SHORT
        if ch not in spec.short:
            return False  # a number (``-5``) or an option the model refuses anyway
    return False


_LOG: Final = _spec("log", _LOG_SHORT, "n", _DIFF_OPT + "L", base=_GIT_LOG, numeric=True)
_SPECS: Final[dict[str, ProgramSpec]] = {
    "status": _spec("status", "sbvz", short_opt="u", long=(
        "short branch porcelain=? long verbose untracked-files=? ignored=? ignore-submodules=? column=? no-column "
        "ahead-behind no-ahead-behind renames no-renames find-renames=? show-stash null")),
    "log": _LOG,
    "show": _spec("show", _LOG_SHORT, "n", _DIFF_OPT, base=_GIT_LOG, numeric=True),
    "diff": _spec("diff", _DIFF_SHORT + "123", "", _DIFF_OPT, base=longs(_DIFF_LONG + " ours theirs base")),
    "whatchanged": _LOG,
    "shortlog": _spec("shortlog", _LOG_SHORT.replace("n", "") + "sne", "", "w", base=_GIT_LOG,
                      long="summary numbered email committer group=? format=?", numeric=True),
    "diff-tree": _spec("diff-tree", _DIFF_SHORT + "rtcmsv", "", _DIFF_OPT, base=longs(
        _DIFF_LONG + " root no-commit-id always stdin")),
    "diff-index": _spec("diff-index", _DIFF_SHORT + "m", "", _DIFF_OPT, base=longs(_DIFF_LONG)),
    "diff-files": _spec("diff-files", _DIFF_SHORT + "123cq", "", _DIFF_OPT, base=longs(_DIFF_LONG)),
    "blame": _spec("blame", "bcefhlnpstwsM", "L", "MC", long=(
        "root show-stats score-debug show-name show-number porcelain line-porcelain incremental encoding=? "
        "contents=? date=? progress no-progress reverse=? first-parent ignore-rev=? ignore-revs-file=? "
        "color-lines color-by-age minimal abbrev=? show-email since=?")),
    "grep": _spec("grep", "aiIwvhHEGFPnlLcozqWp", "efABCm", "", numeric=True, long=(
        "cached no-index untracked no-exclude-standard exclude-standard recurse-submodules text textconv "
        "no-textconv ignore-case max-depth= recursive no-recursive word-regexp invert-match full-name "
        "extended-regexp basic-regexp perl-regexp fixed-strings line-number column files-with-matches "
        "name-only files-without-match null only-matching count color=? no-color break heading "
        "show-function function-context threads= file= regexp= and or not all-match quiet max-count= "
        "after-context= before-context= context= open-files-in-pager=?")),
    "ls-files": _spec("ls-files", "cdmotiskuvfzx", "X", long=(
        "cached deleted modified others ignored stage killed unmerged directory no-empty-directory "
        "exclude= exclude-from= exclude-per-directory= exclude-standard error-unmatch with-tree= full-name "
        "recurse-submodules abbrev=? debug eol deduplicate sparse format=? resolve-undo")),
    "ls-tree": _spec("ls-tree", "dtrzl", long=(
        "long name-only name-status object-only full-name full-tree abbrev=? format=?")),
    "rev-parse": ProgramSpec("git rev-parse", free_form=True),
    "rev-list": _spec("rev-list", _LOG_SHORT, "n", "", base=_GIT_LOG, numeric=True, long=(
        "count objects-edge-aggressive indexed-objects disk-usage=? header timestamp bisect-vars bisect-all")),
    "describe": _spec("describe", "", "", "", long=(
        "all tags contains abbrev=? candidates=? exact-match debug long match=? exclude=? always first-parent "
        "dirty=? broken=?")),
    "cat-file": _spec("cat-file", "tspe", long="allow-unknown-type follow-symlinks batch=? batch-check=? "
                      "batch-all-objects buffer unordered mailmap no-mailmap use-mailmap"),
    "merge-base": _spec("merge-base", "a", long="all octopus independent is-ancestor fork-point"),
    "show-ref": _spec("show-ref", "dsq", long=(
        "head dereference hash=? abbrev=? verify exists quiet tags heads branches exclude-existing=?")),
    "for-each-ref": _spec("for-each-ref", "spi", long=(
        "count= shell perl python tcl sort= format= color=? points-at= merged=? no-merged=? contains=? "
        "no-contains=? ignore-case omit-empty stdin exclude=")),
    "name-rev": _spec("name-rev", "", long="tags refs= exclude= all stdin annotate-stdin name-only no-undefined "
                      "always"),
    "count-objects": _spec("count-objects", "vH", long="verbose human-readable"),
    "check-ignore": _spec("check-ignore", "qvnz", long="quiet verbose non-matching no-index stdin"),
    "check-attr": _spec("check-attr", "az", long="all cached stdin source="),
    "version": _spec("version", long="build-options"),
    "cherry": _spec("cherry", "v", long="abbrev=?"),
    "var": _spec("var", "l"),
}


def _positional_limit(limit: int, what: str) -> Callable[[ParsedArgs], list[str]]:
    def check(parsed: ParsedArgs) -> list[str]:
        return [f"git {what}"] if len(parsed.positionals) > limit else []

    return check


def _branch(args: list[str]) -> list[str]:
    spec = _spec("branch", "arvlqi", "", "", long=(
        "all remotes verbose list show-current merged=? no-merged=? contains=? no-contains=? points-at=? "
        "sort=? format=? color=? no-color column=? no-column ignore-case abbrev=? no-abbrev omit-empty"))
    parsed = _parsed(spec, args)
    reasons = list(parsed.reasons)
    if parsed.positionals and not parsed.has("-l", "--list"):
        reasons.append("git branch NAME creates a branch (only listing is read-only)")
    return reasons


def _tag(args: list[str]) -> list[str]:
    spec = _spec("tag", "li", "", "n", long=(
        "list sort=? contains=? no-contains=? merged=? no-merged=? points-at=? format=? column=? no-column "
        "ignore-case omit-empty color=?"))
    parsed = _parsed(spec, args)
    reasons = list(parsed.reasons)
    if parsed.positionals and not parsed.has("-l", "--list"):
        reasons.append("git tag NAME creates a tag (only listing is read-only)")
    return reasons


_CONFIG: Final = ProgramSpec("git config", short="lz", short_arg="f", long=_spec("config", long=(
    "get get-all get-regexp get-urlmatch list name-only null show-origin show-scope global system local "
    "worktree file= blob= type= bool int bool-or-int path expiry-date default= includes no-includes")).long)


def _config_args(args: list[str]) -> list[str]:
    """``git config get|list ...`` (git 2.46 verbs) as the option forms they stand for."""
    if args and args[0] in ("get", "list"):
        return ["--get" if args[0] == "get" else "--list", *args[1:]]
    return args


def _config(args: list[str]) -> list[str]:
    parsed = _parsed(_CONFIG, _config_args(args))
    reasons = list(parsed.reasons)
    if parsed.has("--list", "-l"):
        if parsed.positionals:
            reasons.append("git config --list takes no names")
    elif parsed.has("--get", "--get-all", "--get-regexp", "--get-urlmatch"):
        if len(parsed.positionals) > 2:
            reasons.append("git config: too many operands")
    elif len(parsed.positionals) != 1:
        reasons.append("git config NAME VALUE sets configuration (only reading is read-only)")
    elif "." not in parsed.positionals[0]:
        # A key always has a section (`user.name`); git 2.46 reads a bare word as its subcommand
        # (`git config edit` opens an editor on the file, creating a global one).
        reasons.append(f"git config {parsed.positionals[0]}: git 2.46 reads a word without a dot as a "
                       "subcommand, not a key (write `git config get SECTION.KEY`)")
    return reasons


def _remote(args: list[str]) -> list[str]:
    if not args or args in (["-v"], ["--verbose"]):
        return []
    if args[0] == "get-url" and all(a in ("--push", "--all") or not a.startswith("-") for a in args[1:]):
        return []
    return ["git remote: only listing and get-url are read-only (show/update contact the network)"]


def _sub_only(name: str, allowed: dict[str | None, ProgramSpec | None]) -> Callable[[list[str]], list[str]]:
    def check(args: list[str]) -> list[str]:
        action = args[0] if args else None
        if action is None and None in allowed:
            return []
        if action not in allowed or action is None:
            return [f"git {name} {action or ''}".rstrip() + " is not a read-only form"]
        spec = allowed[action]
        return _parsed(spec, args[1:]).reasons if spec is not None else []

    return check


_CUSTOM: Final[dict[str, Callable[[list[str]], list[str]]]] = {
    "branch": _branch,
    "tag": _tag,
    "config": _config,
    "remote": _remote,
    "stash": _sub_only("stash", {"list": _LOG, "show": _SPECS["show"]}),
    "worktree": _sub_only("worktree", {"list": _spec("worktree list", "vz", long="porcelain verbose")}),
    "reflog": _sub_only("reflog", {None: None, "show": _LOG, "exists": _spec("reflog exists")}),
    "submodule": _sub_only("submodule", {"status": _spec("submodule status", "q", long="cached recursive quiet")}),
}
_LIMITS: Final = {"symbolic-ref": 1}


def git_subcommand(args: list[str]) -> tuple[int, list[str]]:
    """Index of the subcommand in ``args`` (after global options) and reasons from globals."""
    reasons: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name = args[i].split("=", 1)[0]
        if name in _GLOBAL_OK:
            i += 1
            continue
        if name in _GLOBAL_BAD:
            reasons.append(f"git {name}: {_GLOBAL_BAD[name]}")
        else:
            reasons.append(f"git: unknown global option {name}")
        return i, reasons
    return i, reasons


#: Options of git subcommands whose value names a file git reads: ``config -f F`` prints F,
#: ``grep -f F`` takes patterns from F, ``ls-files -X F`` excludes by F, ``blame --contents F``
#: annotates F (``--exclude-per-directory=N`` reads N in every directory).
_FILE_OPTIONS: Final[dict[str, frozenset[str]]] = {
    "config": frozenset({"-f", "--file", "--blob"}),
    "grep": frozenset({"-f", "--file"}),
    "ls-files": frozenset({"-X", "--exclude-from", "--exclude-per-directory"}),
    "blame": frozenset({"--contents", "--ignore-revs-file"}),
}


def git_file_values(args: list[str]) -> list[str]:
    """Files ``git ARGS`` reads through its subcommand's options, parsed as the judge parses them
    (bundles ``-lfF``, attached ``-fF`` and separate ``-f F`` values alike)."""
    index, reasons = git_subcommand(args)
    if reasons or index >= len(args):
        return []
    sub, rest = args[index], args[index + 1 :]
    options = _FILE_OPTIONS.get(sub)
    if options is None:
        return []
    spec = _CONFIG if sub == "config" else _SPECS[sub]
    parsed = parse_args(spec, _config_args(rest) if sub == "config" else rest)
    return [value for key, value in parsed.options if key in options and value is not None]


def check_git(args: list[str]) -> list[str]:
    """Reasons ``git ARGS`` is not read-only (empty: read-only)."""
    index, reasons = git_subcommand(args)
    if reasons:
        return reasons
    if index >= len(args):
        return [] if args else ["git without a subcommand"]
    sub, rest = args[index], args[index + 1 :]
    if sub in _CUSTOM:
        return _CUSTOM[sub](rest)
    if sub == "symbolic-ref":
        parsed = _parsed(_spec("symbolic-ref", "q", long="short quiet no-recurse"), rest)
        return parsed.reasons + _positional_limit(1, "symbolic-ref NAME REF writes a ref")(parsed)
    spec = _SPECS.get(sub)
    if spec is None:
        return [f"git {sub} is not a known read-only git subcommand"]
    if spec.free_form:
        return []
    return _parsed(spec, rest).reasons
