"""Red team round 35 (runtime): a list option of the Runtime given as one string is refused.

``Runtime(..., deny="Bash")`` (a ``str`` is a ``Sequence[str]`` to Python) was taken letter by letter:
rules ``B``, ``a``, ``s``, ``h``, and the deny the caller meant was lost. In ``bypassPermissions``
mode the command it should have refused ran. The list options (rules, domains, masked paths,
settings files) now refuse a bare string, saying to pass a list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from tests.test_server_jsonl import bash, text_of


@pytest.mark.parametrize(
    "option",
    [{"deny": "Bash"}, {"denied_domains": "example.org"}, {"masked_paths": "secret"}, {"allow": b"Bash"}],
)
def test_a_bare_string_for_a_list_option_is_refused(tmp_path: Path, option: dict[str, Any]) -> None:
    """Failed before: 4 of 4 started; with deny='Bash' in bypassPermissions ``touch made`` ran."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret").write_text("x")

    async def scenario() -> str:
        try:
            async with shellrt.Runtime(
                ws, "local", session_dir=tmp_path / "s", mode="bypassPermissions", **option
            ) as rt:
                return text_of((await rt.run([bash("c1", "touch made")]))["content"][0])
        except TypeError as exc:
            return f"refused: {exc}"

    text = anyio.run(scenario)
    name = next(iter(option))
    assert text.startswith("refused:") and name in text and "list" in text, text
    assert not (ws / "made").exists()
