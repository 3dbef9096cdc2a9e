"""Red team, round 42 (analysis5): a build, task or container tool no table describes loads a file
the same command wrote.

Round 39-41 named what each runner finds by itself in a table (`written_places._FINDS`: pytest's
``conftest.py``, npm's ``package.json``, meson, bazel, nix). Every tool outside it passed: ``docker
build`` after a written ``Dockerfile`` (round 41's Left), ``podman build``, ``docker compose up``, ``pdm``,
``rye``, ``pixi``, ``corepack yarn``, ``ant``, ``sbt``, ``mix``, ``stack``, ``cabal``, ``zig build``, ``swift
build``, ``scons``, ``ninja``, ``vagrant``, ``earthly``, ``fab``, ``doit``, ``snakemake``, ``gulp``,
``grunt``, ``cpanm``, ``autoreconf``, ``lefthook``, ``R CMD check``. Each ran past ``Bash(rm:*)`` in
``bypassPermissions``; ``q`` holds ``/bin/rm`` under a hidden name and the written file runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    "printf 'FROM alpine\\nCOPY q /q\\nRUN /q -rf /x\\n' > Dockerfile; docker build -t a .",
    "printf 'RUN ./q x' > Containerfile; podman build .", "printf 'x' > compose.yaml; docker compose up",
    "printf 'import os' > conftest.py; pdm run pytest", "printf 'import os' > conftest.py; rye test",
    "printf 'x' > pixi.toml; pixi run test",
    "printf '{\"scripts\":{\"test\":\"./q x\"}}' > package.json; corepack yarn test",
    "printf 'x' > build.xml; ant", "printf 'x' > build.sbt; sbt test", "printf 'x' > mix.exs; mix test",
    "printf 'x' > stack.yaml; stack build", "printf 'x' > Setup.hs; cabal build", "printf 'x' > build.zig; zig build",
    "printf 'x' > Package.swift; swift build", "printf 'x' > SConstruct; scons", "printf 'x' > build.ninja; ninja",
    "printf 'x' > Vagrantfile; vagrant up", "printf 'x' > Earthfile; earthly +t", "printf 'x' > fabfile.py; fab t",
    "printf 'x' > dodo.py; doit", "printf 'x' > Snakefile; snakemake", "printf 'x' > gulpfile.js; gulp",
    "printf 'x' > Gruntfile.js; grunt", "printf 'x' > Makefile.PL; cpanm .", "printf 'x' > configure.ac; autoreconf -i",
    "printf 'x' > lefthook.yml; lefthook run pre-commit", "printf 'x' > DESCRIPTION; R CMD check .",
    "printf 'x' > build.sbt; timeout 60 sbt test", "printf 'x' > build.sbt; sudo sbt test",
]]
KEPT = [
    "echo x > f; git add f; git commit -m 'add f'", "npm ci; npm test", "cp a.txt b.txt; ls", "mkdir -p out && ls out",
    "echo hi > notes.txt; timeout 5 ls", "echo 1 > pidfile; kill -0 1", "docker ps", "make", "sbt test",
    "docker build -t a . 2>/dev/null", "echo x > out.txt; cat out.txt",
]


async def test_a_tool_with_no_table_beside_a_named_write_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
