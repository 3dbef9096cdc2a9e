"""Options that make a reader load code, or a configuration that names programs, from a file (red team, round 47).

A prefix allow rule covers the words after it by design (``Bash(less:*)`` allows ``less -N f``), and the
engine keeps such rules off an option whose value is a command (``man -P``, ``sort --compress-program``,
``rg --pre``: ``permissions/embedded.command_options``). These options name no command, yet the program
runs one: less's lesskey file (``--lesskey-src=k``: its ``#env`` section sets ``LESSOPEN=|cmd``), vim's
``-c CMD`` (an Ex command, as ``+CMD`` is), ``-S``/``-s``/``-u``/``-U`` (a script, typed keys, a vimrc),
binutils' ``--plugin`` (a shared object loaded into ``nm``), man-db's ``-C`` (``DEFINE pager cmd``), ssh's
``-F`` (``ProxyCommand``, ``Match exec``), gpg's ``--options`` (``photo-viewer``), awk's program files
(``-f``, ``-i``: its inline program is read, a file is not), openssl's ``-engine``, ``-config`` and
``-provider-path`` (a shared object it loads), kubectl's, oc's and helm's ``--kubeconfig`` (an ``exec``
credential plugin), and bat's and delta's ``--pager``. What runs is in a file (or an Ex command) no rule
reads: an allow rule for the reader does not cover it, and a file the same command wrote is counted beside
a deny or ask command rule (`script_files`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["loaded_code", "loaded_files", "piped_commands"]

_VIM: Final = frozenset(
    {"vi", "vim", "nvim", "gvim", "view", "rview", "vimdiff", "gvimdiff", "ex", "rvim", "evim", "gview", "vimx",
     "mvim", "nvi"}
)  # fmt: skip
#: Compiler drivers (round 49): gcc 12 ran ``./bdir/as`` for ``-B ./bdir/`` and loaded ``-fplugin=./p.so``;
#: a spec file names the programs the driver runs.
_CCS: Final = frozenset({"gcc", "g++", "cc", "c++", "gfortran", "cpp", "clang", "clang++"})
_LDS: Final = frozenset({"ld", "ld.bfd", "ld.gold", "gold"})
#: Programs that read ``@file`` as more options (GCC's and binutils' ``expandargv``; clang's): gcc 12 ran the
#: ``-wrapper ./q`` a response file named, and a ``--plugin`` hides in one for nm (round 49).
_RESPONSE_FILES: Final = _CCS | _LDS | {"nm", "ar", "ranlib", "gcc-nm", "gcc-ar", "gcc-ranlib"}
#: (program names, options whose value is a file the program loads code or program names from).
_FILE_OPTIONS: Final[tuple[tuple[frozenset[str], frozenset[str]], ...]] = (
    (frozenset({"less"}), frozenset({"-k", "--lesskey-file", "--lesskey-src"})),
    (_VIM, frozenset({"-S", "-s", "-u", "-U"})),
    (frozenset({"nm", "ar", "ranlib", "gcc-nm", "gcc-ar", "gcc-ranlib"}), frozenset({"--plugin"})),
    (frozenset({"man"}), frozenset({"-C", "--config-file"})),
    # ssh's `-I` is a PKCS#11 shared object (real ssh 9.2 loaded one; round 48).
    (frozenset({"ssh"}), frozenset({"-F", "-I"})),
    (frozenset({"scp", "sftp"}), frozenset({"-F"})),
    # A home directory's `gpg.conf` names `agent-program` (real gpg 2.2 ran it for `--card-status`, `-c`).
    (frozenset({"gpg", "gpg2"}), frozenset({"--options", "--homedir"})),
    # A kubeconfig's `users[].user.exec.command` is a credential plugin the client runs on every request.
    (frozenset({"kubectl", "oc", "helm"}), frozenset({"--kubeconfig"})),
    # awk's inline program is read (``system()`` asks under ``Bash(awk:*)``); a program file is not.
    (
        frozenset({"awk", "gawk", "mawk", "nawk"}),
        frozenset({"-f", "--file", "-i", "--include", "-E", "--exec"}),
    ),
    # curl 7.88 loaded the shared object a `-K` file's `engine = /abs/e.so` named, and `--engine` itself (a
    # value holding `/` is a path, even relative: OpenSSL joins it to its engine directory, `../` climbs out).
    (frozenset({"curl"}), frozenset({"-K", "--config", "--engine"})),
    # psql 15 ran `\\! cmd` from the file (round 48's Left).
    (frozenset({"psql"}), frozenset({"-f", "--file"})),
    (_CCS, frozenset({"-B", "-fplugin", "-specs", "--specs", "--config", "-fpass-plugin", "-load"})),
    # ld.bfd 2.40 loaded `-plugin ./p.so` (its constructor ran before the missing `onload`).
    (_LDS, frozenset({"-plugin", "--plugin"})),
    # A PKCS#11 library (`-D`: OpenSSH 9.2 loaded it) or a FIDO security-key middleware (`-w`).
    (frozenset({"ssh-keygen"}), frozenset({"-D", "-w"})),
    # A shared object: an engine (a path or an id), a configuration's `providers` module, a provider directory.
    (
        frozenset({"openssl"}),
        frozenset(
            {
                "-engine",
                "--engine",
                "-config",
                "--config",
                "-provider-path",
                "--provider-path",
                "-provider",
                "--provider",
            }
        ),
    ),
)
_AWKS: Final = frozenset({"awk", "gawk", "mawk", "nawk"})
#: Programs whose options are whole words (openssl's ``-config``, gcc's ``-fplugin=``; vim's, whose values
#: may be glued).
_WHOLE_WORDS: Final = _VIM | _CCS | _LDS | {"openssl"}
#: Whole-word programs whose option may have its value glued on (``vim -uvimrc``, ``gcc -Bbdir``).
_GLUED: Final = _VIM | _CCS

#: Options whose value is code or a command the program runs (not a file).
_CODE_OPTIONS: Final[tuple[tuple[frozenset[str], frozenset[str]], ...]] = (
    (frozenset({"less"}), frozenset({"--lesskey-content"})),
    (_VIM, frozenset({"-c"})),
    (frozenset({"bat", "batcat", "delta"}), frozenset({"--pager"})),
    # Programs gpg starts (round 48); `openssl engine -pre SO_PATH:./e.so -pre LOAD` loads a shared object.
    (
        frozenset({"gpg", "gpg2"}),
        frozenset(
            {"--agent-program", "--dirmngr-program", "--keyboxd-program", "--photo-viewer", "--exec-path"}
        ),
    ),
    (frozenset({"openssl"}), frozenset({"-pre", "-post", "--pre", "--post"})),
)
#: Options whose value, when it starts with ``|`` (strace: or ``!``), is a command the output is piped to
#: (psql 15 and strace 6.1 ran `-o '|touch ran'`; round 49). Any other value is a file written.
_PIPE_OPTIONS: Final[tuple[tuple[frozenset[str], frozenset[str]], ...]] = (
    (frozenset({"psql", "strace"}), frozenset({"-o", "--output"})),
)
#: Short options that take a value, per program: a cluster's letters after one are that value
#: (``ssh -oForwardAgent=yes`` names no ``-F``). A program not listed: every letter counts (fail closed).
_VALUED_LETTERS: Final[dict[str, str]] = {
    "less": "bhjkoOpPtTxyz#D",
    **dict.fromkeys(("ssh", "scp", "sftp"), "bBcDEeFIiJLlmOoPpQRSsWw"),
    "man": "CeELmMpPrRSs",
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), "fFvilEW"),
    "curl": "AbcCdDeEFHKmoPQrtTuUwxXyYz",
    "psql": "cdfFhLopPRTUv",
    "ssh-keygen": "CDEFIMNOPRVYZabfgjmnrstwz",
    "strace": "abeEIoOpPsSuUX",
}
#: Short options whose value is a number (``less -#5k kb``: ``k`` is an option of its own, round 48).
_NUMERIC_LETTERS: Final[dict[str, str]] = {"less": "bhjxyz#"}
_NUMBER_CHARS: Final = frozenset("0123456789.,-+")
#: Programs whose long option names match in any case (less: ``--LESSKEY-SRC=k``, round 48).
_ANY_CASE: Final = frozenset({"less"})
#: awk ``-W`` settings (``mawk -W exec p.awk``, ``-We``, ``-W e,x``): a prefix of one of these names a
#: program file (gawk reads ``-W`` as its long options).
_W_FILES: Final = ("exec", "file", "include", "load")
#: Values that load nothing: vim's ``-u NONE``, ssh's ``-F none``, an empty file.
_NOTHING: Final = frozenset({"NONE", "NORC", "DEFAULTS", "none", "/dev/null"})


def _options(name: str, table: tuple[tuple[frozenset[str], frozenset[str]], ...]) -> frozenset[str]:
    return next((options for names, options in table if name in names), frozenset())


def _values(name: str, words: Sequence[str], options: frozenset[str]) -> list[tuple[str, str]]:
    """(option, value) for each of ``options`` in ``words``: ``-k f``, ``-kf``, ``--opt=f``, ``--opt f``, an
    abbreviated long option (``--lesskey-s=f``: less, argp and getopt_long take one; less in any case),
    ``-opt=f`` (openssl), and a short option in a cluster (``-Nk f``, ``-#5k f``). A ``--`` ends the
    options only where no option before it waits for its value (``mawk -F -- -f p.awk``: ``--`` is the
    separator). Over-inclusive on purpose: it only keeps allow rules off."""
    found: list[tuple[str, str]] = []
    pending = False
    for i, word in enumerate(words):
        if word == "--" and not pending:
            break
        pending = False if word == "--" else _waits(name, word)
        following = words[i + 1] if i + 1 < len(words) else ""
        given, eq, attached = word.partition("=")
        if name in _ANY_CASE and given.startswith("--"):
            given = given.lower()
        for option in options:
            if option.startswith("--"):
                if given == option or (len(given) > 4 and option.startswith(given)):
                    found.append((option, attached if eq else following))
            elif word == option or (eq and name in _WHOLE_WORDS and given == option):
                found.append((option, attached if eq and word != option else following))
            elif word[:1] == "-" and word[1:2] not in ("-", "") and name not in _WHOLE_WORDS:
                at = _cluster_at(name, word, option[1])
                if at:
                    found.append((option, word[at + 1 :] or following))  # `-kfile`, `-Nk f`
            elif word.startswith(option) and len(word) > len(option) and name in _GLUED:
                found.append((option, word[len(option) :]))  # glued on: `vim -uvimrc`, `gcc -Bbdir`
    return found


def _waits(name: str, word: str) -> bool:
    """Whether option ``word`` takes the next word as its value (then a ``--`` there is that value):
    known value letters for the programs in ``_VALUED_LETTERS``; any other option may (fail closed)."""
    if word[:1] != "-" or word == "-" or "=" in word:
        return False
    valued = _VALUED_LETTERS.get(name)
    if valued is None or word.startswith("--") or name in _WHOLE_WORDS:
        return True
    numeric = _NUMERIC_LETTERS.get(name, "")
    at = 1
    while at < len(word):
        letter = word[at]
        if letter in numeric:
            at += 1
            while at < len(word) and word[at] in _NUMBER_CHARS:
                at += 1
            if at == len(word):
                return True
            continue
        if letter in valued:
            return at == len(word) - 1
        at += 1
    return False


def _cluster_at(name: str, word: str, letter: str) -> int:
    """Where ``letter`` stands as an option in the cluster ``word`` (0 when it does not): the letters
    after one that takes a value are that value, except after a numeric one, which takes a number."""
    valued = _VALUED_LETTERS.get(name, "")
    numeric = _NUMERIC_LETTERS.get(name, "")
    at = 1
    while at < len(word):
        if word[at] == letter:
            return at
        if word[at] in numeric:
            at += 1
            while at < len(word) and word[at] in _NUMBER_CHARS:
                at += 1
            continue
        if word[at] in valued:
            return 0
        at += 1
    return 0


def _w_files(words: Sequence[str]) -> list[str]:
    """Program files awk's ``-W`` settings name (``-W exec p.awk``, ``-Wexec=p.awk``, ``-W e,x p.awk``)."""
    found: list[str] = []
    for i, word in enumerate(words):
        if word == "--":
            break
        if not word.startswith("-W"):
            continue
        setting, after = (
            (word[2:], i + 1) if word != "-W" else ((words[i + 1] if i + 1 < len(words) else ""), i + 2)
        )
        for item in setting.split(","):
            key, eq, value = item.partition("=")
            if key and any(full.startswith(key) for full in _W_FILES):
                found.append(value if eq else (words[after] if after < len(words) else ""))
    return found


def _ex_mode(name: str, words: Sequence[str]) -> bool:
    """Whether vim runs in Ex mode, where ``-s`` is silent and takes no file."""
    return name == "ex" or any(w in ("-e", "-E", "-es", "-Es") for w in words)


#: The toolchain programs a target triplet or a version names too (``x86_64-linux-gnu-gcc-12``, ``gcc-nm-12``).
_TOOLCHAIN: Final = _RESPONSE_FILES | {"gfortran", "objdump"}
_VERSION: Final = re.compile(r"-[0-9]+(?:\.[0-9]+)*$")


def toolchain_name(name: str) -> str:
    """``name`` without a target triplet or a version when it is then a toolchain program (``g++-12``,
    ``x86_64-linux-gnu-nm``, ``x86_64-linux-gnu-cpp-12`` are ``g++``, ``nm``, ``cpp``: Debian installs
    each; round 49's rows named only the bare names, red team round 50); else ``name`` itself."""
    if name in _TOOLCHAIN:
        return name
    bare = _VERSION.sub("", name)
    if bare in _TOOLCHAIN:
        return bare
    parts = bare.split("-")
    for start in range(1, len(parts)):  # the longest known tail after a triplet: `…-gcc-nm` is gcc-nm
        tail = "-".join(parts[start:])
        if tail in _TOOLCHAIN and start >= 2:
            return tail
    return name


def loaded_files(name: str, argv: Sequence[str]) -> list[str]:
    """The files ``argv``'s options make ``name`` load code or program names from, as written."""
    name = toolchain_name(name)
    options = _options(name, _FILE_OPTIONS)
    if not options and name not in _RESPONSE_FILES:
        return []
    words = list(argv[1:])
    found: list[str] = _w_files(words) if name in _AWKS else []
    if name in _RESPONSE_FILES:
        found += [w[1:] for w in words if w[:1] == "@" and len(w) > 1]
    if name in _CCS:
        linker = _linker_words(words)
        if linker:  # `gcc -Wl,-plugin,./p.so`: the linker's own loaders (round 50)
            found += loaded_files("ld", ["ld", *linker])
    for option, value in _values(name, words, options):
        if name == "curl" and option == "--engine" and value == "list":
            continue  # lists the engines, loads none
        if name in _VIM and option == "-s" and _ex_mode(name, words):
            continue
        if name in _VIM and option == "-S" and (not value or value.startswith("-")):
            value = "Session.vim"  # vim's default session file
        if (
            name == "openssl"
            and option.endswith("-provider")
            and "/" not in value
            and not {"-provider-path", "--provider-path"} & set(words)
        ):
            continue  # a provider by name (``-provider legacy``), from the system's module directory
        if value.strip("'\"") not in _NOTHING:
            found.append(value)
    return found


def _linker_words(words: Sequence[str]) -> list[str]:
    """The words a compiler driver hands its linker (``-Wl,a,b``: ``a``, ``b``; ``-Xlinker a``: ``a``):
    gcc 12 ran ld with ``-Wl,-plugin,./p.so``, ``-Xlinker -plugin -Xlinker ./p.so`` and ``-Wl,@rsp``, and
    ld loaded ``./p.so`` (red team, round 50)."""
    out: list[str] = []
    for index, word in enumerate(words):
        if word.startswith("-Wl,"):
            out.extend(word[len("-Wl,") :].split(","))
        elif word == "-Xlinker":
            out.append(words[index + 1] if index + 1 < len(words) else "")
    return out


def loaded_code(name: str, argv: Sequence[str]) -> str:
    """Why an allow rule for ``name`` does not cover ``argv`` ("" when it may): an option makes the program
    run code from a file or a value no rule reads."""
    name = toolchain_name(name)
    files = loaded_files(name, argv)
    if files:
        return (
            f"{name} loads code or the programs it runs from {files[0] or 'a file not named'}, which no rule "
            "reads"
        )
    options = _options(name, _CODE_OPTIONS)
    for option, value in _values(name, list(argv[1:]), options) if options else ():
        if not (name in _VIM and value.isdigit()):  # `vim -c 5` only moves to a line
            return f"{name} runs the code or command given to {option} ({value or 'not known'}), which no rule reads"
    for option, command in piped_commands(name, argv)[:1]:
        return f"{name} pipes its output to the command given to {option} ({command}), which no rule reads"
    return ""


def piped_commands(name: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    """(option, command) for each output option of ``argv`` given ``|cmd`` (``psql -o '|cmd'``): the
    command line the program hands to ``sh -c``, for deny rules as an option's command value is."""
    options = _options(name, _PIPE_OPTIONS)
    found: list[tuple[str, str]] = []
    for option, value in _values(name, list(argv[1:]), options) if options else ():
        if value.lstrip("'\"")[:1] in ("|", "!"):
            found.append((option, value.lstrip("'\"")[1:]))
    return found
