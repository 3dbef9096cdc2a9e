"""Programs given to a read-only program's option, named only at run time (red team, round 35).

ripgrep runs ``--pre CMD`` and ``--hostname-bin CMD``, fd runs ``-x``/``-X`` (``--exec``,
``--exec-batch``) with the words after it. The permission engine reads such options of other programs
(``sort --compress-program``, ``man -P``, ``tar --to-command``) and refuses a value it cannot read;
here a run-time word (``x=$(printf '\\x72m'); rg --pre "$x" y .`` removes every file it searches) or
a glob (``fd -x ./*``) there is a part no rule matches. A static name is a word the rules read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from .globwords import expanded_by_bash
from .nodes import PlanCommand, Word
from .programs.wrappers import program_name

__all__ = ["OPTION_PROGRAMS", "RUNNERS", "run_time_option", "run_time_program"]

#: Programs and their options whose value (with fd, the words after it) is a program they run.
RUNNERS: Final[dict[str, frozenset[str]]] = {
    "rg": frozenset({"--pre", "--hostname-bin"}),
    "fd": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
    "fdfind": frozenset({"-x", "--exec", "-X", "--exec-batch"}),
}
#: Programs with an option whose value they run: `RUNNERS` and the permission engine's table
#: (``permissions/embedded.command_options``). A word of theirs known only at run time may be that option.
OPTION_PROGRAMS: Final[frozenset[str]] = frozenset(
    {*RUNNERS, "zip", "tar", "rsync", "sort", "env", "find", "scp", "sftp", "ssh", "man", "sdiff", "diff3",
     "less", "script", "su", "runuser", "flock", "sg", "git",
     # round 36: split --filter, wget --use-askpass, pandoc --filter, gcc -wrapper, vim +CMD/--cmd
     "split", "wget", "pandoc", "gcc", "g++", "cc", "c++", "gfortran", "cpp", "vi", "vim", "nvim", "gvim", "view",
     "rview", "vimdiff", "gvimdiff", "ex", "rvim", "evim", "gview", "vimx", "mvim", "nvi",
     # round 37: programs whose options run one and that run no code of the repository's otherwise, named
     # by round 36's and 37's name rules (`fzf --preview`, `tig --pager`, `gpg --photo-viewer`, `socat
     # EXEC:`, `latexmk -pdflatex=`, `java -XX:OnError=`): the option's name may be hidden too
     # (`p=--pager; tig "$p=$x"`), so a run-time word of theirs may be it.
     "fzf", "tig", "mysql", "psql", "gpg", "gpg2", "svn", "hg", "rclone", "restic", "borg", "socat", "unison",
     "latexmk", "java", "nano", "dpkg", "apt-get", "apt",
     # round 38: make's `--eval=$(shell …)` and `-f`/`--file` of another makefile run code a rule never reads
     # (`make "$t"`: the target may be that option).
     "make", "gmake",
     # round 38: sed's `e` and awk's `system()` run a command; a run-time word before their first static
     # operand may be the script itself (`x=$(printf '1e \\x72m y'); sed "$x" f`: real sed ran it).
     "sed", "gsed", "awk", "gawk", "mawk", "nawk"}
)  # fmt: skip
_GCC_VALUES: Final = frozenset({"-o", "-x", "-I", "-L", "-D", "-U", "-include", "-MF", "-MT", "-MQ", "-isystem"})
_VIM_VALUES: Final = frozenset({"-u", "-U", "-i", "-S", "-T", "-s", "-w", "-W", "-t", "-q"})
#: fd's options whose value is the next word (see `_VALUED`).
_FD_VALUES: Final = frozenset(
    {"-e", "--extension", "-E", "--exclude", "-t", "--type", "-d", "--max-depth", "--min-depth", "--exact-depth",
     "-S", "--size", "-c", "--color", "-j", "--threads", "--changed-within", "--changed-before", "-o", "--owner",
     "--base-directory", "--search-path", "--ignore-file", "--max-results", "--path-separator"}
)  # fmt: skip
#: Options whose value is the next word, whatever it holds (getopt's rule): that word is no option.
#: An option not listed counts as a flag, so the word after it may be an option (fail closed).
_VALUED: Final[dict[str, frozenset[str]]] = {
    "rg": frozenset({"-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type", "-T",
                     "--type-not", "-m", "--max-count", "-A", "-B", "-C", "--after-context", "--before-context",
                     "--context", "-M", "--max-columns", "-j", "--threads", "-r", "--replace", "-E", "--encoding",
                     "-d", "--max-depth", "--ignore-file", "--type-add", "--sort", "--sortr", "--color",
                     "--colors", "--max-filesize", "--path-separator", "--pre-glob"}),
    "fd": _FD_VALUES,
    "fdfind": _FD_VALUES,
    # round 38: values that are no code (a field separator, a variable's value, a line length).
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), frozenset({"-F", "-v", "--field-separator", "--assign"})),
    **dict.fromkeys(("sed", "gsed"), frozenset({"-l", "--line-length"})),
    "find": frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
                       "-lname", "-ilname", "-type", "-xtype", "-maxdepth", "-mindepth", "-newer", "-mtime",
                       "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-perm", "-user", "-group", "-uid",
                       "-gid", "-links", "-inum", "-samefile", "-printf", "-regextype", "-fstype", "-used"}),
    "sort": frozenset({"-k", "--key", "-t", "--field-separator", "-o", "--output", "-S", "--buffer-size", "-T",
                       "--temporary-directory", "--parallel"}),
    "git": frozenset({"-m", "--message", "-C", "-b", "-B", "--author", "--format", "--pretty", "--since",
                      "--until", "--grep", "-n", "--max-count"}),
    "tar": frozenset({"-f", "--file", "-C", "--directory"}),
    "ssh": frozenset({"-p", "-i", "-l", "-F", "-J"}),
    "split": frozenset({"-l", "-b", "-C", "-n", "-a", "-t", "--lines", "--bytes", "--line-bytes", "--number",
                        "--suffix-length", "--additional-suffix", "--separator"}),
    "wget": frozenset({"-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix", "-U",
                       "--user-agent", "--header", "-t", "--tries", "-T", "--timeout"}),
    "pandoc": frozenset({"-o", "--output", "-f", "--from", "-t", "--to", "-r", "-w", "-M", "--metadata", "-V",
                         "--variable", "--template", "--resource-path"}),
    # round 37: their common valued options (psql's `-o` is left out: `-o "|CMD"` pipes to a command)
    "psql": frozenset({"-c", "--command", "-d", "--dbname", "-h", "--host", "-p", "--port", "-U", "--username",
                       "-f", "--file", "-v", "--set", "--variable"}),
    "mysql": frozenset({"-e", "--execute", "-u", "--user", "-h", "--host", "-P", "--port", "-D", "--database"}),
    "java": frozenset({"-cp", "-classpath", "--class-path", "-p", "--module-path", "-jar"}),
    **dict.fromkeys(("gcc", "g++", "cc", "c++", "gfortran", "cpp"), _GCC_VALUES),
    **dict.fromkeys(("vi", "vim", "nvim", "gvim", "view", "rview", "vimdiff", "gvimdiff", "ex", "rvim", "evim",
                     "gview", "vimx", "mvim", "nvi"), _VIM_VALUES),
}  # fmt: skip
#: Programs that read options up to their first operand only (BSD getopt, a ``+`` optstring).
#: Programs whose first operand is code (sed's script, awk's program).
_SCRIPT_FIRST: Final = frozenset({"sed", "gsed", "awk", "gawk", "mawk", "nawk"})
_STOP_AT_OPERAND: Final = frozenset({"ssh", "scp", "sftp", "env", "flock", "sg", "sed", "gsed", "awk", "gawk", "mawk", "nawk"})
#: git's options before the subcommand that take the next word, and the subcommands with an option
#: that runs a program (``--upload-pack``, ``--exec``, ``-x``, ``--extcmd``, ``-O``…): a run-time word
#: elsewhere (``git add "$f"``, ``git log "$r"``) is no such option.
_GIT_GLOBAL_VALUED: Final = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source"}
)
_GIT_RUNNERS: Final = frozenset(
    {"fetch", "pull", "clone", "ls-remote", "push", "archive", "difftool", "mergetool", "rebase", "submodule",
     "bisect", "send-email", "filter-branch", "grep", "request-pull", "remote", "fetch-pack", "send-pack",
     # round 37: `--access-hook`, `--httpd`/`--browser`
     "daemon", "instaweb", "web--browse"}
)  # fmt: skip
#: find's actions whose words up to ``;`` or ``+`` are a command (its own part), no find option.
_FIND_EXEC: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
#: fd's short options that take a value: in a cluster the rest of the word is that value.
_FD_VALUED: Final = "dEtecSjo"
#: A long option's name written out (``--regexp`` of ``--regexp="$p"``): the option is known.
_STATIC_NAME: Final = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*")


def _unknown(word: Word) -> bool:
    return word.value is None or expanded_by_bash(word)


def run_time_program(command: PlanCommand) -> str:
    """The command's text when an option of `RUNNERS` is given a program known only at run time."""
    name = program_name(command.name or "")  # `/usr/bin/rg` is `rg` (round 51)
    options = RUNNERS.get(name)
    if options is None:
        return ""
    words = command.argv[1:]
    fd = name != "rg"
    for i, word in enumerate(words):
        text = word.value if word.value is not None else word.raw
        if text == "--":
            break
        option = text.partition("=")[0]
        if option in options or (fd and _fd_cluster_runs(text)):
            if "=" in text and option.startswith("--"):
                hit = _unknown(word)  # `--pre=$x`: the value is in the word
            elif fd:
                hit = any(_unknown(w) for w in words[i + 1 :])  # fd's command is every word after
            else:
                hit = i + 1 < len(words) and _unknown(words[i + 1])
            if hit:
                return " ".join(w.raw for w in command.argv)
    return ""


