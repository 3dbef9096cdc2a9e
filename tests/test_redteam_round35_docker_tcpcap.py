"""Red team, round 35 (docker): the socket-buffer cap's arithmetic and its fail-closed write.

The container test (`test_redteam_round35_docker_budgets.py`) shows the cap holding on this host;
these check the parts a host may differ in without a daemon: an unreadable ``tcp_mem``, a kernel
without v1 socket accounting, and a cgroup file that does not keep what was written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.docker._tcpmem import TCP_LIMIT_FILE, cap_socket_memory, socket_memory_cap


def test_the_cap_is_a_sixteenth_of_the_hard_limit_or_a_small_fallback(tmp_path: Path) -> None:
    tcp_mem = tmp_path / "tcp_mem"
    tcp_mem.write_text("287913\t383885\t575826\n")
    assert socket_memory_cap(str(tcp_mem)) == 575826 * os.sysconf("SC_PAGE_SIZE") // 16
    tcp_mem.write_text("garbage\n")
    assert socket_memory_cap(str(tcp_mem)) == 64 << 20
    assert socket_memory_cap(str(tmp_path / "absent")) == 64 << 20
    tcp_mem.write_text("1 1 1\n")
    assert socket_memory_cap(str(tcp_mem)) == 1 << 20  # never below 1 MiB


def test_the_write_is_checked_and_a_kernel_without_the_file_is_left_alone(tmp_path: Path) -> None:
    with_file, without = tmp_path / "a", tmp_path / "b"
    with_file.mkdir()
    without.mkdir()
    (with_file / TCP_LIMIT_FILE).write_text("9223372036854771712\n")
    cap_socket_memory([str(with_file), str(without)], 1 << 20)
    assert (with_file / TCP_LIMIT_FILE).read_text() == str(1 << 20)
    assert not (without / TCP_LIMIT_FILE).exists()
    broken = tmp_path / "c"
    broken.mkdir()
    (broken / TCP_LIMIT_FILE).symlink_to("/dev/null")  # takes every write, reads back nothing
    with pytest.raises(OSError, match="kept ''"):  # the start fails, saying which file
        cap_socket_memory([str(broken)], 1 << 20)
