"""Which parameter a PowerShell parameter word binds, for deny and ask rules that name a parameter.

Why: pwsh binds any unambiguous prefix of a parameter's name and each of its declared aliases
(``Remove-Item -Rec``, ``-r``; Get-ChildItem's ``-s`` is ``-Recurse``, ``-LP`` is ``-LiteralPath``),
while a command rule matches text: ``PowerShell(Remove-Item -Recurse:*)`` met ``-Recurse`` alone
(round 27). `binds` says which spelled-out parameters a word may bind; where the cmdlet's
parameters are not listed here (or the word is none of them) a prefix either way counts as the same
parameter (fail closed: a deny rule meets more, never less).

The lists follow PowerShell 7.4's documentation for the cmdlets deny rules are usually written
for (files, content, processes, the web) and the read cmdlets whose parameters have short aliases;
a name missing here can only make a prefix look unique that pwsh would refuse as ambiguous (the
command then does not run). Aliases a missing cmdlet declares are not known (``Left`` in the
security document). Not compiled (mypyc): asked when rules are matched, not inside ``analyze()``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["binds", "positional", "same_parameter"]

#: Common parameters (``about_CommonParameters``) and the ShouldProcess pair, with their aliases.
_COMMON: Final = (
    "verbose:vb debug:db erroraction:ea warningaction:wa informationaction:infa progressaction:proga "
    "errorvariable:ev warningvariable:wv informationvariable:iv outvariable:ov outbuffer:ob "
    "pipelinevariable:pv whatif:wi confirm:cf"
)
_LITERAL = "path literalpath:pspath:lp "
_FILTERS = "filter include exclude "
_CONTENT = _LITERAL + _FILTERS + "value passthru force credential nonewline encoding asbytestream stream"
_WEB = (
    "uri usebasicparsing httpversion websession sessionvariable:sv allowunencryptedauthentication "
    "authentication credential usedefaultcredentials certificatethumbprint certificate skipcertificatecheck "
    "sslprotocol token useragent disablekeepalive connectiontimeoutseconds:timeoutsec operationtimeoutseconds "
    "headers skipheadervalidation allowinsecureredirect maximumredirection maximumretrycount "
    "preserveauthorizationonredirect retryintervalsec method custommethod:cm noproxy proxy proxycredential "
    "proxyusedefaultcredentials body form contenttype transferencoding infile outfile passthru resume "
    "skiphttperrorcheck unixsocket "
)
#: Each cmdlet's parameters as ``name:alias:alias`` words (lower case).
_SPECS: Final = {
    "remove-item": _LITERAL + _FILTERS + "recurse force credential stream",
    "copy-item": _LITERAL + _FILTERS + "destination container force recurse passthru credential fromsession "
                 "tosession",
    "move-item": _LITERAL + _FILTERS + "destination force passthru credential",
    "rename-item": _LITERAL + "newname force passthru credential",
    "new-item": "path name itemtype:type value:target force credential",
    "set-item": _LITERAL + _FILTERS + "value force passthru credential",
    "clear-item": _LITERAL + _FILTERS + "force credential",
    "set-content": _CONTENT,
    "add-content": _CONTENT,
    "clear-content": _LITERAL + _FILTERS + "force credential stream",
    "out-file": "filepath:path literalpath:pspath:lp encoding append force noclobber:nooverwrite width "
                "nonewline inputobject",
    "tee-object": "filepath:path literalpath:pspath:lp append encoding variable inputobject",
    "get-childitem": _LITERAL + _FILTERS + "recurse:s depth force name attributes followsymlink "
                     "directory:ad:d file:af hidden:ah:h readonly:ar system:as",
    "get-content": _LITERAL + _FILTERS + "readcount totalcount:first:head tail:last force credential delimiter "
                   "wait raw encoding asbytestream stream",
    "get-item": _LITERAL + _FILTERS + "force credential stream",
    "select-string": _LITERAL + "inputobject pattern simplematch casesensitive quiet list noemphasis include "
                     "exclude notmatch allmatches encoding context raw culture",
    "set-location": _LITERAL + "passthru stackname",
    "invoke-webrequest": _WEB,
    "invoke-restmethod": _WEB + "followrellink:fl maximumfollowrellink:ml responseheadersvariable:rhv "
                         "statuscodevariable",
    "start-process": "filepath:pspath:path argumentlist:args credential:runas workingdirectory "
                     "loaduserprofile:lup nonewwindow:nnw passthru redirectstandarderror:rse "
                     "redirectstandardinput:rsi redirectstandardoutput:rso verb windowstyle wait "
                     "usenewenvironment environment",
    "stop-process": "id name:processname inputobject passthru force",
    "invoke-expression": "command",
    "set-variable": "name value include exclude description option force visibility passthru scope",
}


#: Each listed cmdlet's positional parameters, in position order (PowerShell 7.4's documentation; over
#: its parameter sets: ``Get-ChildItem``'s ``-Path`` and ``-LiteralPath`` sets share ``-Filter`` at 1).
_POSITIONS: Final = {
    "remove-item": "path", "copy-item": "path destination", "move-item": "path destination",
    "rename-item": "path newname", "new-item": "path", "set-item": "path value", "clear-item": "path",
    "set-content": "path value", "add-content": "path value", "clear-content": "path",
    "out-file": "filepath encoding", "tee-object": "filepath", "get-childitem": "path filter",
    "get-content": "path", "get-item": "path", "select-string": "pattern path", "set-location": "path",
    "invoke-webrequest": "uri", "invoke-restmethod": "uri", "start-process": "filepath argumentlist",
    "stop-process": "id", "invoke-expression": "command", "set-variable": "name value",
}


def _table(spec: str) -> dict[str, str]:
    """Every spelling (name or alias) -> the parameter's name."""
    out: dict[str, str] = {}
    for entry in f"{spec} {_COMMON}".split():
        name, *aliases = entry.split(":")
        for spelling in (name, *aliases):
            out.setdefault(spelling, name)
    return out