def _fd_cluster_runs(text: str) -> bool:
    """``-Hx``, ``-HX``: a cluster of fd's short flags that reaches ``x``/``X`` before a valued one."""
    if text[:1] != "-" or text[1:2] in ("", "-"):
        return False
    for letter in text[1:]:
        if letter in "xX":
            return True
        if letter in _FD_VALUED:
            return False
    return False


def run_time_option(command: PlanCommand) -> str:
    """The command's text when a program of `OPTION_PROGRAMS` is given a word that may be an option
    no rule read: a value known only at run time (``p="--pre=$x"; rg "$p" y .``, a variable an earlier
    call set, ``$p`` split into ``-exec rm {} ;``) or a glob whose first name may begin with ``-`` (a file
    ``--pre=./x``). Known non-options: words after ``--``, an option's value, a word whose first
    character is static and no ``-``/``+`` (``"./$f"``, ``x$p``, ``src/*``)."""
    name = program_name(command.name or "")  # `/usr/bin/rg` is `rg` (round 51)
    if name not in OPTION_PROGRAMS:
        return ""
    valued = _VALUED.get(name, frozenset())
    words = command.argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        text = word.value
        i += 1
        if text is None or expanded_by_bash(word):
            if _may_be_option(word) or (name in _SCRIPT_FIRST and _is_script(words, i - 1)):
                return " ".join(w.raw for w in command.argv)
            continue
        if text == "--" and name != "find":  # find reads its expression after `--` too
            # sed's and awk's first operand is their script: `awk -- "$x"` runs it (round 38).
            script = words[i] if name in _SCRIPT_FIRST and i < len(words) else None
            if script is not None and (script.value is None or expanded_by_bash(script)):
                return " ".join(w.raw for w in command.argv)
            break
        if name == "git" and text[:1] != "-":
            if text not in _GIT_RUNNERS:
                break  # the subcommand, with no option that runs a program
            name = "git " + text  # from here on, the subcommand's options
        elif name == "git" and text in _GIT_GLOBAL_VALUED:
            i += 1
        elif name == "find" and text in _FIND_EXEC:
            while i < len(words) and words[i].value not in (";", "+"):
                i += 1
            i += 1
        elif name in RUNNERS and name != "rg" and (text.partition("=")[0] in RUNNERS[name] or _fd_cluster_runs(text)):
            break  # the rest is fd's command: `run_time_program` reads it
        elif text in valued:
            i += 1
        elif name in _STOP_AT_OPERAND and text[:1] not in ("-", "+"):
            break
    return ""


