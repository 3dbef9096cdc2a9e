"""The sandbox uid's account line (`sandbox._account`): copies of the account files with one line added.

A root caller's commands run under an uid the host's account files do not know;
every program that looks itself up then searched further NSS modules (~0.4 ms per
``bash -c true`` here). The holder's namespace shows these copies instead; the
escape suite checks what a command sees (``id -un``, read-only /etc/passwd).
"""

from __future__ import annotations

from pathlib import Path

from sandbox._account import NAME, account_files

UID = GID = 2_000_000_000


def _hosts(tmp_path: Path, passwd: str, group: str) -> tuple[Path, Path]:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(passwd)
    (etc / "group").write_text(group)
    return etc / "passwd", etc / "group"


def test_each_copy_is_the_host_file_plus_one_line_readable_by_all(tmp_path: Path) -> None:
    passwd, group = _hosts(tmp_path, "root:x:0:0:root:/root:/bin/bash\n", "root:x:0:\n")
    out = tmp_path / "out"
    out.mkdir()
    made = dict((host, copy) for copy, host in account_files(out, UID, GID, passwd=passwd, group=group))
    assert made[passwd].read_text() == (
        f"root:x:0:0:root:/root:/bin/bash\n{NAME}:x:{UID}:{GID}:shellrt sandbox:/tmp:/bin/sh\n"
    )
    assert made[group].read_text() == f"root:x:0:\n{NAME}:x:{GID}:\n"
    assert all(copy.stat().st_mode & 0o777 == 0o644 for copy in made.values())
    assert passwd.read_text() == "root:x:0:0:root:/root:/bin/bash\n"  # the host's file untouched


def test_an_id_the_host_knows_gets_no_copy(tmp_path: Path) -> None:
    passwd, group = _hosts(tmp_path, f"svc:x:{UID}:{GID}::/:/bin/sh\n", "root:x:0:\n")
    made = account_files(tmp_path, UID, GID, passwd=passwd, group=group)
    assert [host for _, host in made] == [group]


def test_a_name_the_host_uses_already_gets_the_id_appended(tmp_path: Path) -> None:
    passwd, group = _hosts(tmp_path, f"{NAME}:x:1234:1234::/:/bin/sh", "root:x:0:\n")
    made = dict((host, copy) for copy, host in account_files(tmp_path, UID, GID, passwd=passwd, group=group))
    lines = made[passwd].read_text().splitlines()
    assert lines == [
        f"{NAME}:x:1234:1234::/:/bin/sh",
        f"{NAME}-{UID}:x:{UID}:{GID}:shellrt sandbox:/tmp:/bin/sh",
    ]


def test_a_linked_or_missing_account_file_is_left_alone(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text("root:x:0:0:root:/root:/bin/bash\n")
    link = tmp_path / "passwd"
    link.symlink_to(real)
    assert account_files(tmp_path, UID, GID, passwd=link, group=tmp_path / "no-group") == []
