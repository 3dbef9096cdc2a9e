"""Red team round 13, Ray: a shipped file's name still ended the whole run.

Round 10 made every malformed payload of a Ray node an error result for its task. The names of
shipped files were checked for ``..``, ``.``, empty parts and absolute paths only, and the driver
then wrote them: a name 1,500 directories deep made ``Path.mkdir(parents=True)`` recurse per
level (``RecursionError``), a NUL or a lone surrogate in a name raised ``ValueError`` from the
path functions. Both came out of the receive loop, so one node (escaped, or of another version)
ended the batch and every other task's result was lost. Names are now checked (no NUL, each
part at most 255 bytes of UTF-8, at most 256 parts), parents are made one by one, and any
fault writing them is an error result for that task.

No cluster is needed: the payload goes through the driver's real receive path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_redteam_round10_docker_ray import _receive, _result

_NAMES = {
    "deep": "/".join(["a"] * 1500),
    "nul": "a\0b",
    "surrogate": "a\udcffb/\ud800",
    "long-part": "x" * 300,
}


@pytest.mark.parametrize("case", sorted(_NAMES))
def test_a_hostile_shipped_name_is_an_error_result(tmp_path: Path, case: str) -> None:
    name = _NAMES[case]
    result = _receive(tmp_path, {"result": _result([name, "ok.txt"]), "files": {name: b"x", "ok.txt": b"y"}})
    assert result.id == "a" and result.status == "error"
    assert "node nnnnnnnnnnnn" in (result.error or "")
    assert not (tmp_path / "artifacts" / "a" / "files" / "ok.txt").exists()  # checked whole first


def test_a_deep_but_sound_name_is_written(tmp_path: Path) -> None:
    name = "/".join(["d"] * 200) + "/f.txt"
    result = _receive(tmp_path, {"result": _result([name]), "files": {name: b"deep\n"}})
    assert result.status == "ok", result.error
    assert (tmp_path / "artifacts" / "a" / "files" / name).read_bytes() == b"deep\n"
