"""Places a later program finds code in, written without a name the check reads.

Why: round 37 read a hook the command writes by name before git runs it. Each of these still ran
what the command wrote under a name no rule reads (red team, round 38): a hook named through a
run-time word (``cp q .git/hooks/"$h"``), an archive or a patch unpacked where its own paths decide
(``tar xf t.tar`` holding ``.git/hooks/x``; GNU patch writes ``.git/`` paths, ``git apply`` refuses
them), a program that runs git itself (``make commit``, ``npm run``, ``pre-commit``), a program
copied into a directory of ``PATH`` (``cp q ~/bin/ls; ls``), and glued values naming a program or a
module (``gcc -B./b/``, ``pytest -p x``). All fail closed: a place that may be one counts.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from typing import Final

from .programs import WRAPPERS, program_spec
from .text_words import split_words

__all__ = ["config_write", "dynamic_place", "first_named_write", "found_code_write", "glued_programs", "has_finder", "may_run_git", "on_path_write", "unknown_program_write", "unnamed_write", "unpacks_unknown"]

#: Programs that write or list files and run no other program themselves (so no git): beside a
#: written hook they are not read as running git. Anything else not read-only may (``make``, ``npm``,
#: ``pre-commit``, ``just``, ``tox``, a script).
_RUNS_NO_PROGRAM: Final = frozenset(
    {"cp", "mv", "install", "ln", "mkdir", "chmod", "chown", "chgrp", "touch", "rm", "rmdir", "tee", "dd", "cat",
     "echo", "printf", "tar", "bsdtar", "gtar", "unzip", "zip", "gzip", "gunzip", "xz", "unxz", "bzip2",
     "bunzip2", "zstd", "7z", "7za", "7zr", "cpio", "pax", "ar", "patch", "truncate", "mktemp", "export",
     "cd", "pushd", "popd", "true", "false", ":", "test", "[", "unset", "read", "mapfile", "readarray",
     "local", "declare", "typeset", "readonly", "shift", "set", "wait", "pwd", "exit", "return", "sleep", "type"}
)  # fmt: skip
#: Programs that write files an archive or a diff names (their own paths, not the command's words).
_UNPACKERS: Final = frozenset(
    {"tar", "bsdtar", "gtar", "unzip", "7z", "7za", "7zr", "cpio", "pax", "ar", "patch", "busybox", "rsync",
     "unrar", "lha", "unar", "ditto", "git-lfs"}
)  # fmt: skip
#: Directories a program is found in by its bare name when on ``PATH`` (``~/bin``, ``~/.local/bin``,
#: ``/usr/local/sbin``, ``node_modules/.bin``, ``.venv/bin``).
_PATH_DIRS: Final = frozenset({"bin", "sbin", ".bin"})
_REDIRECT: Final = re.compile(r"^[0-9]*(?:&?>>?|<>?|>\|)")
#: What gcc, clang and their drivers run from a ``-B`` prefix.
_GCC_PROGRAMS: Final = ("as", "ld", "cc1", "cc1plus", "cc1obj", "collect2", "lto-wrapper", "lto1", "cpp", "f951",
                        "ld.bfd", "ld.gold", "ld.lld", "specs", "liblto_plugin.so")
_COMPILERS: Final = re.compile(r"(?:[a-z0-9_]+-)*(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|gfortran|cpp)(?:-[0-9.]+)?")


def may_run_git(name: str) -> bool:
    """Whether a part that is not read-only may run git (and so a hook) itself: any program but the
    file utilities of `_RUNS_NO_PROGRAM`."""
    return os.path.basename(name) not in _RUNS_NO_PROGRAM


def unnamed_write(name: str, unknown: Sequence[str]) -> str:
    """Why git, or a program that may run it, may run a hook another part writes under a name no word
    gives (``d=.git/hooks; cat q > "$d/pre-commit"``, ``cp q "$p"``, ``tee .git/hooks/{pre-commit,x}``,
    ``f() { cp q "$1"; }; f .git/hooks/pre-commit``, ``find .git -exec cp q {}/pre-commit \\;``): ``unknown``
    holds those parts' texts. Round 38 read the static pieces of such a word; a variable set earlier,
    a function's operand or a loop's word hides them all (red team, round 39). A modelled read-only
    program (``ls``, ``cat``: `program_spec`) runs no git; "" when none of this holds."""
    if not unknown or (name != "git" and (not may_run_git(name) or program_spec(os.path.basename(name)) is not None)):
        return ""
    return (
        f"git may run a hook {unknown[0]!r} writes in the same command under a name known only at run time "
        "(write the file by name)"
    )


_PY: Final = ((".py", ".pth"), ("conftest.py", "pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", ".pytest.ini", "tox.ini"))
_JS: Final = ((".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".json"), ("package.json", ".npmrc", "node_modules"))
_SHELL_START: Final = ((), (".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_logout", ".zshrc", ".zprofile"))
#: What a program finds and loads by itself, by name or suffix (a manifest, a config, a module or test
#: beside what it runs): (suffixes, names; a name may be a directory on the way).
_FINDS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    **dict.fromkeys(("pytest", "py.test", "pip", "pip3", "tox", "nox", "uv", "poetry", "hatch"), (_PY[0], (*_PY[1], "noxfile.py"))),
    **dict.fromkeys(("npm", "npx", "pnpm", "pnpx", "yarn", "bun", "bunx", "node", "nodejs", "deno"), _JS),
    "cargo": ((".rs",), ("Cargo.toml", "build.rs", ".cargo")),
    "go": ((".go", ".s"), ("go.mod", "go.work")),
    "cmake": ((".cmake",), ("CMakeLists.txt",)),
    "just": ((), ("justfile", "Justfile", ".justfile")),
    "rake": ((".rb", ".rake"), ("Rakefile",)),
    "bundle": ((".rb",), ("Gemfile", ".bundle")),
    **dict.fromkeys(("gradle", "gradlew"), ((".gradle", ".kts"), ("gradle", "gradle.properties"))),
    "mvn": ((), ("pom.xml", ".mvn")),
    "pre-commit": ((), (".pre-commit-config.yaml", ".pre-commit-hooks.yaml")),
    "direnv": ((), (".envrc", ".env")),
    "composer": ((".php",), ("composer.json",)),
    "terraform": ((".tf", ".tf.json", ".tfvars"), (".terraform", ".terraformrc", "terraform.rc")),
    "emacs": ((".el",), (".emacs", ".emacs.d")),
    **dict.fromkeys(("bash", "sh", "dash", "zsh", "ksh"), _SHELL_START),
    # Round 41: build descriptions named neither as a dot-file nor `*rc`/`*.conf` (analysis3's Left).
    "meson": ((), ("meson.build", "meson_options.txt", "meson.options")),
    **dict.fromkeys(("task", "go-task"), ((), ("Taskfile.yml", "Taskfile.yaml", "Taskfile.dist.yml", "taskfile.yml"))),
    **dict.fromkeys(("bazel", "bazelisk"), ((".bzl", ".bazel"), ("BUILD", "WORKSPACE", "MODULE.bazel", ".bazelrc"))),
    **dict.fromkeys(("nix", "nix-build", "nix-shell", "nix-instantiate", "nixos-rebuild", "home-manager"), ((".nix",), ())),
    # Round 42: R is a modelled code reader (not `unknown_program_write`'s), yet ``R CMD check .`` loads the package.
    **dict.fromkeys(("R", "Rscript"), ((".R", ".r", ".Rmd"), ("DESCRIPTION", "NAMESPACE", ".Rprofile"))),
}
#: Round 45: what the code readers `unread_code` models (so outside `unknown_program_write`) find by
#: themselves beside the script they run: a module ``require``/``use``/``import``/``source`` looks up (``ruby
#: t.rb`` loading a written ``helper.rb``, ``perl t.pl`` a ``Helper.pm``, ``java Main`` a ``Helper.class``,
#: ``make`` an ``include``d ``x.mk``, ``sqlite3 db '.read x.sql'``, ``vim -c 'so x.vim'``). Keys are folded
#: names (`_reader_key`: ``ruby3.2`` -> ``ruby``, ``sqlite3`` -> ``sqlite``); a reader with no entry here
#: counts any file written by name (`reader_write`).
_READER_FINDS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    **dict.fromkeys(("ruby", "irb", "jruby", "truffleruby"), ((".rb", ".so", ".bundle"), ("Gemfile", ".rspec"))),
    "perl": ((".pm", ".pl", ".pmc", ".ph", ".so"), ("Makefile.PL", "Build.PL")),
    **dict.fromkeys(("lua", "luajit"), ((".lua", ".so"), ())),
    "php": ((".php", ".inc", ".phtml", ".phar", ".ini"), ("vendor", "composer.json")),
    "julia": ((".jl",), ("Project.toml", "Manifest.toml", "JuliaProject.toml")),
    "groovy": ((".groovy", ".gvy", ".jar", ".class"), ()),
    **dict.fromkeys(("java", "jshell"), ((".class", ".jar", ".java", ".jsh"), ("META-INF",))),
    **dict.fromkeys(("tclsh", "wish", "expect"), ((".tcl", ".tm", ".exp", ".so"), ("pkgIndex.tcl",))),
    "osascript": ((".scpt", ".scptd", ".applescript"), ()),
    "xonsh": ((".xsh", ".py", ".pth"), ()),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), ((".awk", ".gawk", ".so"), ())),
    **dict.fromkeys(("vim", "vi", "nvim", "view"), ((".vim", ".lua"), ())),
    "gdb": ((".gdb", ".py"), ()),
    "sqlite": ((".sql", ".so"), ()),
    "pwsh": ((".ps1", ".psm1", ".psd1", ".ps1xml", ".dll"), ("Modules",)),
    **dict.fromkeys(("make", "gmake"), ((".mk", ".mak", ".make"), ("Makefile", "makefile", "GNUmakefile"))),
    **dict.fromkeys(("r", "rscript"), ((".R", ".r", ".Rmd"), ("DESCRIPTION", "NAMESPACE", ".Rprofile"))),
}


def _reader_key(base: str) -> str:
    """A code reader's folded name: ``ruby3.2`` -> ``ruby``, ``tclsh8.6`` -> ``tclsh``, ``sqlite3`` -> ``sqlite``."""
    folded = re.sub(r"[.-]static$", "", base.lower())
    return folded if folded in _READER_FINDS else re.sub(r"(?<=[a-z])[0-9.]+$", "", folded)


