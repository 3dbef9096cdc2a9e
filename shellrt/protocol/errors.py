"""Exceptions of the protocol layer (root: `ProtocolError`)."""

from __future__ import annotations

__all__ = ["ProtocolError", "ServiceNotAvailableError", "ToolDefinitionError", "ToolExecutionError"]


class ProtocolError(Exception):
    """Root of every error raised by ``shellrt.protocol``."""


class ToolDefinitionError(ProtocolError, TypeError):
    """Raised at class-definition time when a Tool subclass breaks the protocol.

    For example: a tool that touches the environment (processes, files, network)
    without its own ``check_permissions``, or a tool without ``name``/``input_model``.
    """


class ToolExecutionError(ProtocolError):
    """Raised by a tool's ``call`` for an expected failure; the message goes to the model as is.

    Use it for failures the model can act on ("file changed since it was read:
    read it again"); anything else is reported as an unexpected exception.
    """


class ServiceNotAvailableError(ProtocolError, LookupError):
    """Raised by `ToolContext.service` when the session registered no such service."""
