"""What an approved command ran, by content: the files its words name and the manifests its
program reads by itself, fingerprinted when the person said "allow always".

A remembered rule names words (``Bash(./run.sh)``, ``Bash(npm test)``), not what those words run.
Under ``acceptEdits`` the model writes workspace files unasked, so it could approve-then-rewrite:
the person allowed ``./run.sh`` (benign) always, the model rewrote ``run.sh`` and ran it under the
rule (red team round 18). A remembered rule now carries `files` of the approved call, and covers
a later part only when every file that part names (by the same looking) is one of them, unchanged.

What is looked at, in each directory the part runs in: the program when named by a path
(``./run.sh``), the script an interpreter runs (`script`: ``t.py`` of ``python3 t.py``, ``x.sh``
of ``bash x.sh`` or ``. x.sh``; ``tool.py`` of ``python3 -m tool``), and the manifests its program reads by itself (`MANIFESTS`:
``package.json`` for ``npm``, ``Makefile`` for ``make``…). A regular file is hashed, anything
else recorded by kind, and nothing there recorded as absent (a file made there later is new code).
Other words are not: files a command writes (``touch made``, ``cp a b``) change by design.
Not looked at (documented in ``docs/security.md``): what those files load in turn (``t.py``'s
imports, the scripts ``package.json`` names), programs not listed here, and on docker the files
inside the container (the words are looked up on the host side, as the round-17 anchor does).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from shellrt.permissions.interfaces import CommandPart

__all__ = [
    "INTERPRETERS",
    "MANIFESTS",
    "Fingerprint",
    "named_files",
    "program",
    "python_module",
    "script",
    "unchanged",
]

#: One named file: its path as named (joined to the part's directory) and what it was.
Fingerprint = tuple[str, str]

#: Files a program reads from its directory by itself, whose content decides what it runs.
MANIFESTS: dict[str, tuple[str, ...]] = {
    **{p: ("package.json",) for p in ("npm", "npx", "pnpm", "yarn", "bun")},
    **{p: ("GNUmakefile", "makefile", "Makefile") for p in ("make", "gmake")},
    "just": ("justfile", "Justfile", ".justfile"),
    "cargo": ("Cargo.toml", "build.rs"),
    "pytest": ("conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"),
    "tox": ("tox.ini", "pyproject.toml"),
    "rake": ("Rakefile",),
    "mvn": ("pom.xml",),
    "gradle": ("build.gradle", "build.gradle.kts"),
    "composer": ("composer.json",),
}

#: Programs whose first operand is a file of code they run (``source`` and ``.`` included).
INTERPRETERS = frozenset(
    {
        "node",
        "nodejs",
        "bash",
        "sh",
        "dash",
        "zsh",
        "ksh",
        "ruby",
        "perl",
        "php",
        "deno",
        "bun",
        "tsx",
        "ts-node",
        "Rscript",
        "lua",
        "source",
        ".",
    }
)
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*")
#: Options that make the code inline (shown in the command), and options that take a value.
_SHELLS = ("bash", "sh", "dash", "zsh", "ksh", "source", ".")
_INLINE: dict[str, frozenset[str]] = {
    **{name: frozenset({"-c"}) for name in _SHELLS},
    "python": frozenset({"-c", "-m"}),
    **{name: frozenset({"-e", "--eval", "-p", "--print"}) for name in ("node", "nodejs", "bun", "deno")},
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r"}),
    "lua": frozenset({"-e"}),
    "Rscript": frozenset({"-e"}),
}
_VALUE_OPTIONS = {"python": ("-W", "-X"), "node": ("-r", "--require", "--import", "--loader")}

#: Files larger than this are fingerprinted by identity (size, inode, change time), not read.
_HASH_LIMIT = 8 << 20


def named_files(part: CommandPart) -> frozenset[Fingerprint]:
    """The fingerprints of the code ``part`` runs from its directories (see the module)."""
    names = [w for w in (part.argv[0] if part.argv else "", script(part)) if w]
    if names and "/" not in names[0] and part.argv and names[0] == part.argv[0]:
        names = names[1:]  # a bare program name is looked up on PATH, not in the directory
    module = python_module(part)
    if module:  # ``python3 -m tool`` runs ./tool.py (the directory is first on sys.path)
        stem = module.replace(".", "/")
        names += [f"{stem}.py", f"{stem}/__main__.py", f"{stem}/__init__.py"]
    manifests = MANIFESTS.get(program(part), ()) + MANIFESTS.get(module.split(".")[0], ())
    out: set[Fingerprint] = set()
    for directory in part.dirs:
        for word in names:
            full = os.path.normpath(os.path.join(directory, os.path.expanduser(word)))
            out.add((full, _fingerprint(full)))
        for name in manifests:
            full = os.path.join(directory, name)
            out.add((full, _fingerprint(full)))
    return frozenset(out)


def script(part: CommandPart) -> str:
    """The file an interpreter part runs (``t.py`` of ``python3 -W ignore t.py``), or ""
    (none, or code given inline with ``-c`` / ``-e`` / ``-m``, which the command's text shows)."""
    name = program(part)
    if not (name in INTERPRETERS or _PYTHON.fullmatch(name)):
        return ""
    words = list(part.argv[1:])
    if name in ("deno", "bun") and words[:1] == ["run"]:
        words = words[1:]
    family = "python" if _PYTHON.fullmatch(name) else name
    takes_value = _VALUE_OPTIONS.get(family, ())
    inline = _INLINE.get(family, frozenset({"-c", "-e"}))
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in inline:
            return ""
        elif word == "--":
            continue
        elif word.startswith("-"):
            skip = word in takes_value
        else:
            return word
    return ""


def python_module(part: CommandPart) -> str:
    """The module a Python part runs with ``-m`` (``pytest`` of ``python3 -m pytest``), or ""."""
    if not _PYTHON.fullmatch(program(part)):
        return ""
    words = part.argv[1:]
    for index, word in enumerate(words[:-1]):
        if word == "-m":
            return words[index + 1]
        if not word.startswith("-"):
            return ""
    return ""


def program(part: CommandPart) -> str:
    """The program's own name: ``python3`` of ``/usr/bin/python3`` too (round 21: named by its
    path, ``/usr/bin/python3 -m pytest`` and ``/bin/sh x.sh`` had their code not looked at)."""
    return os.path.basename(part.name)


def unchanged(recorded: frozenset[Fingerprint] | None, part: CommandPart) -> bool:
    """Whether a rule remembered with ``recorded`` may cover ``part``: no record (a rule from
    settings), or everything the part names now is as it was when the person approved."""
    return recorded is None or named_files(part) <= recorded


def _fingerprint(path: str) -> str:
    """``sha256:…@realpath`` for a regular file; its kind otherwise; ``absent`` when nothing is there.
    Opened non-blocking and checked after opening: a FIFO put there does not hang the decision."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return "absent"
    real = os.path.realpath(path)
    if not stat.S_ISREG(st.st_mode):
        return f"{stat.filemode(st.st_mode)[0]}@{real}"
    if st.st_size > _HASH_LIMIT:
        return f"big:{st.st_size}:{st.st_ino}:{st.st_ctime_ns}@{real}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return f"unreadable:{exc.errno}@{real}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"swapped@{real}"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
            if os.lseek(fd, 0, os.SEEK_CUR) > _HASH_LIMIT:  # grew while read
                return f"grew@{real}"
        return f"sha256:{digest.hexdigest()}@{real}"
    finally:
        os.close(fd)