def has_finder(name: str) -> bool:
    """Whether this module says what ``name`` finds by itself (`_FINDS`, python, `_READER_FINDS`)."""
    base = os.path.basename(name)
    return base in _FINDS or bool(_PYTHON.fullmatch(base)) or _reader_key(base) in _READER_FINDS
_PYTHON: Final = re.compile(r"(?:python|pypy)[0-9.]*")
#: Programs that run a project's own commands (a recipe, a script, a test runner run under them): they may
#: run any program of `_FINDS`, so what any of them finds counts (round 39, review13: ``make test``,
#: ``./run_tests.sh``, ``coverage run -m pytest`` ran a written ``conftest.py``).
_RUNS_PROJECT: Final = frozenset({"make", "gmake", "coverage", "task", "invoke", "scons", "ninja", "meson", "bazel"})
_ANY_FOUND: Final = (
    tuple(sorted({s for found in (*_FINDS.values(), *_READER_FINDS.values()) for s in found[0]})),
    tuple(sorted({n for found in (*_FINDS.values(), *_READER_FINDS.values()) for n in found[1]} - set(_SHELL_START[1]))),
)


def found_code_write(name: str, others: Sequence[tuple[str, Sequence[str]]], argv: Sequence[str] = ()) -> str:
    """Why a program may load a file another part writes by name, though no word of it names the file:
    what it finds by itself (`_FINDS`: ``conftest.py`` of pytest, ``package.json``/``.npmrc`` of npm,
    ``build.rs`` of cargo, ``setup.py`` of pip, ``os.py`` imported by ``python3 t.py``, ``~/.profile`` of
    ``sh -l``) (red team, round 39). "" when none."""
    base = os.path.basename(name)
    suffixes, names = _FINDS.get(base) or (_PY if _PYTHON.fullmatch(base) else _READER_FINDS.get(_reader_key(base), ((), ())))
    if base in _RUNS_PROJECT or "/" in name or (base in _SHELLS and _runs_script(argv)):
        suffixes, names = _ANY_FOUND  # a project's script or recipe may run any of them
    if not suffixes and not names:
        return ""
    for text, writes in others:
        for path in writes:
            pieces = path.split("/")
            if path and (path.endswith(suffixes) or any(p in names for p in pieces)):
                return f"it may load {path} (a file {base} finds by itself), which {text!r} writes in the same command"
        if writes and suffixes and _words(text)[:1] == ["mv"]:
            # `mv evil tests/evil; pytest`: a word cannot say the source is a directory, nor what it holds.
            return f"it may load what {text!r} moves in the same command (a directory's files are not named)"
    return ""


