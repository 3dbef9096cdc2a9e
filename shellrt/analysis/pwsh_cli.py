"""What code a ``pwsh``/``powershell`` command line runs that its words do not show.

Why: deny and ask rules read the words of a command (``pwsh -c 'Remove-Item x'`` meets
``PowerShell(Remove-Item:*)`` and ``Bash(rm:*)`` meets ``pwsh -c 'rm x'``), but pwsh also runs
base64 text (``-EncodedCommand``, any prefix of it, ``-ec``) and commands read from standard input
(``-Command -``, ``-File -``, no command at all, or ``-NoExit``/``-Interactive`` after one): round 28
found ``pwsh -enc UgBlAG0A…`` (``Remove-Item x``) and ``echo 'rm x' | pwsh -c -`` passing both.
Parameter names follow pwsh 7.4's ``CommandLineParameterParser`` (any prefix of a name down to its
shortest form, ``-``, ``--`` or ``/`` before it). Not compiled (mypyc): asked when rules are matched.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import Final

__all__ = ["HiddenCode", "pwsh_hidden_code"]

#: A program that is PowerShell's host (any case: a case-insensitive filesystem runs ``PWSH``).
_PWSH: Final = re.compile(r"(?i)(?:.*[/\\])?(pwsh|powershell)(-preview|-lts)?(\.exe)?").fullmatch

#: Parameters that take the next word as their value (name, shortest form pwsh accepts).
_VALUED: Final = (
    ("configurationname", "config"), ("configurationfile", "configurationfile"),
    ("custompipename", "custompipename"), ("executionpolicy", "ex"), ("executionpolicy", "ep"),
    ("inputformat", "inp"), ("inputformat", "if"), ("outputformat", "o"), ("outputformat", "of"),
    ("settingsfile", "settings"), ("windowstyle", "w"), ("workingdirectory", "wd"),
    ("workingdirectory", "wo"), ("encodedarguments", "encodeda"), ("encodedarguments", "ea"),
)
#: Switches: parameters that take no value.
_SWITCHES: Final = (
    ("login", "l"), ("mta", "mta"), ("sta", "sta"), ("nologo", "nol"),
    ("noninteractive", "noni"), ("noprofile", "nop"), ("noprofileloadtime", "noprofileloadtime"),
    ("sshservermode", "sshs"), ("servermode", "s"), ("socketservermode", "so"),
    ("namedpipeservermode", "namedpipeservermode"),
)
#: After these the rest of the line is the command (``-CommandWithArgs`` too: ``-cwa``).
_COMMANDS: Final = (("command", "c"), ("commandwithargs", "cwa"))
_FILE: Final = (("file", "f"),)
#: pwsh prints and exits, whatever follows.
_EXITS: Final = (("help", "h"), ("help", "?"), ("version", "v"))
_ENCODED: Final = (("encodedcommand", "e"), ("encodedcommand", "ec"))
#: Switches that keep pwsh reading commands (from standard input when it is not a terminal).
_STAY: Final = (("noexit", "noe"), ("interactive", "i"))


class HiddenCode:
    """What ``pwsh_hidden_code`` found: ``scripts`` decoded from base64, or ``why`` code is unreadable."""

    __slots__ = ("scripts", "why")

    def __init__(self, scripts: tuple[str, ...] = (), why: str = "") -> None:
        self.scripts = scripts
        self.why = why


def _is(name: str, table: tuple[tuple[str, str], ...]) -> bool:
    return any(full.startswith(name) and len(name) >= len(short) for full, short in table) or any(
        name == short for _, short in table
    )


def pwsh_hidden_code(words: Sequence[str]) -> HiddenCode | None:
    """``words`` (a command line, program first, quotes already removed) read as pwsh reads them:
    None when it is not pwsh or runs only code its words show (``-Command`` text, a script file)."""
    if not words or not _PWSH(words[0]):
        return None
    scripts: list[str] = []
    given = stay = False
    i = 1
    while i < len(words):
        word = words[i]
        if word[:1] not in "-/" or word in ("-", "/"):  # the script file; its arguments follow
            return _hidden(scripts, "-" if word == "-" else "file", stay)
        name, colon, value = word.lstrip("-/").lower().partition(":")
        following = value if colon else (words[i + 1] if i + 1 < len(words) else None)
        step = 1 if colon else 2
        if _is(name, _ENCODED):
            if following is None:
                return HiddenCode(why="pwsh -EncodedCommand without a value")
            try:
                raw = base64.b64decode(following.strip("'\""), validate=False)
                scripts.append(raw.decode("utf-16-le"))
            except (binascii.Error, ValueError):
                return HiddenCode(why="pwsh -EncodedCommand runs text that does not decode here")
            given = True
            i += step
        elif _is(name, _EXITS):
            return None
        elif _is(name, _COMMANDS) or _is(name, _FILE):
            if following in (None, "-"):
                return HiddenCode(why="pwsh reads its commands from standard input")
            return _hidden(scripts, "command", stay)
        elif _is(name, _STAY):
            stay = True
            i += 1
        elif _is(name, _VALUED):
            i += step
        elif _is(name, _SWITCHES):
            i += 1
        else:  # an unknown parameter: a next word that is not a parameter may be its value (fail closed)
            i += 1 if following is None or following[:1] == "-" else step
    return _hidden(scripts, "command" if given else "-", stay)


def _hidden(scripts: list[str], given: str, stay: bool) -> HiddenCode | None:
    if given == "-":
        return HiddenCode(why="pwsh reads its commands from standard input")
    if stay:
        return HiddenCode(why="pwsh -NoExit/-Interactive reads more commands from standard input")
    return HiddenCode(scripts=tuple(scripts)) if scripts else None
