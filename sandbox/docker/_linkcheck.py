"""Every name an exported tree gives its entries through its own symbolic links, judged.

The copy-back (`sandbox.docker._untar`) holds back what a later program on the host would obey,
judging each member by its own name; but a link it creates is a second name for everything below
its target. ``evil/settings.json`` (harmless) and ``.claude -> evil`` (a link that stays inside)
made the host's ``.claude/settings.json`` the command's file: an agent started there obeys its
hooks (red team round 26). So once the archive is extracted, each link is judged under every name
it gives what is below its target on disk (the archive's entries and what the host already had in
the destination; the target resolved through the archive's links, lexically, as
`_link_stays_inside` allowed them), and a link that gives one a held name is removed.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from sandbox.confine import open_dir_beneath

__all__ = ["MAX_ALIAS_CHECKS", "Lister", "aliased_links", "disk_lister", "names_lister", "remove_link"]

#: Links followed to resolve one (the kernel's own bound on a path's links).
_MAX_HOPS = 40
#: Names judged through links in one export: past it every link not yet judged is refused (fails
#: closed). A thousand links to the root of a million-entry tree would be 1e9 checks, and the
#: caller's `protected_reason` takes ~0.1 ms each: 200,000 are ~20 s at most.
MAX_ALIAS_CHECKS = 200_000


def _resolve(parts: list[str], links: Mapping[str, str]) -> list[str] | None:
    """``parts`` with every prefix that is one of the archive's ``links`` replaced by its target,
    until none is; None for a loop, a chain past `_MAX_HOPS` or a target that climbs out."""
    path, i, hops = list(parts), 0, 0
    while i < len(path):
        target = links.get("/".join(path[: i + 1]))
        if target is None:
            i += 1
            continue
        hops += 1
        if hops > _MAX_HOPS:
            return None
        steps = [p for p in target.split("/") if p not in ("", ".")]
        base = path[:i]
        while steps and steps[0] == "..":
            if not base:
                return None
            base, steps = base[:-1], steps[1:]
        if ".." in steps:
            return None
        path, i = base + steps + path[i + 1 :], 0  # the new prefix may hold links: walk it again
    return path


#: What is below a directory (its parts): ``(name relative to it, is a directory)``, at any depth.
Lister = Callable[[list[str]], Iterator[tuple[str, bool]]]


def names_lister(entries: Iterable[str], dirs: Collection[str]) -> Lister:
    """A `Lister` over known names (``entries``; ``dirs`` the directories among them)."""
    names = sorted(entries)

    def below(parts: list[str]) -> Iterator[tuple[str, bool]]:
        prefix = "/".join(parts) + "/" if parts else ""
        for entry in names[bisect.bisect_left(names, prefix) :]:
            if not entry.startswith(prefix):
                break
            yield entry[len(prefix) :], entry in dirs

    return below


def disk_lister(root: int) -> Lister:
    """A `Lister` of what is on disk below the directory ``root``: the archive's entries and what the
    host already had there (an export into an existing tree), never through a link (a link on the
    way to the directory raises `OSError`; a missing one or a file has nothing below it)."""

    def below(parts: list[str]) -> Iterator[tuple[str, bool]]:
        try:
            top = open_dir_beneath(root, parts)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            first = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=top)
        finally:
            os.close(top)
        stack = [(first, "")]
        try:
            while stack:
                fd, rel = stack.pop()
                try:
                    with os.scandir(fd) as listing:
                        for entry in listing:
                            name, is_dir = rel + entry.name, entry.is_dir(follow_symlinks=False)
                            yield name, is_dir
                            if is_dir:
                                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                                stack.append((os.open(entry.name, flags, dir_fd=fd), name + "/"))
                finally:
                    os.close(fd)
        finally:
            for fd, _ in stack:
                os.close(fd)

    return below


def aliased_links(
    links: Mapping[str, str],
    below: Lister,
    held: Callable[[list[str], bool], str | None],
    *,
    max_checks: int = MAX_ALIAS_CHECKS,
) -> list[tuple[str, str]]:
    """``(link, why)`` for each of ``links`` (name -> target) through which something ``below`` its
    target gets a name ``held`` refuses, or whose target cannot be judged (fails closed)."""
    found: list[tuple[str, str]] = []
    checks = 0
    for link in links:
        resolved = _resolve(link.split("/"), links)
        if resolved is None:
            found.append((link, "a symbolic link in a loop or a chain too long to judge"))
            continue
        try:
            for rel, is_dir in below(resolved):
                checks += 1
                if checks > max_checks:
                    found.append((link, f"more than {max_checks} names through symbolic links to judge"))
                    break
                alias = f"{link}/{rel}"
                why = held(alias.split("/"), is_dir)
                if why is not None:
                    target = "/".join([*resolved, rel])
                    found.append((link, f"a symbolic link that gives {target} the name {alias}: {why}"))
                    break
        except OSError as exc:
            found.append((link, f"a symbolic link whose target cannot be judged ({exc.strerror or exc})"))
    return found


def remove_link(root: int, name: str, target: str) -> None:
    """Remove the link ``name`` below the directory ``root`` if it is still the one made (``target``)."""
    parts = name.split("/")
    try:
        parent = open_dir_beneath(root, parts[:-1])
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            if os.readlink(parts[-1], dir_fd=parent) == target:
                os.unlink(parts[-1], dir_fd=parent)
    finally:
        os.close(parent)