def _is_script(words: Sequence[Word], at: int) -> bool:
    """Whether ``words[at]`` is sed's or awk's script: given to ``-e``/``--expression``/``--source``, or
    the first operand when no ``-e``/``-f`` came before (a piece known only at run time may add sed's
    ``e`` flag, ``s/a/$b/`` with ``b='/e;#'``, or an awk ``system()``: round 38)."""
    before = [w.value for w in words[:at]]
    if before and before[-1] in ("-e", "--expression", "--source"):
        return True
    if any(b is not None and (b in ("-e", "-f", "--file", "--expression", "--source") or
                              b.startswith(("-e", "-f", "--file=", "--expression=", "--source="))) for b in before):
        return False
    options = True
    for w in before:
        if w == "--":
            options = False
        elif not (options and w is not None and w.startswith("-")):
            return False  # an operand came before: this one is input
    return True


def _may_be_option(word: Word) -> bool:
    """Whether a run-time or globbed word may begin with ``-``/``+``: its first character is not a
    static one (quotes aside), or is ``-``/``+`` without a static long option name (``--regexp=$p``)."""
    raw = word.raw.lstrip("\"'")
    first = raw[:1]
    if first in ("-", "+"):
        head = raw.split("=", 1)[0]
        return not (raw.startswith("--") and "=" in raw and _STATIC_NAME.fullmatch(head) is not None)
    return first == "" or not (first.isalnum() or first in "./_,:@%^")
