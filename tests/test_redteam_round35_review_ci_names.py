"""Review of round 35 (hostenv): ordinary CI name values a hook needs were dropped.

Round 35 drops every inherited variable with a relative ``/``-containing value for host programs.
That took ``GITHUB_REPOSITORY=owner/name``, ``GITHUB_REF=refs/heads/main``, ``GH_REPO`` (what ``gh``
in a hook reads), GitLab's ``CI_PROJECT_PATH`` and branch names from every hook: a CI hook that
labels a pull request or reports a status lost its repository. These variables name a
repository or a ref, which no program reads as a file from the cwd: kept when the value has a
ref's shape (no ``.``/``..`` component, no leading ``/`` or ``~``, no blank); any other shape is
still judged as a path.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.permissions.hook_env import hook_env

_ORDINARY = {
    "GITHUB_REPOSITORY": "owner/name",
    "GITHUB_REF": "refs/heads/main",
    "GITHUB_HEAD_REF": "feature/x-1.2",
    "GITHUB_WORKFLOW_REF": "owner/name/.github/workflows/ci.yml@refs/heads/main",
    "GH_REPO": "owner/name",
    "CI_PROJECT_PATH": "group/sub/project",
    "CI_COMMIT_REF_NAME": "release/2026.12",
    "BUILD_SOURCEBRANCH": "refs/pull/7/merge",
}
_HOSTILE = {
    "GITHUB_REPOSITORY": "./plugin.so",
    "GITHUB_REF": "../x",
    "GITHUB_HEAD_REF": "a/../../x",
    "GH_REPO": "x/..",
    "GITHUB_BASE_REF": "~root/x",
    "CI_PROJECT_PATH": "a b/c",
    "BUILD_SOURCEBRANCH": "x/./y",
}


def test_ci_repository_and_ref_names_reach_hooks_path_shapes_do_not(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    env = hook_env({**base, **_ORDINARY}, [ws])
    lost = {name: value for name, value in _ORDINARY.items() if env.get(name) != value}
    hostile = hook_env({**base, **_HOSTILE, "CI_COMMIT_REF_NAME": f"{ws}/x"}, [ws])
    kept = {name: hostile[name] for name in (*_HOSTILE, "CI_COMMIT_REF_NAME") if name in hostile}
    assert not lost and not kept, f"ordinary names lost: {lost}; path shapes kept: {kept}"
