"""Skip pydantic's plugin discovery in ``shellrt run``, whose models need no plugin.

The first validator a process builds makes pydantic look for plugins: it walks
every installed distribution's entry points (``importlib.metadata``), ~8% of a
bare pydantic import here, paid again by every ``shellrt run`` (issue 22).
Plugins are third-party observers of validation (e.g. tracing); shellrt's
internal models (the sandbox policy, exec requests, results) are no place for
them. pydantic's documented switch is the ``PYDANTIC_DISABLE_PLUGINS``
environment variable; an operator who set it (even to ``""``, which keeps
plugins on) keeps their choice.

Only for a command that starts no process inheriting our environment: ``run``'s
command gets shellrt's clean base environment (``shellrt.supervisor.env``),
while ``serve``'s hooks inherit it, so ``serve`` keeps pydantic's default.
"""

from __future__ import annotations

import os

__all__ = ["PLUGINS_ENV", "skip_pydantic_plugins"]

PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


def skip_pydantic_plugins() -> None:
    """Turn pydantic's plugin discovery off for this process, unless the operator chose already."""
    os.environ.setdefault(PLUGINS_ENV, "__all__")
