"""The session's workspace on the host: copied in (copy mode) and exported back out.

Blocking functions (the backend runs them in a worker thread); the docker SDK
is used only for the export's archive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

import docker

from sandbox._anchoredcopy import copy_tree
from sandbox._deeptree import check_copy_depth
from sandbox._workspace_copy import hidden_aliases, left_out
from sandbox.docker._untar import MAX_EXPORT_BYTES, ChunkReader, Held, extract

__all__ = ["copy_in", "denied_on_host", "export_workspace"]


def copy_in(
    workspace: Path | str,
    dest: str,
    read_denied: Iterable[Path | str],
    user: tuple[int, int],
    *,
    into_existing: bool = False,
) -> str:
    """Copy the host workspace into a private host directory that only the container mounts.

    Why not ``put_archive`` into a volume: docker never applies an archive's
    metadata to the destination directory itself, and with every capability
    dropped nothing inside the container may chown it, so the sandbox user
    could not write at the workspace root. A private copy (under a 0700
    directory, owned by the sandbox user) keeps the host repository
    untouched just the same. Read-denied paths are left out of the copy.
    """
    uid, gid = user
    root = os.path.abspath(workspace)
    denied = {os.path.abspath(p) for p in read_denied}
    if any(root == d or root.startswith(d.rstrip("/") + "/") for d in denied):
        denied.add(root)  # the whole workspace is read-denied: copy nothing
    # Other names of a denied file (a hard link made before the rule, or below a denied
    # directory): the copy would show its bytes under the harmless name (red team round 13).
    # Bounded like bind mode's search (`SandboxExecError` past it).
    aliased = frozenset() if root in denied else hidden_aliases(root, denied)

    def ignore(directory: str, names: list[str]) -> list[str]:
        if root in denied:
            return names
        return left_out(os.path.abspath(directory), names, denied, aliased)

    if root not in denied:
        check_copy_depth(root)  # a tree deeper than a copy is meant for is refused (round 11)
    owner = (uid, gid) if os.geteuid() == 0 and (uid, gid) != (0, 0) else None
    # By descriptors: a name another process swaps for a symlink after the listing is left out,
    # never followed as the host's user (red team round 14; copytree opened it by path).
    copy_tree(root, dest, ignore=ignore, aliased=aliased, owner=owner, into_existing=into_existing)
    return dest


def denied_on_host(
    dest: Path,
    read_denied: Iterable[Path | str] = (),
    write_denied: Iterable[Path | str] = (),
    refuse: Callable[[str], str | None] | None = None,
) -> Held:
    """What an export into ``dest`` must not write: a path the policy denies reading or writing
    (each as given and as its real path), at, below or (for anything but a directory) above it —
    a file replacing a directory would remove the denied path with it — and any file, link or
    special file ``refuse`` gives a reason for (the caller's protected files, judged on the path
    below ``dest``)."""
    base = os.path.realpath(dest)
    rules: list[tuple[str, str]] = []
    for paths, what in ((read_denied, "read-denied"), (write_denied, "write-denied")):
        for p in paths:
            for form in dict.fromkeys((os.path.abspath(p), os.path.realpath(p))):
                rules.append((form.rstrip("/") or "/", what))

    def held(parts: list[str], is_dir: bool) -> str | None:
        path = os.path.join(base, *parts)
        for denied, what in rules:
            if path == denied or path.startswith(denied + "/"):
                return f"a {what} path of the host ({denied}): the host's own is kept"
            if not is_dir and denied.startswith(path + "/"):
                return f"it would replace a directory holding a {what} path of the host ({denied})"
        # A directory is obeyed by nothing (a ``.git`` directory is every repository's): its files are judged.
        return refuse("/".join(parts)) if refuse is not None and not is_dir else None

    return held


def _close_archive(stream: Iterable[bytes]) -> None:
    """Close the HTTP response below the SDK's archive generator (its local ``response``): left
    open, dockerd went on writing a refused archive (a sparse file's 100 GB of zeros) into a
    connection no one read, and the container's removal waited on it until its timeout (red
    team round 25). Closing the generator alone does not close the connection."""
    frame = getattr(stream, "gi_frame", None)
    response = frame.f_locals.get("response") if frame is not None else None
    close = getattr(response, "close", None)
    if callable(close):
        close()
    end = getattr(stream, "close", None)
    if callable(end):
        end()


def export_workspace(
    client: docker.DockerClient,
    cid: str,
    container_workspace: str,
    dest: Path,
    *,
    max_bytes: int = MAX_EXPORT_BYTES,
    held: Held | None = None,
) -> None:
    """Copy the container's workspace out to ``dest`` (created if missing; files there are overwritten).

    The archive comes from an untrusted container (and docker's walk of it can be raced):
    it is streamed, at most ``max_bytes``, into `extract`, which creates every entry through
    directory fds anchored below ``dest`` and refuses what would leave it (`WorkspaceExportError`).
    ``held`` (`denied_on_host`) keeps what must not be written on the host.
    """
    dest.mkdir(parents=True, exist_ok=True)
    cw = container_workspace.rstrip("/")
    top = PurePosixPath(cw).name

    def rename(name: str) -> str | None:
        for prefix in (f"{top}/", "./"):
            if name.startswith(prefix):
                name = name[len(prefix) :]
        return None if name in ("", ".", top) else name

    stream, _ = client.api.get_archive(cid, cw + "/.")
    dest_fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        extract(ChunkReader(iter(stream), max_bytes), dest_fd, rename, held=held, max_copy_bytes=max_bytes)
    finally:
        os.close(dest_fd)
        _close_archive(stream)