_TABLES: Final = {cmdlet: _table(spec) for cmdlet, spec in _SPECS.items()}


def binds(cmdlet: str, word: str) -> frozenset[str]:
    """The parameter names ``-word`` (lower case, no dash) may bind for ``cmdlet`` (lower case,
    alias resolved); empty when the cmdlet or the word is not known here.

    A spelling written out wins (``-d`` is Get-ChildItem's ``-Directory``, not a prefix of
    ``-Depth``); otherwise every parameter with a spelling that starts with it (more than one:
    pwsh refuses the ambiguity, and each reading is kept, fail closed)."""
    table = _TABLES.get(cmdlet)
    if table is None or not word:
        return frozenset()
    exact = table.get(word)
    if exact is not None:
        return frozenset((exact,))
    return frozenset(name for spelling, name in table.items() if spelling.startswith(word))


def same_parameter(cmdlet: str, word: str, ruled: str) -> bool:
    """Whether the parameter word ``word`` of a command may bind the parameter a rule spells ``ruled``
    (both lower case, no dash): by the cmdlet's list when both are on it, else when one is a prefix of
    the other (fail closed)."""
    if word == ruled:
        return True
    mine, theirs = binds(cmdlet, word), binds(cmdlet, ruled)
    if mine and theirs:
        return not mine.isdisjoint(theirs)
    return word.startswith(ruled) or ruled.startswith(word)


def positional(cmdlet: str) -> frozenset[str] | None:
    """The parameter names a bare argument of ``cmdlet`` may bind (any position: which word is which
    depends on the named parameters around it); None when the cmdlet is not listed here.

    Why: pwsh binds ``Remove-Item secret`` as ``Remove-Item -Path secret``; a deny rule that names
    ``-Path`` met only the spelled-out form (round 27's Left, fixed in round 28)."""
    names = _POSITIONS.get(cmdlet)
    return None if names is None else frozenset(names.split())
