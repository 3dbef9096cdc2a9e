"""Configuration files a program obeys, found from its directory, that name code it would run.

Red team, round 50 (configfile). ``cargo tree`` under an allow rule ``Bash(cargo tree:*)`` ran the
workspace's ``.cargo/config.toml`` ``build.rustc-wrapper`` (cargo runs ``rustc -vV`` through it);
``cargo --version`` ran a ``rust-toolchain.toml`` ``path`` toolchain's ``bin/cargo`` (the rustup
proxy picks it); ``mypy`` imported a ``plugins`` file of a ``mypy.ini`` found in a parent directory and
ran its ``python_executable``; ``npm config edit`` ran the ``editor`` of a project ``.npmrc``. The
analysis is pure and cannot see those files: this module reads them for a part whose program is in
`ROWS`, from every directory the part may run in and every path it names, up to the filesystem root.

One table (`ROWS`: programs, file names, the file's form, the section that is the program's, the keys
that name code, the options whose value is such a file) and one walker (`config_hazard`). A file that
cannot be read or parsed, a link leading out of the allowed reads, too many places to look: a hazard
too (fail closed). Cost: a frozenset lookup for any other program; a few ``lstat`` calls per
directory walked for these (see docs/security.md, round 50: configfile).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sandbox._hostread import read_regular_bytes

__all__ = ["CONFIG_PROGRAMS", "ROWS", "ConfigRow", "config_hazard", "config_program"]

Form = Literal["toml", "ini", "lines", "toolchain"]


@dataclass(frozen=True)
class ConfigRow:
    """Files named ``names`` (relative to each directory walked) that ``programs`` obey.

    ``section``: toml, the table path that is the program's (empty: the whole file); ini, the
    section names that are (a name ending in ``-`` or ``.`` is a prefix). ``keys``: keys naming code
    (compared lowercased, ``_`` as ``-``), at any depth below ``section``. ``options``: command-line
    options whose value is such a file (toml: or an inline ``KEY=VALUE`` setting, as cargo's)."""

    programs: frozenset[str]
    names: tuple[str, ...]
    form: Form
    keys: frozenset[str]
    section: tuple[str, ...] = ()
    options: tuple[str, ...] = ()


def _keys(*names: str) -> frozenset[str]:
    return frozenset(_norm(n) for n in names)


def _norm(key: str) -> str:
    return key.strip().strip("\"'").lower().replace("_", "-")


#: The rustup proxies: each picks its toolchain from a ``rust-toolchain(.toml)`` found upward.
_RUSTUP = frozenset(
    {
        "cargo", "rustc", "rustdoc", "rustfmt", "cargo-fmt", "cargo-clippy", "clippy-driver", "rust-analyzer",
        "rust-gdb", "rust-gdbgui", "rust-lldb", "rls", "cargo-miri", "rustup",
    }
)
_MYPY = frozenset({"mypy", "dmypy", "stubtest"})
_MYPY_KEYS = _keys("plugins", "python_executable")
_PYLINT = frozenset({"pylint", "pyreverse", "symilar"})
_PYLINT_KEYS = _keys("init-hook", "load-plugins")

ROWS: tuple[ConfigRow, ...] = (
    # Verified (cargo 1.95): `cargo tree`/`metadata` ran `build.rustc-wrapper` from the cwd's or a
    # parent's `.cargo/config(.toml)`; the others name programs cargo runs (`alias` may shadow an
    # external subcommand such as `fmt`; `env` reaches the programs cargo starts; `include` another file).
    ConfigRow(
        frozenset({"cargo"}),
        (".cargo/config.toml", ".cargo/config"),
        "toml",
        _keys(
            "rustc", "rustc-wrapper", "rustc-workspace-wrapper", "rustdoc", "runner", "linker",
            "credential-provider", "global-credential-providers", "alias", "env", "include",
        ),
        options=("--config",),
    ),
    # Verified (rustup 1.29): `cargo --version` and `rustfmt --version` ran `<path>/bin/<program>`.
    ConfigRow(_RUSTUP, ("rust-toolchain.toml", "rust-toolchain"), "toolchain", _keys("path")),
    # Verified (mypy 2.4): a `plugins` file was imported, `python_executable` ran, from a parent's file too.
    ConfigRow(_MYPY, ("mypy.ini", ".mypy.ini", "setup.cfg"), "ini", _MYPY_KEYS, ("mypy", "mypy-"), ("--config-file",)),
    ConfigRow(_MYPY, ("pyproject.toml",), "toml", _MYPY_KEYS, ("tool", "mypy")),
    # Not installed here (from their manuals): pylint's init-hook runs Python, load-plugins imports.
    ConfigRow(
        _PYLINT,
        ("pylintrc", ".pylintrc", "setup.cfg", "tox.ini"),
        "ini",
        _PYLINT_KEYS,
        ("main", "master", "pylint."),
        ("--rcfile",),
    ),
    ConfigRow(_PYLINT, ("pyproject.toml", "pylintrc.toml", ".pylintrc.toml"), "toml", _PYLINT_KEYS, ("tool", "pylint")),
    # flake8's local plugins import a module from `paths`.
    ConfigRow(
        frozenset({"flake8", "pflake8"}),
        ("setup.cfg", "tox.ini", ".flake8"),
        "ini",
        _keys("extension", "report", "paths"),
        ("flake8:local-plugins",),
        ("--config", "--append-config"),
    ),
    # Verified (npm 11): `npm config edit` ran a project `.npmrc`'s `editor` (from a subdirectory too).
    ConfigRow(
        frozenset({"npm", "npx", "pnpm", "yarn"}),
        (".npmrc",),
        "lines",
        _keys(
            "script-shell", "node-options", "onload-script", "editor", "git", "browser", "shell", "init-module",
            "node-gyp", "viewer", "userconfig", "globalconfig",
        ),
        options=("--userconfig", "--globalconfig"),
    ),
    # Not installed here (yarn's manuals): `yarnPath`/`yarn-path` is run as yarn itself, `plugins` load.
    ConfigRow(frozenset({"yarn"}), (".yarnrc.yml", ".yarnrc"), "lines", _keys("yarnPath", "yarn-path", "plugins")),
)

#: Every program some row names: the only ones whose parts are looked at (and never memoised).
CONFIG_PROGRAMS = frozenset(p for row in ROWS for p in row.programs)

#: Bounds: bytes of one file, directories walked per part, places a part's paths start walks from.
_MAX_BYTES = 256 * 1024
_MAX_DIRS = 512
_MAX_STARTS = 32
_LINE_KEY = re.compile(r"""^\s*["']?([A-Za-z0-9_.@/:-]+?)["']?\s*(?:[:=\s]|$)""")


_PYTHON = re.compile(r"python[0-9.]*")


def config_program(name: str, argv: Sequence[str]) -> str:
    """The program of `ROWS` that a part (program ``name``, words ``argv``) runs, or "": its own
    name (a path's last component), or the module of ``python -m MODULE`` (``python3 -m mypy``)."""
    program = os.path.basename(name)
    if program in CONFIG_PROGRAMS:
        return program
    if not _PYTHON.fullmatch(program):
        return ""
    words = list(argv[1:]) if argv and os.path.basename(argv[0]) == program else list(argv)
    for i, word in enumerate(words):
        if word[:1] != "-" or word == "-" or word.startswith("--"):
            return ""  # a script, stdin, or a long option: no module is run by -m before it
        if "m" in word[1:]:
            # `-m mypy`, `-mmypy`, `-Im mypy`: the module is the rest of the word or the next word.
            rest = word[word.index("m", 1) + 1 :] or (words[i + 1] if i + 1 < len(words) else "")
            module = rest.split(".", 1)[0]
            return module if module in CONFIG_PROGRAMS else ""
        if word[1:2] in ("c", "W", "X", "Q"):
            return ""  # -c runs its own code (judged elsewhere); -W/-X take a value: stop, not known
    return ""


def config_hazard(
    name: str,
    argv: Sequence[str],
    places: Sequence[str],
    inside: Callable[[str], bool],
) -> str:
    """Why running ``argv`` (program ``name``) in any of ``places`` (host directories) may run code a
    configuration file names ("" when none): the first file found, walking up from each place and
    from each existing path the part names, whose program section sets a key in `ROWS`."""
    program = config_program(name, argv)
    if not program:
        return ""
    rows = [row for row in ROWS if program in row.programs]
    if not places:
        return f"{program} runs in a directory not known here, whose configuration files were not checked"
    for row in rows:
        found = _option_files(row, argv, places)
        for path, text in found:
            why = _judge(row, path, text, argv[1:])
            if why:
                return _reason(program, why)
    starts = _starts(argv, places)
    if len(starts) > _MAX_STARTS:
        return f"{program} names too many paths to check the configuration files it obeys; name fewer"
    names = sorted({n for row in rows for n in row.names})
    seen: set[str] = set()
    for start in starts:
        for directory in _upward(start):
            if directory in seen:
                break  # the rest of the way up was walked from an earlier start
            seen.add(directory)
            if len(seen) > _MAX_DIRS:
                return f"{program}: too many directories to check for its configuration files"
            missing: set[str] = set()
            for file in names:
                head = file.split("/", 1)[0]
                if head in missing:
                    continue  # `.cargo` is absent here: so are both of its files (one lstat, not two)
                if head != file and not os.path.lexists(os.path.join(directory, head)):
                    missing.add(head)
                    continue
                why = _look(os.path.join(directory, file), [r for r in rows if file in r.names], inside, argv[1:])
                if why:
                    return _reason(program, why)
    return ""


def _reason(program: str, why: str) -> str:
    return f"{why}, which {program} would run; review that file before running {program} here"


def _upward(start: str) -> Iterable[str]:
    current = start
    while True:
        yield current
        parent = os.path.dirname(current)
        if parent == current:
            return
        current = parent


def _starts(argv: Sequence[str], places: Sequence[str]) -> list[str]:
    """Where walks start: each place, and each existing directory a word names (a file: its own)."""
    starts = list(dict.fromkeys(places))
    for word in argv[1:]:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if not value or value.startswith("-") or "\x00" in value:
            continue
        for place in places:
            path = os.path.normpath(os.path.join(place, os.path.expanduser(value)))
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            start = path if stat.S_ISDIR(st.st_mode) else os.path.dirname(path)
            if start not in starts:
                starts.append(start)
    return starts


def _option_files(row: ConfigRow, argv: Sequence[str], places: Sequence[str]) -> list[tuple[str, str | None]]:
    """(name, text or None when unreadable) of each file an option of ``row`` names; an inline toml
    setting (``--config build.rustc-wrapper='q'``) counts as a file of its own."""
    values: list[str] = []
    for i, word in enumerate(argv[1:], start=1):
        for option in row.options:
            if word == option and i + 1 < len(argv):
                values.append(argv[i + 1])
            elif word.startswith(option + "="):
                values.append(word[len(option) + 1 :])
    found: list[tuple[str, str | None]] = []
    for value in values:
        if row.form == "toml" and "=" in value and not os.path.exists(os.path.join(places[0], value)):
            found.append((f"the option value {value!r}", value))
            continue
        for place in places:
            path = os.path.join(place, os.path.expanduser(value))
            found.append((path, _read(path)))
    return found


def _read(path: str) -> str | None:
    try:
        data = read_regular_bytes(path, _MAX_BYTES)
    except OSError:
        return None
    if len(data) > _MAX_BYTES:
        return None
    return data.decode("utf-8", "replace")


def _look(path: str, rows: Sequence[ConfigRow], inside: Callable[[str], bool], words: Sequence[str]) -> str:
    """Why the file at ``path`` (if any) names code for ``rows`` ("" when absent or naming none)."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    except OSError as exc:
        return f"{path} could not be checked ({exc.strerror})"
    if inside(path):
        # A link (of the file, or of a directory on its way: ``.cargo -> /elsewhere``) leading out
        # of the allowed reads is not followed: what it holds is not known here.
        target = os.path.realpath(path)
        if target != path and not inside(target):
            return f"{path} leads out of the workspace ({target}) and was not read here"
    text = _read(path)
    for row in rows:
        why = _judge(row, path, text, words)
        if why:
            return why
    return ""


def _judge(row: ConfigRow, path: str, text: str | None, words: Sequence[str]) -> str:
    import configparser  # here: only a file that exists is parsed (the CLI's import budget)

    if text is None:
        return f"{path} could not be read (no regular file, unreadable, or over {_MAX_BYTES:,} bytes)"
    try:
        keys = _code_keys(row, text)
    except (ValueError, configparser.Error):
        return f"{path} could not be parsed here"
    keys = {k for k in keys if not k.startswith("alias.") or k[len("alias.") :] in words}
    if keys:
        return f"{path} sets {', '.join(sorted(keys)[:3])}"
    return ""


def _code_keys(row: ConfigRow, text: str) -> set[str]:
    """The keys of ``row.keys`` that ``text`` (a file in ``row.form``) sets in the program's section."""
    import configparser
    import tomllib

    if row.form == "lines":
        found = {_norm(m.group(1)) for line in text.splitlines() if (m := _LINE_KEY.match(line))}
        return found & row.keys
    if row.form == "ini":
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        parser.read_string(text)
        hit: set[str] = set()
        for section in parser.sections():
            lowered = section.strip().lower()
            if any(lowered == s or (s[-1] in "-." and lowered.startswith(s)) for s in row.section):
                hit |= {_norm(k) for k in parser.options(section)} & row.keys
        return hit
    if row.form == "toolchain":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            # The legacy one-line form names a channel; anything else may be a path.
            line = text.strip()
            return set() if re.fullmatch(r"[A-Za-z0-9._-]*", line) else {"path"}
        return _toml_keys(data, row.keys)
    data = tomllib.loads(text)
    for part in row.section:
        data = data.get(part) if isinstance(data, dict) else None
        if data is None:
            return set()
    return _toml_keys(data, row.keys)


def _toml_keys(data: Any, keys: frozenset[str], depth: int = 0) -> set[str]:
    if depth > 32:
        return {"(nested too deep)"}
    found: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if _norm(str(key)) == "alias" and "alias" in keys and isinstance(value, dict):
                # cargo takes an alias only for a subcommand that is not built in (`xtask`, `fmt`):
                # each counts where a word of the command names it (`_judge`).
                found |= {f"alias.{name}" for name in value}
                continue
            if _norm(str(key)) in keys:
                found.add(str(key))
            found |= _toml_keys(value, keys, depth + 1)
    elif isinstance(data, list):
        for value in data:
            found |= _toml_keys(value, keys, depth + 1)
    return found