#: Builtins, pagers and fuzzy finders that find no file of the project by themselves (their start-up
#: files are dot-files: `config_write`; a command a finder's option runs is read as one).
_FINDS_NOTHING: Final = frozenset(
    {"kill", "more", "less", "most", "pg", "fzf", "sk", "peco", "ulimit", "umask", "shopt", "let", "getopts", "fg", "bg", "disown", "times",
     "caller", "compgen", "complete", "compopt", "bind", "logout", "suspend", "alias", "unalias"}
)  # fmt: skip


def unknown_program_write(name: str, others: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Why a program no table here describes may load a file another part writes by name: what a
    build, task or container tool finds by itself (``Dockerfile`` of ``docker build``, ``build.sbt``,
    ``mix.exs``, ``fabfile.py``, ``Snakefile``, ``build.zig``, ``pyproject.toml`` of ``pdm``) is its
    own, and a table of names always misses one (red team, round 42: 40 of 80 such tools). Programs
    with a table (`_FINDS`, python), git, file utilities and modelled readers are judged by theirs; ""
    when none applies or nothing is written by name."""
    base = os.path.basename(name)
    if base in _FINDS or base in _FINDS_NOTHING or base in WRAPPERS or _PYTHON.fullmatch(base) or base == "git":
        return ""  # a wrapper's program is a part of its own (`timeout 60 sbt test`)
    if not may_run_git(base) or program_spec(base) is not None:
        return ""
    found = first_named_write(others)
    if found is None:
        return ""
    text, path = found
    return f"{base} has no model of the files it loads by itself, and {text!r} writes {path} in the same command"


def first_named_write(others: Sequence[tuple[str, Sequence[str]]]) -> tuple[str, str] | None:
    """(the part's text, the path) of the first file another part writes by name, not a device
    (`/dev/null`, `/dev/stderr`): what a program that loads files by itself may load."""
    for text, writes in others:
        for path in writes:
            if path and not path.startswith("/dev/"):
                return text, path
    return None


def config_write(name: str, others: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Why a program that is not git, a file utility or a modelled reader may load a configuration or
    start-up file another part writes by name: a dot-file or anything under a dot-directory
    (``~/.config/pip/pip.conf`` of pip, ``.pdbrc`` of pdb, ``~/.gdbinit``, ``~/.psqlrc``, ``.irbrc``,
    ``~/.m2/settings.xml``, ``.eslintrc.js``), or a ``*rc``/``*.conf``/``*.ini`` file. Programs load these
    by themselves, outside any table of `_FINDS` (red team, round 40). "" when none."""
    base = os.path.basename(name)
    if base == "git":
        return _git_helper_config(others)
    if not may_run_git(base) or program_spec(base) is not None:
        return ""
    for text, writes in others:
        for path in writes:
            pieces = [p for p in path.split("/") if p]
            if pieces and (any(p[:1] == "." and p not in (".", "..") for p in pieces) or _CONFIG_NAME(pieces[-1])):
                return f"it may load {path} (a configuration or start-up file), which {text!r} writes in the same command"
    return ""


#: Dot-directories of the programs git runs by itself (gpg to verify or sign, ssh to fetch): their
#: configuration runs programs (gpg's `agent-program`, ssh's `ProxyCommand`), beside any git command.
_GIT_HELPER_DIRS: Final = frozenset({".gnupg", ".ssh"})


def _git_helper_config(others: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Why git may load a helper's configuration another part writes (``~/.gnupg/gpg.conf`` before
    ``git log --show-signature``: round 40 analysis3's Left), "" when none."""
    for text, writes in others:
        for path in writes:
            if _GIT_HELPER_DIRS.intersection(path.split("/")):
                return f"a program git runs may load {path}, which {text!r} writes in the same command"
    return ""


_CONFIG_NAME: Final = re.compile(r".*(?:rc|\.conf|\.ini|\.cfg|\.toml|\.config\.[cm]?[jt]s)", re.IGNORECASE).fullmatch


_SHELLS: Final = frozenset({"bash", "sh", "dash", "zsh", "ksh"})


def _runs_script(argv: Sequence[str]) -> bool:
    """Whether a shell's words run a script file (``bash run_tests.sh``), not ``-c`` text alone."""
    for word in argv[1:]:
        if word == "--" or not word.startswith(("-", "+")):
            return word != "--" or len(argv) > 2
        if word.startswith("-") and not word.startswith("--") and "c" in word:
            return False
    return False


def _words(text: str) -> list[str]:
    """A part's words, a substitution nesting quotes kept whole (`split_words`: round 41's Left)."""
    return [_REDIRECT.sub("", w) for w in split_words(text)]


def dynamic_place(text: str, is_place: object) -> str:
    """A word of ``text`` (a part that writes) holding a run-time expansion whose static pieces
    ``is_place`` accepts (``.git/hooks/$h``, ``$g/hooks/pre-commit``), "" for none."""
    check = is_place if callable(is_place) else None
    for word in _words(text)[1:]:
        if check is not None and any(c in word for c in "$`{*?[") and any(check(w) for w in _braced(word)):
            return word
    return ""


def _braced(word: str, limit: int = 32) -> list[str]:
    """``word`` with its first few brace expansions done (``~/bin/{ls,x}`` -> ``~/bin/ls``, ``~/bin/x``):
    the static pieces a write may name (round 39); the word itself first."""
    out, todo = [word], [word]
    while todo and len(out) < limit:
        match = re.search(r"\{([^{}]*,[^{}]*)\}", todo.pop())
        if match is None:
            continue
        for alternative in match.group(1).split(","):
            expanded = match.string[: match.start()] + alternative + match.string[match.end() :]
            out.append(expanded)
            todo.append(expanded)
    return out


def unpacks_unknown(text: str) -> bool:
    """Whether ``text`` runs an unpacker (`_UNPACKERS`) in a mode that writes: what it writes, and where
    below the place it runs, its archive or diff decides (``tar xf t.tar`` may hold ``.git/hooks/x``).
    Listing and creating (``tar tf``, ``tar cf out.tar``, ``unzip -l``, ``7z l``) do not count."""
    words = _words(text)
    if not words:
        return False
    program, args = os.path.basename(words[0]), words[1:]
    if program == "busybox" and args:
        program, args = args[0], args[1:]
    if program not in _UNPACKERS:
        return False
    if program in ("tar", "bsdtar", "gtar"):
        first = args[0] if args else ""
        bundle = first if first and not first.startswith("--") else ""
        return "x" in bundle or any(
            a in ("--extract", "--get") or (a.startswith("-") and not a.startswith("--") and "x" in a) for a in args
        )
    if program == "unzip":
        return not any(a in ("-l", "-t", "-v", "-z", "-Z") or a.startswith(("-l", "-Z")) for a in args)
    if program in ("7z", "7za", "7zr"):
        return bool(args) and args[0] in ("x", "e")
    if program == "cpio":
        return any(a in ("-i", "--extract") or (a.startswith("-") and not a.startswith("--") and "i" in a) for a in args)
    if program == "pax":
        return any(a.startswith("-") and "r" in a for a in args)
    if program == "ar":
        return bool(args) and "x" in args[0]
    return "--dry-run" not in args


def on_path_write(
    name: str, argv: Sequence[str], others: Sequence[tuple[str, Sequence[str]]], read_only: bool = False
) -> str:
    """Why a part run by its bare name (``ls``) may run a file another part writes into a directory
    that may be on ``PATH`` (``~/bin/ls``, ``~/.local/bin/$n``, a whole ``bin`` directory), "" if not.
    A program that runs others (`may_run_git`, not read-only: ``npm test`` puts ``node_modules/.bin``
    on its ``PATH``) may find any program written there."""
    program = argv[0] if argv else name
    if not program or "/" in program:
        return ""
    runs_any = not read_only and may_run_git(name)
    located = any(_locates(text, program) for text, _writes in others)
    for text, writes in others:
        for path in writes:
            parent, base = os.path.split(os.path.normpath(path)) if path else ("", "")
            in_path_dir = os.path.basename(parent) in _PATH_DIRS
            whole = base in _PATH_DIRS and _words(text)[:1] != ["mkdir"]
            # Any directory may be on PATH (`~/scripts`, `/usr/games`, conda's `condabin`): a file named
            # as the program is counted wherever it is written (red team, round 41).
            if (in_path_dir and (base == program or runs_any)) or whole or (path and base == program):
                return f"it may run {path} (a directory that may be on PATH), which {text!r} writes in the same command"
        if writes:
            # `d=~/bin; cp q "$d/ls"`, `~/.local/b*/ls`: a run-time directory, the program's name.
            word = dynamic_place(
                text, lambda w: os.path.basename(os.path.dirname(w)) in _PATH_DIRS or _names(w, program)
            )
            if word:
                return f"it may run {word} (a directory that may be on PATH), which {text!r} writes in the same command"
            if located and "" in writes:  # `cp q "$(command -v ls)"; ls`: where PATH finds it
                return f"it may run what {text!r} writes in the same command where a lookup found {program}"
    return ""


#: Builtins and programs that print where ``PATH`` finds a name (``command -v ls``, ``which ls``).
_LOCATORS: Final = frozenset({"which", "whereis", "type", "command", "hash", "whence", "where"})


def _locates(text: str, program: str) -> bool:
    """Whether ``text`` (a part) looks up where ``program`` is found."""
    words = _words(text)
    return bool(words) and os.path.basename(words[0]) in _LOCATORS and program in words[1:]


def _names(word: str, program: str) -> bool:
    """Whether a written word's last piece, static or a glob, names ``program`` (``$d/ls``, ``b*/l?``);
    a piece of wildcards alone (``cp * out/``) names any file, and is read as naming none."""
    base = os.path.basename(word)
    return bool(base.strip("*?")) and "$" not in base and "`" not in base and fnmatch.fnmatchcase(program, base)


def glued_programs(name: str, argv: Sequence[str]) -> list[str]:
    """The files a static option value glued or given names as a program or a module: gcc's ``-B``
    prefix (``-B./b/`` runs ``./b/as``), ``-wrapper ./w,…``, pytest's ``-p x`` and ``--pdbcls=x:Y``
    (``x.py`` or ``x/__init__.py`` is imported)."""
    base = os.path.basename(name)
    words = [w.strip("'\"") for w in argv[1:]]
    if _COMPILERS.fullmatch(base):
        return _gcc_programs(words)
    if base in ("pytest", "py.test") or (base.startswith("python") and "pytest" in words[:3]):
        return _pytest_modules(words)
    return []


def _gcc_programs(words: list[str]) -> list[str]:
    found: list[str] = []
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word.startswith("-B"):
            prefix = word[2:] or following
            found += [prefix + program for program in _GCC_PROGRAMS] if prefix else []
        elif word == "-wrapper" and following:
            found.append(following.split(",")[0])
        elif word.startswith(("-fuse-ld=", "--ld-path=", "-specs=", "--specs=")) and "/" in word:
            found.append(word.partition("=")[2])
    return found


def _pytest_modules(words: list[str]) -> list[str]:
    modules: list[str] = []
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "-p":
            modules.append(following)
        elif word.startswith("-p") and not word.startswith("--"):
            modules.append(word[2:])
        elif word.startswith("--pdbcls="):
            modules.append(word.partition("=")[2].partition(":")[0])
        elif word == "--pdbcls":
            modules.append(following.partition(":")[0])
    found: list[str] = []
    for module in modules:
        if not module or module.startswith("no:"):
            continue
        path = module.replace(".", "/")
        found += [f"{path}.py", f"{path}/__init__.py"]
        found += [f"{'/'.join(path.split('/')[:k])}/__init__.py" for k in range(1, path.count("/") + 1)]
    return found
