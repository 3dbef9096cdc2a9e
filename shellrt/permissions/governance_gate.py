"""The gate `build_governance` wires: `RulesGate` that keeps the workspace's trust record current.

Apart from `governance` so that a reader of the settings alone (`governed_settings`) does not
load the gate's engine and, with it, the command analysis.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shellrt.permissions.gate import RulesGate
from shellrt.permissions.trust import WorkspaceTrust, file_digest, refresh_recorded_file, trust_store_path

__all__ = ["LOCAL_SETTINGS_REL", "TrustKeepingGate"]

#: The project's local settings, where "allow always in this project" answers go.
LOCAL_SETTINGS_REL = ".shellrt/settings.local.json"


class TrustKeepingGate(RulesGate):
    """Re-records the digest of the project's local settings after saving an answer there,
    so the operator's own "allow always in this project" does not untrust the file."""

    trust: WorkspaceTrust | None = None
    #: Told about each save, so the supervisor's protected-files check keeps it (set by the runtime).
    on_saved: Callable[[Path], None] | None = None

    def _record_anchors(
        self, file: Path, texts: list[str], files: frozenset[tuple[str, str]], chain: list[str]
    ) -> None:
        self.anchors_written = None
        super()._record_anchors(file, texts, files, chain)
        if self.anchors_written is not None and self.on_saved is not None:
            self.on_saved(self.anchors_written)  # shellrt's own record of what saved rules allowed

    def _remember(
        self,
        scope: str,
        rules: list[str],
        chain: list[str],
        dirs: frozenset[str] | None = None,
        files: frozenset[tuple[str, str]] | None = None,
    ) -> None:
        before = self.local_settings_digest
        super()._remember(scope, rules, chain, dirs, files)
        written = self.local_settings_digest
        # Only what shellrt itself just wrote is vouched for: a failed save (the file was planted,
        # unparsable, a link) must neither be kept by the protected-files check nor trusted.
        if scope == "project" and self.local_settings is not None and written != before:
            if self.on_saved is not None and file_digest(self.local_settings) == written:
                self.on_saved(self.local_settings)  # swapped since the write: left to the check
            refreshed = (
                self.trust is not None
                and written is not None
                and refresh_recorded_file(self.trust, LOCAL_SETTINGS_REL, written)
            )
            if refreshed and self.trust is not None and self.on_saved is not None:
                self.on_saved(self.trust.store or trust_store_path())  # shellrt's own record
