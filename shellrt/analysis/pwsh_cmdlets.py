"""Which PowerShell cmdlets are read-only: an allow-list of the core modules' cmdlets.

Why an allow-list and not a verb: ``Get-*`` is read-only by convention only. Cmdlets of
installed modules reach whatever their module talks to (``Get-S3Object -BucketName``,
Az and Graph ``Get-*`` calls their clouds, RSAT's ``Get-ADUser -Server HOST`` binds to the
server it names, ``Get-AuthenticodeSignature`` may fetch the CRL/AIA URLs the signed file's
author chose). Only cmdlets of ``Microsoft.PowerShell.Core``, ``.Management``, ``.Utility`` and
``.Security`` (plus ``CimCmdlets``' ``Get-CimInstance`` for local ``Win32_``/``CIM_`` classes)
are judged; any other name, whatever its verb, is not read-only (fail closed).

Their parameters are judged in ``powershell`` (remoting, variable-assigning and
browser-opening names under every prefix PowerShell binds) and here (``_BAD_PARAMS_OF``:
parameters of one cmdlet that do more than read).
"""

from __future__ import annotations

from typing import Final

__all__ = ["READ_ONLY_CMDLETS", "bad_parameter", "not_read_only_why"]

#: The read-only cmdlets of the core modules (lower case), by module.
_CORE: Final = frozenset(
    [
        # Microsoft.PowerShell.Core
        "get-command", "get-help", "get-history", "get-job", "get-module", "get-pshostprocessinfo",
        "get-experimentalfeature", "get-pssubsystem", "where-object", "out-default", "out-host", "out-null",
    ]
)
_MANAGEMENT: Final = frozenset(
    [
        "get-childitem", "get-content", "get-item", "get-itemproperty", "get-itempropertyvalue",
        "get-location", "get-process", "get-service", "get-psdrive", "get-psprovider", "get-timezone",
        "get-computerinfo", "get-hotfix", "get-eventlog", "get-wmiobject", "test-path", "resolve-path",
        "split-path", "join-path", "convert-path", "set-location", "push-location", "pop-location",
    ]
)
_UTILITY: Final = frozenset(
    [
        "get-alias", "get-culture", "get-date", "get-event", "get-eventsubscriber", "get-filehash",
        "get-formatdata", "get-host", "get-member", "get-psbreakpoint", "get-pscallstack", "get-random",
        "get-securerandom", "get-runspace", "get-runspacedebug", "get-tracesource", "get-typedata",
        "get-uiculture", "get-unique", "get-uptime", "get-variable", "get-verb", "get-error",
        "get-markdownoption", "select-string", "select-object", "measure-object", "sort-object",
        "group-object", "compare-object", "out-string", "write-output", "write-host", "write-verbose",
        "write-debug", "write-information", "convertto-json", "convertfrom-json", "convertto-csv",
        "convertfrom-csv", "convertto-html", "convertto-xml", "select-xml", "start-sleep", "format-table",
        "format-list", "format-wide", "format-custom", "format-hex", "test-json",
    ]
)
_SECURITY: Final = frozenset(["get-acl", "get-executionpolicy", "get-cmsmessage"])
#: CimCmdlets: local WMI reads of Microsoft's own classes only (see ``powershell._wmi_reason``).
_CIM: Final = frozenset(["get-ciminstance"])

READ_ONLY_CMDLETS: Final = _CORE | _MANAGEMENT | _UTILITY | _SECURITY | _CIM

#: Core cmdlets that look like reads but are not, with why (a clearer reason than "unknown").
_NOT_READ_ONLY: Final = {
    "get-credential": "prompts for credentials",
    "get-packageprovider": "may download and install a package provider (-ForceBootstrap, or a prompt)",
    "get-authenticodesignature": "may fetch the CRL and AIA URLs named by the file's certificate (network)",
    "get-pfxcertificate": "prompts for a password",
    "get-clipboard": "reads the desktop session's clipboard (outside the workspace)",
    "get-pssession": "lists or connects to remote sessions",
    "get-winevent": "not a core module's cmdlet (Microsoft.PowerShell.Diagnostics); may reach another host",
    "get-counter": "not a core module's cmdlet (Microsoft.PowerShell.Diagnostics); may reach another host",
}

#: Parameters of one cmdlet that do more than read (full names: every prefix PowerShell binds
#: to them is refused too).
_BAD_PARAMS_OF: Final = {
    "get-help": ("showwindow",),
    "get-ciminstance": ("query", "namespace", "resourceuri", "querydialect"),
    "get-wmiobject": ("query", "namespace"),
}


def not_read_only_why(cmdlet: str) -> str:
    """Why ``cmdlet`` (lower case, alias resolved) is not read-only, or "" when it is on the list."""
    if cmdlet in READ_ONLY_CMDLETS:
        return ""
    known = _NOT_READ_ONLY.get(cmdlet)
    if known:
        return known
    return ("is not on the list of read-only cmdlets of PowerShell's core modules (a cmdlet of another module "
            "may reach the network whatever its verb); ask, or use a core cmdlet")


def bad_parameter(cmdlet: str, name: str) -> str:
    """The full name of ``cmdlet``'s own non-read parameter that ``-name`` may bind to, or ""."""
    name = name.lower()
    if not name:
        return ""
    return next((bad for bad in _BAD_PARAMS_OF.get(cmdlet, ()) if bad.startswith(name)), "")
