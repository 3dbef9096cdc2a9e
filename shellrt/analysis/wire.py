"""The JSON wire form of a verdict (``shellrt classify --json``): subcommands as plain strings.

Built from the verdict's fields (``CommandAnalysis.__dict__``, or
``analyze.analysis_fields``), so the CLI prints it without the pydantic model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["wire_form"]


def wire_form(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The wire form of a verdict given its fields (see ``CommandAnalysis.to_json_dict``)."""
    return {
        "command": fields["command"],
        "shell": fields["shell"],
        "parse_ok": fields["parse_ok"],
        "read_only": fields["read_only"],
        "concurrency_safe": fields["concurrency_safe"],
        "destructive": fields["destructive"],
        "subcommands": [s.text for s in fields["subcommands"]],
        "reasons": list(fields["reasons"]),
        "cd_targets": list(fields["cd_targets"]),
        "write_targets": list(fields["write_targets"]),
        "writes_unknown": fields["writes_unknown"],
        "env": dict(fields["env"]),
        "read_paths": list(fields["read_paths"]),
        "parts": [
            {
                "text": s.text,
                "name": s.name,
                "static_name": s.static_name,
                "env_names": list(s.env_names),
                "background": s.background,
                "writes": list(s.writes),
                "reads": list(s.reads),
                "recursive": s.recursive,
                "via": s.via,
            }
            for s in fields["subcommands"]
        ],
    }
