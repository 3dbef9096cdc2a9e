"""Which parameters each read-only PowerShell cmdlet may get: an allow-list per cmdlet.

Why an allow-list: a deny-list of bad names (remoting, variables, browsers) misses any parameter
nobody listed, and PowerShell binds every unambiguous prefix of a name or alias. A parameter of a
read-only cmdlet is accepted only when it is written out as one of the names below (full name or
alias, case-insensitive) or as a prefix that matches only names below and no name known to do
more (``powershell._BAD_PARAM_NAMES`` and ``pwsh_cmdlets``): an ambiguous prefix is an error in
PowerShell, so the command then does not run. Any other name fails closed, with a reason to write a
listed name or ask. Provider-specific dynamic parameters are listed for the FileSystem provider only.

The lists follow PowerShell 7.4's documentation. Left out on purpose: parameters that search every
installed module (``Get-Command -ParameterName/-ParameterType/-UseFuzzyMatching``, ``Get-Help
-Category/-Component/-Functionality/-Role``: module analysis may import a module, running its
code), ``-AsJob``, WMI ``-Authority``/``-Impersonation``, ``Get-Module -All``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["COMMON_OK", "PARAMS_OF", "unknown_parameter"]

#: Common parameters that only change what is printed or how errors are handled.
COMMON_OK: Final = frozenset(
    ["verbose", "vb", "debug", "db", "erroraction", "ea", "warningaction", "wa", "informationaction", "infa",
     "progressaction", "proga", "outbuffer", "ob"]
)
_PATH = "path literalpath pspath lp "
_FS_FILTER = "filter include exclude "
_FORMAT = "property groupby view showerror displayerror force expand inputobject "
_WHERE_OPS = (
    "eq ceq ieq ne cne ine gt cgt igt lt clt ilt ge cge ige le cle ile like clike ilike notlike cnotlike "
    "inotlike match cmatch imatch notmatch cnotmatch inotmatch contains ccontains icontains notcontains "
    "cnotcontains inotcontains in cin iin notin cnotin inotin is isnot not "
)

#: Parameters (names and aliases, lower case) of each read-only cmdlet, common ones aside.
PARAMS_OF: Final[dict[str, frozenset[str]]] = {
    name: frozenset(spec.split())
    for name, spec in {
        # Microsoft.PowerShell.Core
        "get-command": "name noun verb module commandtype type totalcount syntax all listimported showcommandinfo",
        "get-help": "name full detailed examples parameter",
        "get-history": "id count",
        "get-job": "id name instanceid state command filter includechildjob childjobstate hasmoredata before "
                   "after newest",
        "get-module": "name listavailable fullyqualifiedname psedition skipeditioncheck refresh",
        "get-pshostprocessinfo": "name process id",
        "get-experimentalfeature": "name listavailable",
        "get-pssubsystem": "kind subsystemtype",
        "where-object": "property value inputobject " + _WHERE_OPS,
        "out-default": "transcript inputobject",
        "out-host": "paging inputobject",
        "out-null": "inputobject",
        # Microsoft.PowerShell.Management
        "get-childitem": _PATH + _FS_FILTER + "recurse s depth force name attributes directory ad d file af "
                         "hidden ah h readonly ar system as followsymlink",
        "get-content": _PATH + _FS_FILTER + "readcount totalcount first head tail last force delimiter wait "
                       "raw encoding stream asbytestream",
        "get-item": _PATH + _FS_FILTER + "force stream",
        "get-itemproperty": _PATH + _FS_FILTER + "name pspropertyname",
        "get-itempropertyvalue": _PATH + _FS_FILTER + "name pspropertyname",
        "get-location": "psprovider psdrive stack stackname",
        "get-process": "name processname id pid inputobject includeusername module fileversioninfo fv",
        "get-service": "name servicename displayname include exclude dependentservices requiredservices sdo "
                       "servicesdependedon inputobject",
        "get-psdrive": "name literalname psprovider scope",
        "get-psprovider": "psprovider",
        "get-timezone": "name id listavailable",
        "get-computerinfo": "property",
        "get-hotfix": "id hotfixid description",
        "get-eventlog": "logname newest after before username instanceid index entrytype et source message "
                        "asbaseobject list asstring",
        "get-wmiobject": "class property filter amended directread list recurse locale",
        "test-path": _PATH + _FS_FILTER + "pathtype type isvalid olderthan newerthan",
        "resolve-path": _PATH + "relative relativebasepath force",
        "split-path": _PATH + "parent leaf leafbase extension qualifier noqualifier isabsolute resolve",
        "join-path": "path pspath childpath additionalchildpath resolve",
        "convert-path": _PATH,
        "set-location": _PATH + "passthru stackname",
        "push-location": _PATH + "passthru stackname",
        "pop-location": "passthru stackname",
        # Microsoft.PowerShell.Utility
        "get-alias": "name exclude scope definition",
        "get-culture": "name listavailable nouseroverrides",
        "get-date": "date lastwritetime year month day hour minute second millisecond displayhint format "
                    "uformat unixtimeseconds asutc",
        "get-event": "sourceidentifier eventidentifier id",
        "get-eventsubscriber": "sourceidentifier subscriptionid id force",
        "get-filehash": _PATH + "inputstream algorithm",
        "get-formatdata": "typename powershellversion",
        "get-host": "",
        "get-member": "inputobject name membertype type view static force",
        "get-psbreakpoint": "script id variable command type runspace",
        "get-pscallstack": "",
        "get-random": "setseed maximum minimum inputobject count shuffle",
        "get-securerandom": "maximum minimum inputobject count shuffle",
        "get-runspace": "name id instanceid",
        "get-runspacedebug": "runspacename runspace runspaceid runspaceinstanceid",
        "get-tracesource": "name",
        "get-typedata": "typename",
        "get-uiculture": "",
        "get-unique": "inputobject asstring ontype caseinsensitive",
        "get-uptime": "since",
        "get-variable": "name valueonly include exclude scope",
        "get-verb": "verb group",
        "get-error": "newest last inputobject",
        "get-markdownoption": "",
        "select-string": _PATH + "inputobject pattern simplematch casesensitive quiet list noemphasis include "
                         "exclude notmatch allmatches encoding context raw culture",
        "select-object": "inputobject property excludeproperty expandproperty unique caseinsensitive last first "
                         "skip skiplast wait index skipindex",
        "measure-object": "inputobject property standarddeviation sum allstats average maximum minimum line word "
                          "character ignorewhitespace",
        "sort-object": "inputobject property descending unique casesensitive culture stable top bottom",
        "group-object": "inputobject property noelement asstring ashashtable aht culture casesensitive",
        "compare-object": "referenceobject differenceobject syncwindow property excludedifferent includeequal "
                          "passthru culture casesensitive",
        "out-string": "inputobject width stream nonewline",
        "write-output": "inputobject noenumerate",
        "write-host": "object nonewline separator foregroundcolor backgroundcolor",
        "write-verbose": "message msg",
        "write-debug": "message msg",
        "write-information": "messagedata msg tags",
        "convertto-json": "inputobject depth compress enumsasstrings asarray escapehandling",
        "convertfrom-json": "inputobject ashashtable depth noenumerate datekind",
        "convertto-csv": "inputobject delimiter useculture notypeinformation nti includetypeinformation "
                         "quotefields usequotes noheader",
        "convertfrom-csv": "inputobject delimiter useculture header",
        "convertto-html": "inputobject property body head title as fragment postcontent precontent meta charset "
                          "transitional",
        "convertto-xml": "inputobject depth notypeinformation as",
        "select-xml": _PATH + "xml content xpath namespace",
        "start-sleep": "seconds milliseconds duration",
        "format-table": _FORMAT + "autosize hidetableheaders wrap repeatheader",
        "format-list": _FORMAT,
        "format-wide": _FORMAT + "autosize column",
        "format-custom": _FORMAT + "depth",
        "format-hex": _PATH + "inputobject encoding count offset raw",
        "test-json": _PATH + "json options",
        # Microsoft.PowerShell.Security
        "get-acl": _PATH + _FS_FILTER + "inputobject audit allcentralaccesspolicies",
        "get-executionpolicy": "scope list",
        "get-cmsmessage": _PATH + "content",
        # CimCmdlets (local Win32_/CIM_ classes only: powershell._wmi_reason)
        "get-ciminstance": "classname filter property keyonly shallow operationtimeoutsec ot",
    }.items()
}


def unknown_parameter(cmdlet: str, name: str, bad: tuple[str, ...]) -> str:
    """Why ``-name`` (lower case, no value) is not a known-safe parameter of ``cmdlet``, or "".

    ``bad`` holds names known to do more than read: a prefix of one of them is refused even when it
    is also a prefix of a listed name (which of the two PowerShell binds is its business)."""
    allowed = PARAMS_OF.get(cmdlet)
    if allowed is None:
        return ""  # not a read-only cmdlet: judged elsewhere (never read-only)
    if name in allowed or name in COMMON_OK:
        return ""
    if not name or any(full.startswith(name) for full in bad):
        return f"-{name} may bind a parameter that does more than read; write a listed parameter's full name"
    if any(full.startswith(name) for full in allowed) or any(full.startswith(name) for full in COMMON_OK):
        return ""
    return (f"-{name} is not a known read-only parameter of {cmdlet} (parameters are an allow-list per "
            "cmdlet); use one of its listed parameters, or ask")
