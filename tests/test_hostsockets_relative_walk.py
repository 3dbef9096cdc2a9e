"""Relative-name sockets are looked up in one walk of /proc, however many there are.

`sandbox._hostsockets.host_socket_paths` finds a socket listed by a relative name through the
processes holding it (red team round 14). Looked up one at a time, each new name walked every
process's descriptors: a command sharing the host's network namespace that bound thousands of
relative names made the host walk /proc thousands of times before the next command. The walk
count is what is asserted (not time): it failed before (one walk per name). Since round 54 the
kernel says which file each socket is bound to (`sandbox._boundfile`) and no descriptor is read: an
inode no namespace has costs no walk at all; where the kernel cannot be asked, one walk, as here.
"""

from __future__ import annotations

import os

import pytest

from sandbox import _hostsockets, _relnames

HEADER = b"Num       RefCount Protocol Flags    Type St Inode Path\n"


def _table(names: int, first_inode: int) -> bytes:
    rows = [
        f"0000000000000000: 00000002 00000000 00010000 0001 01 {first_inode + i} rel-{i}.sock\n".encode()
        for i in range(names)
    ]
    return HEADER + b"".join(rows)


def test_many_relative_names_cost_one_walk_of_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    walks = []
    listdir = os.listdir

    def counting(path: str = ".") -> list[str]:
        if path == "/proc":
            walks.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counting)
    monkeypatch.setattr(_relnames, "bound_files", lambda *_args: None)  # no unix_diag: the walk
    _relnames._RELATIVE.clear()
    # Inodes no process holds: nothing is found, every name is looked up.
    assert _hostsockets.host_socket_paths(_table(200, 4_000_000_000)) == []
    assert len(walks) == 1, f"{len(walks)} walks of /proc for 200 relative names"
    # Looked up already: no walk at all for the same table again.
    assert _hostsockets.host_socket_paths(_table(200, 4_000_000_000)) == []
    assert len(walks) == 1


def test_inodes_no_namespace_has_cost_no_walk_of_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``unix_diag``: a socket that is gone is told by the kernel, no process looked at."""
    walks = []
    listdir = os.listdir

    def counting(path: str = ".") -> list[str]:
        if path == "/proc":
            walks.append(path)
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counting)
    _relnames._RELATIVE.clear()
    assert _hostsockets.host_socket_paths(_table(200, 4_000_000_000)) == []
    assert len(walks) <= 1, f"{len(walks)} walks of /proc for 200 relative names"
