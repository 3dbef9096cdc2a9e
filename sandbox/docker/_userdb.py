"""The image's user database, checked before the container starts.

Starting a container makes the docker daemon itself read the image's ``/etc/passwd`` and
``/etc/group`` (for the create's ``user``, numeric ``0:0`` included: supplementary groups), by a
plain open. An image whose ``/etc/passwd`` is a FIFO (or a link to one) blocked that open for
ever: the start never returned, the session's start hung past any timeout (it runs in a worker
thread), and the container stayed ``Created`` with ``docker inspect`` and ``docker rm -f`` hanging
behind it until something wrote to the FIFO (red team round 18). So each file must be absent or,
followed through its links inside the container's root as the daemon does, a regular file; the
daemon answers this from the created container's root without opening anything
(``HEAD /containers/<id>/archive``).
"""

from __future__ import annotations

from typing import Any

import docker.utils

from sandbox.errors import BackendUnavailableError

__all__ = ["SYMLINK", "check_user_db", "path_stat"]

USER_DB = ("/etc/passwd", "/etc/group")

#: Go's os.FileMode type bits (what the daemon's path stat reports): dir, symlink, device, named
#: pipe, socket, char device, irregular. A regular file has none.
SYMLINK = 1 << 27
_NOT_REGULAR = (1 << 31) | SYMLINK | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)


def path_stat(client: Any, cid: str, path: str) -> dict[str, Any] | None:
    """The daemon's stat of ``path`` in the created container (not followed), None when absent."""
    res = client.api.head(client.api._url("/containers/{0}/archive", cid), params={"path": path})
    if res.status_code == 404:
        return None
    client.api._raise_for_status(res)
    header = res.headers.get("X-Docker-Container-Path-Stat")
    if not header:
        raise BackendUnavailableError(f"the docker daemon gave no stat of {path} in the image")
    stat: dict[str, Any] = docker.utils.decode_json_header(header)
    return stat


def check_user_db(client: Any, cid: str, image: str) -> None:
    """Refuse the image (before its start) unless its user database is absent or regular files."""
    for path in USER_DB:
        st = path_stat(client, cid, path)
        if st is not None and int(st.get("mode", 0)) & SYMLINK:
            target = str(st.get("linkTarget") or "")  # resolved inside the container's root
            st = path_stat(client, cid, target) if target.startswith("/") else {"mode": SYMLINK}
        if st is not None and int(st.get("mode", 0)) & _NOT_REGULAR:
            raise BackendUnavailableError(
                f"image {image!r}: {path} is not a regular file (mode {int(st.get('mode', 0)):#x}); the "
                "docker daemon reads it at every start and would block on a FIFO for ever: rebuild the "
                "image with a plain /etc/passwd and /etc/group"
            )
