"""Red team round 40 (trust3): files interpreters' option variables make them load at every start.

``NODE_OPTIONS=--require ~/dot/node/init.js`` (or ``--import``, ``--loader``) runs that file in every
node the operator starts (editors' language servers, npm, every CLI written in JS);
``JAVA_TOOL_OPTIONS=-javaagent:…jar`` / ``-agentpath:`` load it into every JVM (Gradle, IDEs);
``RUBYOPT=-r/…/x.rb`` requires it in every ruby; ``RUBYOPT=-I DIR`` and ``PERL5OPT=-IDIR`` put DIR
first on the module path, as ``RUBYLIB``/``PERL5LIB`` do. With the named place in the workspace,
each plant was kept and the file tools did not ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.supervisor.protect import protected_reason
from tests._plants import assert_tools_ask
from tests._round39_trust2 import plant_and_check, workspace

PLANTS = [
    "dot/node/init.js",
    "dot/node/hooks.mjs",
    "dot/java/agent.jar",
    "dot/java/libagent.so",
    "dot/ruby/boot.rb",
    "dot/rubylib/rubygems.rb",
    "dot/perllib/strict.pm",
]
KEPT = ["dot/node/other.js", "dot/rubylib/r40own.rb", "dot/perllib/R40Own.pm", "src/main.js"]


@pytest.mark.parametrize("backend", ["local", "bwrap"])
def test_files_interpreter_options_name_are_guarded(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(backend, tmp_path, "dot/node")
    d = ws / "dot"
    gem = tmp_path / "home" / ".gem/ruby/3.1.0/gems/rake-13.0/lib/rake.rb"  # a ruby library: names known
    gem.parent.mkdir(parents=True)
    gem.write_text("# the operator's\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_TRUST_STORE", raising=False)
    monkeypatch.setenv("NODE_OPTIONS", f"--max-old-space-size=4096 --require {d}/node/init.js --import={d}/node/hooks.mjs")
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-javaagent:{d}/java/agent.jar=x -agentpath:{d}/java/libagent.so")
    monkeypatch.setenv("RUBYOPT", f"-W0 -r{d}/ruby/boot.rb -I {d}/rubylib")
    monkeypatch.setenv("PERL5OPT", f"-I{d}/perllib -Mstrict")
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "// r40\n", backend=backend)
    assert_tools_ask(ws, PLANTS)
    assert not [rel for rel in KEPT if protected_reason(ws / rel)]
