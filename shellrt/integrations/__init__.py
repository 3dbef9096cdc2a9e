"""Adapters that make shellrt the sandbox of other harnesses.

Each adapter lives in its own module and imports its harness only there
(``shellrt.integrations.inspect`` needs the ``inspect`` extra); importing this
package imports none of them.
"""

from __future__ import annotations

__all__: list[str] = []
