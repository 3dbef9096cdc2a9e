"""Red team round 38 (trust): Lua start-up files that load a file of a dotfiles repository.

Round 37 read shell, tmux, vim and fish start-up files for what they source; its "Left": Lua's
``dofile``. neovim's ``~/.config/nvim/init.lua`` and wezterm's ``~/.wezterm.lua`` (run at every
editor or terminal start) commonly load the rest of the config from a dotfiles repository:
``dofile(os.getenv("HOME") .. "/dotfiles/nvim/keys.lua")``, ``dofile("/…/x.lua")``,
``vim.cmd("source ~/dotfiles/vim/extra.vim")``. With that repository as the workspace, a command
rewrote the loaded file: the operator's next ``nvim`` ran it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._plants import assert_tools_ask, plant_and_check

PLANTS = ["nvim/keys.lua", "nvim/abs.lua", "vim/extra.vim", "wez/colors.lua", "nvim/env.lua"]
KEPT = ["README.md", "nvim/notes.lua"]


def test_files_lua_start_up_files_load_are_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "home"
    (home / ".config" / "nvim").mkdir(parents=True)
    ws = home / "dotfiles"
    ws.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("R38_DOT", str(ws))
    for name in ("XDG_CONFIG_HOME", "SHELLRT_TRUST_STORE"):
        monkeypatch.delenv(name, raising=False)
    (home / ".config" / "nvim" / "init.lua").write_text(
        'dofile(os.getenv("HOME") .. "/dotfiles/nvim/keys.lua")\n'
        f'dofile("{ws}/nvim/abs.lua")\n'
        'vim.cmd("source ~/dotfiles/vim/extra.vim")\n'
        "dofile(vim.env.R38_DOT .. '/nvim/env.lua')\n"
        "-- dofile('~/dotfiles/nvim/notes.lua') is a comment\n"
    )
    (home / ".wezterm.lua").write_text("local c = dofile(os.getenv('HOME') .. '/dotfiles/wez/colors.lua')\n")
    plant_and_check(ws, tmp_path / "s", PLANTS, KEPT, "-- r38\n")
    assert_tools_ask(ws, PLANTS)
