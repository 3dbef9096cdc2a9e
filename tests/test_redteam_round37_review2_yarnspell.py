"""Red team round 37 (review2): spellings of a Yarn config the line parser did not read.

Round 37 trust guards the files a project's Yarn config names (``yarnPath``, Yarn 1's
``yarn-path``, ``plugins``), read by a line parser (`_cd_loads.yarn_loads`). YAML has other
spellings of the same keys, each read by Yarn (js-yaml; each checked here with PyYAML to mean the
same mapping): a quoted key, a space before the colon, the value on the next line or as a folded
scalar, a flow mapping (a JSON ``.yarnrc.yml``), a flow list of plugins, and plugin paths without a
``.js`` ending (Yarn ``require``s any file). Each named file was left unguarded: a command could
rewrite it and the operator's next ``yarn`` ran it.
"""

from __future__ import annotations

import os

import pytest

from shellrt.supervisor._cd_loads import yarn_loads
from tests._timing import cpu_seconds

_BERRY = {
    "quoted key": '"yarnPath": tools/a.cjs\n',
    "space before colon": "yarnPath : tools/a.cjs\n",
    "next line": "yarnPath:\n  tools/a.cjs\n",
    "folded": "yarnPath: >-\n  tools/a.cjs\n",
    "flow mapping": '{"yarnPath": "tools/a.cjs", "nodeLinker": "node-modules"}\n',
    "flow plugins": "plugins: [tools/a.cjs]\n",
    "flow plugin objects": "plugins: [{path: tools/a.cjs, spec: '@x/plugin-y'}]\n",
    "plugin path without .js": "plugins:\n  - path: tools/a.cjs.txt\n    spec: '@x/y'\n",
    "bare plugin without .js": "plugins:\n  - tools/a.cjs.txt\n",
    "quoted plugins key": '"plugins":\n  - "tools/a.cjs"\n',
}


@pytest.mark.parametrize("how", list(_BERRY))
def test_each_yaml_spelling_of_a_yarn_config_is_read(how: str) -> None:
    found = yarn_loads("/proj", _BERRY[how])
    wanted = "tools/a.cjs.txt" if "without .js" in how else "tools/a.cjs"
    assert os.path.join("/proj", wanted) in found, found


def test_yarn1_quoted_key() -> None:
    assert "/proj/tools/y.js" in yarn_loads("/proj", '"yarn-path" "./tools/y.js"\n')


def test_the_spellings_read_before_still_are_and_specs_are_not_files() -> None:
    text = (
        "nodeLinker: node-modules\n"
        "yarnPath: .yarn/releases/yarn-4.1.cjs  # pinned\n"
        "npmRegistryServer: 'https://registry.example'\n"
        "plugins:\n"
        "  - path: .yarn/plugins/@yarnpkg/plugin-x.cjs\n"
        '    spec: "@yarnpkg/plugin-x"\n'
        "  - checksum: abc123\n"
        "    path: tools/p.cjs\n"
        "    spec: 'https://example.invalid/p.js'\n"
        "enableTelemetry: false\n"
    )
    found = yarn_loads("/proj", text)
    assert "/proj/.yarn/releases/yarn-4.1.cjs" in found
    assert "/proj/.yarn/plugins/@yarnpkg/plugin-x.cjs" in found and "/proj/tools/p.cjs" in found
    assert not any("registry" in f or "abc123" in f or "example.invalid" in f or "false" in f for f in found), found


@pytest.mark.parametrize("text", ["[" + "a," * (1 << 19), "plugins:\n" + "  - a\n" * 170_000, "{" + "yarnPath: x, " * 80_000])
def test_a_megabyte_of_config_is_read_in_bounded_time(text: str) -> None:
    start = cpu_seconds()  # CPU, not wall: 1.1-1.6 s of wall at load 6 for 0.23-0.36 s of CPU (round 49)
    found = yarn_loads("/proj", text[: 1 << 20])
    assert cpu_seconds() - start < 4.0 and len(found) <= 256  # >= 10x the CPU it costs; a quadratic: hours
