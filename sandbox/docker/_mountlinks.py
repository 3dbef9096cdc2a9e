"""shellrt's mount points in the image: never through the image's own symbolic links.

docker (runc) makes every mount's destination in the container's root, creating what is missing
as root, and follows the image's symbolic links on the way (inside the container's root, which
includes the mounts made before: the bind-mounted workspace among them). An image whose
``/.shellrt-tmp`` was a link to ``/workspace/deep/er`` had runc make ``deep/er/0``-``15`` as host
root in the caller's bind-mounted directory, where its owner cannot remove them (red team round
33). So, before the start, each destination is walked from the top through the created
container's root (``HEAD /containers/<id>/archive``, nothing opened): a component the image holds
as a link is refused; one it lacks ends the walk (runc makes the rest as plain directories), and
so does the workspace (its content is the host's, pinned and checked apart).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from sandbox.docker._shown import shown
from sandbox.docker._userdb import SYMLINK, path_stat
from sandbox.errors import BackendUnavailableError

__all__ = ["check_mount_points"]

#: runc's own tmpfs: nothing of the image below it is seen.
_RUNC_DEV = PurePosixPath("/dev")


#: (image id, destinations, workspace) found free of links: an image's content never changes under
#: its id, and a created container's writable layer is empty, so one walk per process serves every
#: later session of that image (each walk costs ~5 daemon round trips, 25-70 ms here under load).
_checked: set[tuple[str, frozenset[str], str]] = set()


def check_mount_points(
    client: Any, cid: str, image: str, image_id: str, destinations: Iterable[str], workspace: str
) -> None:
    """Refuse (`BackendUnavailableError`) a created container whose image (``image_id``) holds a
    symbolic link on the way to one of ``destinations``, ``workspace`` included (not below it)."""
    dests = frozenset(destinations)
    key = (image_id, dests, workspace)
    if image_id and key in _checked:
        return
    ws = PurePosixPath(workspace)
    known: dict[PurePosixPath, bool] = {}  # component -> present in the image (a plain entry)
    for dest in sorted(dests):
        path = PurePosixPath(dest)
        if path == _RUNC_DEV or _RUNC_DEV in path.parents:
            continue
        for step in [*reversed(path.parents), path][1:]:  # "/" itself is the root
            if step not in known:
                st = path_stat(client, cid, str(step))
                if st is not None and int(st.get("mode", 0)) & SYMLINK:
                    raise BackendUnavailableError(
                        f"image {image!r}: {step} is a symbolic link (to {shown(str(st.get('linkTarget') or '?')[:200])}), "
                        f"on the way to shellrt's mount point {dest}; docker would make that mount point "
                        "through it, as root, wherever it leads (the bind-mounted workspace included): "
                        "rebuild the image without it"
                    )
                known[step] = st is not None
            if not known[step] or step == ws or ws in step.parents:
                break
    if image_id:
        _checked.add(key)
