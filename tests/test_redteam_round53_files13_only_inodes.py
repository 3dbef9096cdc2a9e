"""Red team round 53 (files13): the walker's search of named paths ignored the masked files' inodes.

Round 43 made the walker never read a masked file's other name (a hard link): `GrepQuery.skip_inodes`
is handed to it for every walk. Its second mode, the search of named paths only (`query.only`: the
tracked files the ignore files hid, `_hidden_search`), built its link table without them, so a name
there that is a masked file's other name was read and its lines counted toward the 100,000-line
stop. Grep judges those names before (`visible_paths`), so only a name that became such a link
after that judgement reached it: defence in depth, the same rule for both modes now. Unknown
inodes (None: their search was refused) read no file with several names in either mode.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shellrt.tools import _grep_python
from shellrt.tools._search_types import GrepQuery


@pytest.mark.parametrize("known", [True, False], ids=["masked_inode", "inodes_unknown"])
def test_a_named_path_that_is_a_masked_files_other_name_is_not_read(tmp_path: Path, known: bool) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "ok.txt").write_text("hello\n")
    secret = ws / "secrets" / "key.txt"
    secret.write_text("TOKEN=hunter2\n")
    os.link(secret, ws / "copy.txt")
    st = secret.stat()
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        query = GrepQuery(
            pattern="hello|TOKEN",
            root=ws,
            root_fd=fd,
            only=("ok.txt", "copy.txt"),
            skip=("secrets",),
            skip_inodes=((st.st_dev, st.st_ino),) if known else None,
        )
        hits = _grep_python.python_search(query)
    finally:
        os.close(fd)
    assert "ok.txt" in hits, hits
    assert "copy.txt" not in hits, f"a masked file's other name was read: {hits['copy.txt'].lines}"
