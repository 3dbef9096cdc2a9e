"""Red team round 10 (known gap of round 9), batch: an untrusted task file chose its docker image.

``image`` was no widening key: a task file someone else wrote could name any image on the
operator's daemon (a private one with baked-in keys, a build cache, an image whose ``/bin/sh``
is hostile: it runs the executor as container root) and print its files into the results. A
task naming an image is now refused unless the operator allows that image (``--allow-image``,
``TaskFloor.allowed_images``) or every backend key (``--allow-task-backend-keys``).

Real docker through the real ``shellrt batch run`` (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shellrt.batch import TaskFloor, TaskRefused
from shellrt.batch.tasks import Task
from tests._docker_support import BUSYBOX, build_image, require_docker
from tests.test_batch_floor8 import _cli

pytestmark = [pytest.mark.docker]

PRIVATE = "shellrt-test-rt10-private"


def _build_private() -> None:
    dockerfile = f"FROM {BUSYBOX}\nRUN echo operator-deploy-key > /deploy-key\n"
    build_image(PRIVATE, dockerfile)


def test_a_task_cannot_pick_a_private_image_of_the_daemon(tmp_path: Path) -> None:
    require_docker()
    _build_private()
    task: dict[str, Any] = {
        "id": "peek",
        "sandbox": {"type": "docker", "image": PRIVATE, "reuse": "never"},
        "commands": ["cat /deploy-key"],
    }
    code, err, results = _cli(tmp_path, [task], "--sandbox", "docker")
    assert code == 1 and results == {}, err
    assert f"task peek: names docker image '{PRIVATE}'" in err and "--allow-image" in err
    # Allowed by name: it runs (the attack was real: the image's file reaches the results).
    code, err, results = _cli(tmp_path, [task], "--sandbox", "docker", "--allow-image", PRIVATE)
    assert code == 0, err
    assert "operator-deploy-key" in results["peek"]["commands"][0]["preview"]


def test_the_floor_allows_the_default_and_listed_images_only() -> None:
    def docker_task(**backend: object) -> Task:
        return Task.model_validate({"id": "t", "sandbox": {"type": "docker", **backend}, "commands": ["x"]})

    floor = TaskFloor(sandbox="docker", allowed_images=(BUSYBOX,))
    floor.apply(docker_task())  # the default image: the operator's config
    floor.apply(docker_task(image=BUSYBOX))
    with pytest.raises(TaskRefused, match="--allow-image"):
        floor.apply(docker_task(image="registry.internal/secret:latest"))
    TaskFloor.trusting().apply(docker_task(image="registry.internal/secret:latest"))
