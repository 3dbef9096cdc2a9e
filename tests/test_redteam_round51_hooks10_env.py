"""Red team round 51 (hooks10): ``env`` read by the analysis' one reader in the hook code too.

Round 49's ``hook_shebang.env_prefix`` and ``hook_files``' own ``NAME=VALUE`` regex read ``env``
their own way beside the planner's ``env_args.read_env``. Where they differed: a ``-S`` string
with quotes or ``\\_``, an attached ``-S'…'`` word, an abbreviated ``--split-s`` could not be
read, so a hook script whose ``#!`` line is ``#!/usr/bin/env -S "bash" -e`` was read as neither
a shell nor a Python script and what it sources (``. ./tools/lib.sh``) went unread: a command's
``tools/lib.sh`` ran on the host, unrecorded (4 of 4 failed before). The other way, lines it
could not read recorded the whole workspace though ``env`` runs them plainly (``env --uns=FOO``,
``env -S'-u\\_FOO'``: 2 of 2 failed before). Now one reader; what it cannot read fails closed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files
from tests._hook_runs import run_hook_line

_MARK = "R51-HOOKS10-ENV"
_PY = shutil.which("python3.11") or ""  # a name saying 3.11: the runner's PYTHONSAFEPATH believed
_HOOK = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/run'



def _script_project(ws: Path, line: str) -> None:
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / "tools" / "lib.sh").write_text("true\n")
    script = ws / ".claude" / "hooks" / "run"
    script.write_text(f"{line}\n. ./tools/lib.sh\n")
    script.chmod(0o755)


@pytest.mark.parametrize(
    "line",
    [
        '#!/usr/bin/env -S "bash" -e',  # a quoted -S word
        "#!/usr/bin/env -S bash\\_-e",  # env's own word separator
        "#!/usr/bin/env -S'bash'",  # one word, quotes attached
        "#!/usr/bin/env --split-s=bash",  # an abbreviated long option
    ],
)
def test_a_shell_script_by_an_env_line_is_read_as_one(tmp_path: Path, line: str) -> None:
    ws = tmp_path / "ws"
    _script_project(ws, line)
    before = hook_files(ws, [_HOOK])
    (ws / "tools" / "lib.sh").write_text(f"echo {_MARK}\n")
    done = run_hook_line(ws, _HOOK)
    assert _MARK in done.stdout, (line, done.stdout, done.stderr)  # the premise: the host runs it
    assert compare_hook_files(before, hook_files(ws, [_HOOK])) is not None, f"tools/lib.sh unrecorded: {line}"


def test_an_env_line_that_cannot_be_read_records_the_tree(tmp_path: Path) -> None:
    """Fail closed: a ``${…}`` in a ``-S`` string (env's own variable) or a ``-C``."""
    for n, line in enumerate(('#!/usr/bin/env -S "bash ${X}"', "#!/usr/bin/env -C tools bash")):
        ws = tmp_path / f"ws{n}"
        _script_project(ws, line)
        record = hook_files(ws, [_HOOK])
        assert "." in record.files, (line, record)


@pytest.mark.skipif(not _PY, reason="needs python3.11 on PATH (a name saying 3.11+)")
def test_env_lines_env_runs_plainly_stay_narrow(tmp_path: Path) -> None:
    """``env --uns=FOO`` and ``env -S'-u\\_FOO'`` unset another variable: the runner's
    ``PYTHONSAFEPATH`` holds, the root's ``json/__init__.py`` does not run, and the tree is not
    recorded (the hook's own reader could not read them and recorded it)."""
    ws = tmp_path / "ws"
    (ws / "json").mkdir(parents=True)
    (ws / "json" / "fixture.json").write_text("{}\n")
    (ws / "data.json").write_text("{}\n")
    hooks = [f"env --uns=FOO {_PY} -m json.tool data.json", f"env -S'-u\\_FOO' {_PY} -m json.tool data.json"]
    records = [hook_files(ws, [hook]) for hook in hooks]
    assert [hook for hook, r in zip(hooks, records, strict=True) if "." in r.files] == []
    (ws / "json" / "__init__.py").write_text(f"print({_MARK!r})\n")
    done = run_hook_line(ws, " && ".join(hooks))
    assert done.returncode == 0 and _MARK not in done.stdout, (done.stdout, done.stderr)


def test_another_programs_name_value_operands_are_still_read(tmp_path: Path) -> None:
    """Guard (held before; the regex's deletion first lost it): ``systemd-run -E`` and ``chpst -e``
    pass ``NAME=VALUE`` to their program as its environment; not wrappers the reader knows, their
    operands are over-read as assignments, so ``lib`` is recorded."""
    (tmp_path / "lib").mkdir()
    for hook in ("systemd-run -E PYTHONPATH=lib python3 x.py", "chpst -e PYTHONPATH=lib python3 x.py"):
        assert "lib" in hook_files(tmp_path, [hook]).files, hook
