"""Round 27 (mend): shellrt's own state is masked and refused by one function, for both callers.

Round 26 left two mechanisms side by side (`trust_paths.record_dir_masks`/`state_dir_masks` and
`session_mask.session_dir_masks`); ``shellrt run`` joined them deduplicated, the `Runtime` not. Now
`session_mask.own_state_masks` gives the masks (one per realpath, first spelling kept, in a stable
order) and refuses the roots that cannot be masked. No sandbox is started: the paths only.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.runtime.session_mask import own_state_masks


def test_one_function_masks_each_own_directory_once_and_refuses_what_it_cannot_mask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "ws").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(home)  # the root given through a symlink: two spellings of every path below it
    for name in [n for n in os.environ if n.startswith(("XDG_", "SHELLRT_"))]:  # the defaults under HOME
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(link))
    policy = SandboxPolicy(workspace=home / "ws", writable_roots=(link,))
    for session_dir in (None, home / "sessions-of-mine" / "s1"):
        masks = own_state_masks(policy, session_dir)
        real = [os.path.realpath(p) for p in masks]
        assert len(real) == len(set(real)), masks  # one per realpath
        assert masks == own_state_masks(policy, session_dir)  # stable
        for own in (".config/shellrt", ".local/state/shellrt", ".cache/shellrt"):
            assert str(home / own) in real, (own, masks)
            assert (home / own).is_dir()  # made first: a mask covers what exists
    state = home / ".local" / "state" / "shellrt"
    for root, why in (
        (home / ".config" / "shellrt", "own configuration directory"),
        (link / ".config" / "shellrt", "own configuration directory"),
        (state, "own state directory"),
        (state / "inflight", "own state directory"),
    ):
        root.mkdir(parents=True, exist_ok=True)
        refused = SandboxPolicy(workspace=home / "ws", writable_roots=(root,))
        for session_dir in (None, tmp_path / "s2"):
            with pytest.raises(ValueError, match=why):
                own_state_masks(refused, session_dir)
