"""What a tool says about permission, and what the rules engine matches against.

These live in the protocol layer because every tool returns them; the engine
that combines them with rules, modes and hooks is ``shellrt.permissions``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PermissionBehavior", "PermissionResult", "PermissionSubject"]

#: ``passthrough``: the tool has no opinion; the engine decides.
PermissionBehavior = Literal["allow", "deny", "ask", "passthrough"]


class PermissionResult(BaseModel):
    """A tool's own verdict on one call (``Tool.check_permissions``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    behavior: PermissionBehavior
    #: Why, in words a person (and the model) can read.
    reason: str = ""
    #: A content-specific ask that no mode (not even ``bypassPermissions``) may skip,
    #: e.g. writing ``.git/hooks`` or a shell rc file.
    safety_check: bool = False
    #: Replacement input, when the tool's check normalises it.
    updated_input: dict[str, Any] | None = None

    @classmethod
    def allow(cls, reason: str = "") -> PermissionResult:
        return cls(behavior="allow", reason=reason)

    @classmethod
    def deny(cls, reason: str) -> PermissionResult:
        return cls(behavior="deny", reason=reason)

    @classmethod
    def ask(cls, reason: str, *, safety_check: bool = False) -> PermissionResult:
        return cls(behavior="ask", reason=reason, safety_check=safety_check)

    @classmethod
    def passthrough(cls, reason: str = "") -> PermissionResult:
        return cls(behavior="passthrough", reason=reason)


class PermissionSubject(BaseModel):
    """What permission rules match against for one call.

    ``commands``: every subcommand of a shell command (normalized text), so
    ``Bash(git status:*)`` is checked against each; ``paths``: absolute, resolved
    paths a file tool touches; ``domains``: hosts a web tool contacts.
    ``access`` says whether paths are read or written (rules ``Read(...)`` vs ``Edit(...)``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    commands: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    access: Literal["read", "write", "execute", "fetch", "none"] = "none"
    #: The subject could not be fully determined (e.g. unparseable command); rules may not allow it.
    incomplete: bool = Field(default=False)
