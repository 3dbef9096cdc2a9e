"""Red team round 27 (merge): ``SHELLRT_RAY_CONNECT_TIMEOUT`` was read with ``float`` at import.

``abc`` was a traceback importing ``shellrt.batch.ray_runner``; ``nan`` and ``inf`` were taken as
no bound at all and ``-5`` as an instant failure blamed on the cluster (round 27 iface2's Left).
It is now read when connecting: a bad value is a clear ``could not connect`` exit 2 naming the
variable and what to give. Real ``shellrt batch`` processes (the address refuses nothing: the
value is refused before any connection).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_batch_ray_connect import _batch


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-5", "0"])
def test_a_bad_connect_timeout_is_named_and_nothing_connects(tmp_path: Path, value: str) -> None:
    proc = _batch(tmp_path, "127.0.0.1:1", SHELLRT_RAY_CONNECT_TIMEOUT=value)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert b"SHELLRT_RAY_CONNECT_TIMEOUT=" in err and b"Traceback" not in err, err[-2000:]


def test_the_value_is_read_when_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    from shellrt.batch import ray_runner

    monkeypatch.setenv("SHELLRT_RAY_CONNECT_TIMEOUT", "7.5")
    assert ray_runner.connect_timeout_s() == 7.5
    monkeypatch.delenv("SHELLRT_RAY_CONNECT_TIMEOUT")
    assert ray_runner.connect_timeout_s() == ray_runner.CONNECT_TIMEOUT_S
