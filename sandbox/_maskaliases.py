"""Other names of a read-denied file: hard links made before its mask existed.

A mask covers a path, not an inode. A read-denied path that does not exist yet is not
masked, so a command could create it (``touch .env``) and a hard link to it
(``ln .env notes.txt``); once the operator wrote the secret into it in place (a shell's
``>`` or ``>>``, most tools), the next sandbox masked ``.env`` and showed the same bytes
at ``notes.txt``. Every other name of such a file inside the writable roots is masked
too. Links can only be made on the same mount, and a masked path's parents are pinned
(mount points of their own), so the names are found below the writable root that holds
the file; names made while a mask exists are impossible (the mask is not the file).

Only files with more than one link are looked for (``st_nlink``), so an ordinary session
pays one ``stat`` per read-denied path, which it makes anyway. A read-denied directory is
searched for such files once each time it changes. The search is bounded; past the bound
the command is refused (fail closed), naming the file and how to find its links.

Other mounts too (`mount_aliases`): a bind mount of a directory above a denied path (round 36) and,
for a path in an overlay, the same place in each of its layers (round 37).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from sandbox.errors import SandboxExecError

__all__ = [
    "ALIAS",
    "MAX_BELOW",
    "MAX_ENTRIES",
    "MAX_WATCHED",
    "AliasFinder",
    "denied_inodes",
    "mount_aliases",
    "overlay_aliases",
    "overlay_layers",
    "stats_of",
    "unseen_links",
]

#: How `sandbox.bwrap.BwrapBackend._denied_kinds` lists an alias after the denied paths' kinds
#: (``alias:<path>``): the whole mask plan stays one comparable tuple.
ALIAS = "alias:"

#: Directory entries one search may look at (a million names: ~1-2 s of ``scandir`` here).
MAX_ENTRIES = 1_000_000

#: Files below the denied directories whose ctime every start looks at (a link made to one since the
#: last search: round 38); past it such a link is found only when the directory itself changes.
MAX_WATCHED = 512  # ~11 µs an lstat on this loaded host: ~5.6 ms a start at the bound

#: (path, st_dev, st_ino, st_nlink or st_mtime_ns, st_ctime_ns) of each denied path in a root.
_Signature = tuple[tuple[str, int, int, int, int], ...]


def stats_of(paths: Sequence[Path]) -> list[os.stat_result | None]:
    """``os.stat`` of each path (symlinks followed), None where nothing can be stat'ed: the
    ``found`` argument of `AliasFinder.aliases`."""
    found: list[os.stat_result | None] = []
    for path in paths:
        try:
            found.append(os.stat(path))
        except OSError:
            found.append(None)
    return found


#: Searches of the roots before a short link count refuses (one may race a rename: round 38, lead),
#: and how long such a refusal is kept before the next command searches again (seconds).
_COUNT_SEARCHES = 3
_REFUSAL_KEPT_S = 1.0


class AliasFinder:
    """The other names of the read-denied files, worked out again only when those files change."""

    def __init__(self, *, count_outside: bool = False) -> None:
        """``count_outside``: refuse once a denied file has more links than the names found (masked,
        or in the roots) and more than it had at the first look (the session's start): a link made
        since outside the roots, which the sandbox shows (bwrap's read denies; round 38)."""
        self._count_outside = count_outside
        #: ``st_nlink`` of each denied regular file at the first look (None: not looked yet)
        self._start_links: dict[tuple[int, int], int] | None = None
        self._signature: _Signature | None = None
        #: (path, ``st_ctime_ns``) of the files below the denied directories at the last search, or
        #: None past `MAX_WATCHED`: a link made to one changes its ctime, not its directory's mtime
        self._below: list[tuple[str, int]] | None = []
        self._aliases: tuple[Path, ...] = ()
        self._refused: SandboxExecError | None = None
        #: When it was refused, and whether for a short count (searched again after a while)
        self._refused_at = 0.0
        self._recount = False
        #: (the mount table and the denied paths it was read for, their other mounts' names)
        self._mounted: tuple[tuple[str, tuple[Path, ...]], tuple[Path, ...]] | None = None

    def aliases(
        self,
        denied: Sequence[Path],
        found: Sequence[os.stat_result | None],
        roots: Sequence[Path],
        *,
        live_mounts: bool = False,
    ) -> tuple[Path, ...]:
        """Names inside ``roots`` of the files ``denied`` shows (``found``: their ``os.stat``),
        other than the denied paths and what lies below a denied directory. ``live_mounts``: the
        sandbox starts in the host's mount namespace (a non-root caller's bwrap), so a mount made
        after the policy was derived shows there: its names of a denied path too (`mount_aliases`
        of the table as it is now; red team, round 37)."""
        links = self._links(denied, found, roots)
        if not live_mounts:
            return links
        return (*links, *(p for p in self._live(denied, found, roots) if p not in links))

    def _live(
        self, denied: Sequence[Path], found: Sequence[os.stat_result | None], roots: Sequence[Path]
    ) -> tuple[Path, ...]:
        """Other mounts' names of the existing ``denied`` paths, per the mount table now: read again
        each time (~30 µs), worked out again only when it or the paths changed. A name that is or
        holds a writable root is left out, as `derive_policy` leaves it (it would hide the root)."""
        try:
            table = os.fsdecode(Path("/proc/self/mountinfo").read_bytes())
        except OSError:
            return ()
        present = tuple(path for path, st in zip(denied, found, strict=True) if st is not None)
        key = (table, present)
        if self._mounted is not None and self._mounted[0] == key:
            return self._mounted[1]
        hidden = set(denied)
        names = tuple(
            alias
            for alias in mount_aliases(present, table)
            if alias not in hidden
            and not any(h in alias.parents for h in hidden)
            and not any(r == alias or alias in r.parents for r in roots)
        )
        self._mounted = key, names
        return names

    def _links(
        self, denied: Sequence[Path], found: Sequence[os.stat_result | None], roots: Sequence[Path]
    ) -> tuple[Path, ...]:
        prefixes = [str(root) for root in roots]
        if self._start_links is None:
            self._start_links = {
                (st.st_dev, st.st_ino): st.st_nlink
                for st in found
                if st is not None and stat.S_ISREG(st.st_mode)
            }
        inside = [  # what can have other names in a root: a file with several links wherever it is
            # (round 38: one outside the roots linked into them), a directory's files inside them
            (path, st)
            for path, st in zip(denied, found, strict=True)
            if st is not None
            and (
                (stat.S_ISREG(st.st_mode) and st.st_nlink > 1)
                or (
                    stat.S_ISDIR(st.st_mode)
                    and any(str(path) == r or str(path).startswith(r + "/") for r in prefixes)
                )
            )
        ]
        if not inside:
            return ()  # the usual case: one stat per denied path (already made), nothing more
        signature = tuple(
            (str(path), st.st_dev, st.st_ino, st.st_nlink if stat.S_ISREG(st.st_mode) else st.st_mtime_ns,
             st.st_ctime_ns)
            for path, st in inside
        )  # fmt: skip
        if signature == self._signature and not self._below_changed():
            if self._refused is None:
                return self._aliases
            if not self._recount or time.monotonic() - self._refused_at < _REFUSAL_KEPT_S:
                raise self._refused  # not searched again yet: each search may cost a second
        self._signature, self._refused, self._recount = signature, None, False
        try:
            for tries_left in reversed(range(_COUNT_SEARCHES)):
                try:
                    self._aliases = self._search(inside, roots)
                except _Raced:
                    # a rename during the walk may have hidden a link (round 39): walked again
                    self._recount = True
                    if not tries_left:
                        raise
                    continue
                if not self._count_outside:
                    break
                try:
                    self._outside(inside, self._aliases)
                    break
                except SandboxExecError:
                    # a search that raced a rename in the roots misses a name (round 38, lead):
                    # searched again before it refuses; a name outside the roots is missed each time
                    self._recount = True
                    if not tries_left:
                        raise
        except SandboxExecError as exc:
            self._refused, self._refused_at = exc, time.monotonic()
            raise
        return self._aliases

    def _outside(self, inside: list[tuple[Path, os.stat_result]], aliases: Sequence[Path]) -> None:
        """Refuse when a denied file gained a link since the start that is neither masked nor in the
        roots: made outside them meanwhile (another process of the caller, the operator), where the
        sandbox shows it. A count at the start is the session's own decision (`unseen_links`)."""
        start = self._start_links or {}
        for path, st in inside:
            key = (st.st_dev, st.st_ino)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink <= start.get(key, 1):
                continue
            names = _names([path, *(p for p, _st in inside), *aliases]).get(key, set())
            if len(names) < st.st_nlink:
                raise SandboxExecError(
                    f"the read-denied file {path} got another hard link outside the writable roots "
                    f"since the session started ({st.st_nlink} links, {len(names)} masked): a command "
                    f"could read it there. Find it with `find / -xdev -samefile {path}` and remove it"
                )

    def _below_changed(self) -> bool:
        """Whether a file below a denied directory changed (a link made to it: round 38) since the
        last search: one ``lstat`` a file, `MAX_WATCHED` at most."""
        for path, ctime in self._below or ():
            try:
                if os.lstat(path).st_ctime_ns != ctime:
                    return True
            except OSError:
                return True
        return False

    def _search(self, inside: list[tuple[Path, os.stat_result]], roots: Sequence[Path]) -> tuple[Path, ...]:
        budget = _Budget()
        targets: dict[tuple[int, int], Path] = {}
        below: list[tuple[str, int]] | None = []
        for path, st in inside:
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                targets[st.st_dev, st.st_ino] = path
            elif stat.S_ISDIR(st.st_mode):
                for name, below_st in _walk_settled(path, budget):
                    if below is not None and len(below) < MAX_WATCHED:
                        below.append((os.fspath(name), below_st.st_ctime_ns))
                    else:
                        below = None
                    if stat.S_ISREG(below_st.st_mode) and below_st.st_nlink > 1:
                        targets[below_st.st_dev, below_st.st_ino] = name
        self._below = below
        aliases: list[Path] = []
        if targets:
            hidden = [path for path, _st in inside]
            inodes = {ino for _dev, ino in targets}
            devices = {dev for dev, _ino in targets}
            for root in roots:
                device = _device(root)
                if device not in devices:
                    continue  # a link never crosses a file system
                listed: _Listed = {}
                found = list(_walk(root, budget, inodes, listed))
                found.extend(_settle(listed, budget, inodes, device))
                for name, st in found:
                    key = (st.st_dev, st.st_ino)
                    if key in targets and not any(h == name or h in name.parents for h in hidden):
                        aliases.append(name)
        return tuple(sorted(set(aliases)))


def denied_inodes(denied: Sequence[tuple[str, str]], roots: Sequence[str]) -> dict[tuple[int, int], str]:
    """``(st_dev, st_ino) -> shown path`` of every read-denied file another name could show:
    a denied regular file with more than one link, and each such file below a denied directory
    inside ``roots`` (where a command could have linked it before it was masked).

    ``denied``: (the path as shown, its host path). For the file tools, which open files on the
    host by path and see no mask but the path's: they refuse an opened file whose inode is here
    (`sandbox.confine.View.alias_of`). Bounded like the sandbox's own search; past the bound
    (or a directory a command may have closed) `SandboxExecError`.
    """
    budget = _Budget()
    found: dict[tuple[int, int], str] = {}
    for shown, host in denied:
        try:
            st = os.stat(host)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            if st.st_nlink > 1:
                found[st.st_dev, st.st_ino] = shown
        elif stat.S_ISDIR(st.st_mode) and any(
            host == r or host.startswith(r.rstrip("/") + "/") for r in roots
        ):
            for below, below_st in _walk_settled(Path(host), budget):
                if below_st.st_nlink > 1:
                    found[below_st.st_dev, below_st.st_ino] = os.path.join(
                        shown, os.path.relpath(below, host)
                    )
    return found


_ESCAPE = re.compile(r"\\([0-7]{3})")


def _mounts(mountinfo: str) -> list[tuple[str, str, str]]:
    """(device ``major:minor``, the mount's root inside its file system, mount point) of each line."""
    found: list[tuple[str, str, str]] = []
    # Only "\n" ends a line: the kernel escapes it (and space, tab, backslash) in a mount point and
    # nothing else, so ``splitlines`` would cut a point named with U+2028 or \x1c (anyone's FUSE
    # mount) into a shorter, wrong point that hid the real holder of a masked path.
    for line in mountinfo.split("\n"):
        fields = line.split(" ", 5)
        if len(fields) < 5:
            continue
        root, point = (
            _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), f) if "\\" in f else f for f in fields[3:5]
        )
        found.append((fields[2], root, point))
    return found


def _below(path: str, top: str) -> str | None:
    """``path`` relative to ``top`` ("" for ``top`` itself), None when it is not at or below it."""
    if path == top:
        return ""
    if top == "/":
        return path[1:]
    return path[len(top) + 1 :] if path.startswith(top + "/") else None


def mount_aliases(paths: Sequence[Path], mountinfo: str | None = None) -> list[Path]:
    """Other names of each of ``paths`` (canonical, existing) through another mount of the same
    file system: a bind mount of a directory above it, or the file system mounted twice.

    A mask hides a path, not the file: bwrap's recursive bind of ``/`` brings every host mount
    into the sandbox, so ``/alias/secret`` showed what the mask of ``/ws/secret`` hid. Each
    candidate is checked to be the same file (device and inode), so a name shadowed by another
    mount is not taken. A path in an overlay also has a name in each of its layers
    (`overlay_aliases`, round 37), and those names' own other mounts are looked for too.
    ``mountinfo``: the text of ``/proc/self/mountinfo`` (read when None)."""
    if mountinfo is None:
        try:
            # bytes, decoded as paths are: a mount point that is not UTF-8 must not stop the session
            mountinfo = os.fsdecode(Path("/proc/self/mountinfo").read_bytes())
        except OSError:
            return []
    layered = overlay_aliases(paths, mountinfo)
    mounts = _mounts(mountinfo)
    twice = {dev for dev, n in Counter(dev for dev, _root, _point in mounts).items() if n > 1}
    if not twice:
        return layered  # each file system mounted once: no other names but an overlay's layers
    found: list[Path] = list(layered)
    for path in [*paths, *layered]:
        text = os.fspath(path)
        holder: tuple[str, str, str] | None = None
        for mount in mounts:  # the deepest mount point holding the path; the last of equals is on top
            if _below(text, mount[2]) is not None and (holder is None or len(mount[2]) >= len(holder[2])):
                holder = mount
        if holder is None or holder[0] not in twice:
            continue
        dev, root, point = holder
        rest = _below(text, point) or ""
        inner = root if not rest else (root.rstrip("/") + "/" + rest)
        st: os.stat_result | None = None
        for other_dev, other_root, other_point in mounts:
            tail = _below(inner, other_root) if other_dev == dev else None
            if tail is None:
                continue
            alias = other_point if not tail else other_point.rstrip("/") + "/" + tail
            if alias == text:
                continue
            try:
                st = st or os.stat(text)
                other = os.stat(alias)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                found.append(Path(alias))
    return list(dict.fromkeys(found))


#: Entries the files below the operator's denied directories may cost `unseen_links` together.
MAX_BELOW = 20_000  # ~17 µs an entry here: ~0.35 s of a session start at the bound


def unseen_links(
    masked: Sequence[Path], roots: Sequence[Path], directories: Sequence[Path] = ()
) -> tuple[list[tuple[Path, int, int]], list[Path], list[Path]]:
    """(path, names found, ``st_nlink``) of each masked regular file whose link count is more than
    the names the masks and the writable roots hold (red team, round 37): another link outside the
    roots (made before the session: a command cannot make one there) shows its bytes unmasked, and
    the whole host is not searched at every start. A name is (its directory's device and inode,
    its last component): two mounts of one directory give one name, not two. Past the search's
    bound every such file is listed (fail closed). ``directories``: denied directories whose files
    are counted too (the operator's; `MAX_BELOW` entries in all); second: those not walked whole;
    third: the names in the roots of the files below those of ``directories`` outside the roots,
    to mask (the sandbox looks in the roots only for those below denied directories inside them:
    round 38)."""
    targets: dict[tuple[int, int], tuple[Path, int]] = {}
    candidates: list[Path] = list(masked)
    for path, st in zip(masked, stats_of(masked), strict=True):
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            targets.setdefault((st.st_dev, st.st_ino), (path, st.st_nlink))
    below = _Budget(MAX_BELOW)
    cut: list[Path] = []
    outside: set[tuple[int, int]] = set()  # files below a denied directory outside the roots
    for directory in directories:
        away = not any(r == directory or r in directory.parents for r in roots)
        try:
            for name, st in _walk_settled(directory, below):
                if st.st_nlink > 1:
                    targets.setdefault((st.st_dev, st.st_ino), (name, st.st_nlink))
                    candidates.append(name)
                    if away:
                        outside.add((st.st_dev, st.st_ino))
        except _Raced:
            raise  # a file renamed away from the walk is neither counted nor masked: refused
        except SandboxExecError:
            cut.append(directory)
    if not targets:
        return [], cut, []  # the usual case: one stat per mask
    names: dict[tuple[int, int], set[tuple[int, int, str]]] = {key: set() for key in targets}
    linked: list[Path] = []
    try:
        budget = _Budget()
        inodes = {ino for _dev, ino in targets}
        devices = {dev for dev, _ino in targets}
        for root in roots:
            if _device(root) in devices:
                for name, st in _walk_settled(root, budget, inodes):
                    candidates.append(name)
                    if (st.st_dev, st.st_ino) in outside:
                        linked.append(name)
    except SandboxExecError:
        return [(path, 0, count) for path, count in targets.values()], cut, []
    for key, seen in _names(candidates).items():
        if key in names:
            names[key] |= seen
    unseen = [
        (path, len(names[key]), count) for key, (path, count) in targets.items() if len(names[key]) < count
    ]
    return unseen, cut, linked


def _names(paths: Sequence[Path]) -> dict[tuple[int, int], set[tuple[int, int, str]]]:
    """The names of each file ``paths`` show, by (``st_dev``, ``st_ino``): a name is its directory's
    device and inode plus its last component, so two mounts of one directory give one name."""
    names: dict[tuple[int, int], set[tuple[int, int, str]]] = {}
    for name in paths:
        try:
            st, parent = os.stat(name), os.stat(name.parent)
        except OSError:
            continue
        names.setdefault((st.st_dev, st.st_ino), set()).add((parent.st_dev, parent.st_ino, name.name))
    return names


# --- overlays (round 37) -------------------------------------------------------------------------
# An overlay mount is a device of its own whose files live in its layers, plain directories of the
# file systems below (``upperdir=``, ``lowerdir=``, ``lowerdir+=``, ``datadir+=``). bwrap's recursive
# bind of ``/`` shows those directories at their host paths, so a mask of ``<merged>/secret`` left
# ``<lower>/secret`` readable. Each layer's entry at the denied path's place is another name of it:
# masked too (a symlink there: where it leads). Not compared by inode: what a layer holds there is
# what the overlay shows at the denied name, or what it hides (a whiteout's victim, a copied-up
# original). Layers named by a relative path (the mounter's cwd, unknown here) are not found. Kept
# in this module: `shellrt run` imports it already (tests/test_cli_imports.py budget).

#: A ``lowerdir=`` list's tokens: an escaped character (``\\:``, ``\\\\``), a separator, or any other.
_LAYER_TOKEN = re.compile(r"\\(.)|(:)|(.)", re.DOTALL)
#: Nested overlays (a layer inside another overlay): followed this deep at most.
_MAX_DEPTH = 8


def _octal(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text) if "\\" in text else text


def overlay_layers(mountinfo: str) -> list[tuple[str, str, list[str]]]:
    """(mount point, its root inside the overlay, its layer directories: upper first) of each overlay
    line of ``/proc/self/mountinfo`` text."""
    return [(point, root, layers) for point, root, layers, _x in _ov_mounts(mountinfo) if layers is not None]


def _ov_mounts(mountinfo: str) -> list[tuple[str, str, list[str] | None, str]]:
    """(mount point, root, the layers of an overlay or None, the prefix of its ``overlay.*`` xattrs)
    of each line, in the table's order."""
    found: list[tuple[str, str, list[str] | None, str]] = []
    for line in mountinfo.split("\n"):
        head, sep, tail = line.partition(" - ")
        fields = head.split(" ")
        if not sep or len(fields) < 5:
            continue
        post = tail.split(" ")
        point, root = _octal(fields[4]), _octal(fields[3])
        if len(post) < 3 or post[0] != "overlay":
            found.append((point, root, None, ""))
            continue
        layers: list[str] = []
        upper: list[str] = []
        prefix = "trusted."
        for option in post[2].split(","):  # a comma inside a value is escaped (\054)
            key, eq, value = _octal(option).partition("=")
            if key == "userxattr":
                prefix = "user."  # an unprivileged mount's overlay keeps its xattrs there
            if not eq:
                continue
            if key == "upperdir":
                upper.append(value)
            elif key == "lowerdir":
                layers += _split_layers(value)
            elif key in ("lowerdir+", "datadir+"):
                layers.append(value)
        found.append((point, root, [*upper, *layers], prefix))
    return found


def _split_layers(value: str) -> list[str]:
    """The layers of a ``lowerdir=`` value, read escape by escape: a backslash takes the next
    character as it is (a layer named ``l\\`` is shown ``l\\\\``, and the ``:`` after it still
    separates: round 38), an empty entry (``::``, data-only layers follow) is skipped."""
    layers, name = [], ""
    for escaped, separator, char in _LAYER_TOKEN.findall(value):
        if separator:
            layers.append(name)
            name = ""
        else:
            name += escaped or char
    return [layer for layer in [*layers, name] if layer]


def _ov_holder(path: str, mounts: Sequence[tuple[str, str, list[str] | None, str]]) -> int | None:
    """Index of the mount holding ``path``: the deepest point, the last of equals (it is on top)."""
    best: int | None = None
    for i, (point, _root, _layers, _x) in enumerate(mounts):
        if _below(path, point) is not None and (best is None or len(point) >= len(mounts[best][0])):
            best = i
    return best


#: Ways one denied path may take down an overlay's layers (each redirect adds one): at most.
_MAX_WAYS = 32


def _redirect(entry: str, prefix: str) -> list[str] | None:
    """Where a layer's ``entry`` continues in the layers below (its ``overlay.redirect`` xattr: a
    renamed directory, a metacopy file's data): the components of an absolute redirect, one name
    for a relative one (in the same parent); None without one. A ``..`` is never followed (the
    kernel refuses it too), so no redirect leads out of the layers."""
    try:
        value = os.fsdecode(os.getxattr(entry, prefix + "overlay.redirect", follow_symlinks=False))
    except OSError:
        return None
    parts = [part for part in value.rstrip("\0").split("/") if part]
    if not parts or any(part in (".", "..") for part in parts):
        return None
    return ["/", *parts] if value.startswith("/") else parts[-1:]


def _layer_places(layers: Sequence[str], inner: str, prefix: str) -> list[str]:
    """The entry of each layer at ``inner``'s place (relative to the overlay's root), and where each
    redirect on the way leads in the layers below it (round 38: ``redirect_dir``, ``metacopy`` and
    data-only layers keep a file's bytes at another name). The name a redirect replaces is kept too:
    more masks in the layers, never fewer. Past `_MAX_WAYS` the layers below are places whole (a
    way not followed would leave bytes unmasked: round 38 review, fail closed)."""
    ways: list[list[str]] = [[c for c in inner.split("/") if c]]
    found: dict[str, None] = {}
    for index, layer in enumerate(layers):
        if not layer.startswith("/"):
            continue
        if len(ways) > _MAX_WAYS:  # a way past the bound: every layer below, whole
            below = [os.path.normpath(lower) for lower in layers[index:] if lower.startswith("/")]
            found.update(dict.fromkeys(below))
            break
        for way in list(ways):
            found.setdefault(os.path.normpath("/".join([layer, *way])), None)
            moved: list[str] = []
            for depth, name in enumerate(way):
                target = _redirect("/".join([layer, *way[: depth + 1]]), prefix)
                if target is None:
                    moved.append(name)
                elif target[0] == "/":
                    moved = target[1:]
                else:
                    moved += target
            if moved != way and moved not in ways:
                ways.append(moved)  # past the bound too: it marks the layers below (above)
    return list(found)


def overlay_aliases(paths: Sequence[Path], mountinfo: str) -> list[Path]:
    """The layer entries behind each of ``paths`` that lies in an overlay (existing ones only),
    where redirects lead too, through nested overlays; ``mountinfo``: ``/proc/self/mountinfo``'s text."""
    mounts = _ov_mounts(mountinfo)
    if all(layers is None for _point, _root, layers, _x in mounts):
        return []  # the usual host: nothing to look for
    found: dict[str, None] = {}
    work = [(os.fspath(p), 0) for p in paths]
    while work:
        text, depth = work.pop()
        index = _ov_holder(text, mounts)
        if index is None or depth >= _MAX_DEPTH:
            continue
        point, root, layers, prefix = mounts[index]
        places: list[str] = []
        if layers is not None:  # on an overlay (not on one another file system is mounted over)
            rest = _below(text, point) or ""
            inner = (root.rstrip("/") + "/" + rest).strip("/")
            places += _layer_places(layers, inner, prefix)
        places += _merged_places(text, mounts)
        for alias in places:
            if alias in found or alias == text or not os.path.lexists(alias):
                continue
            found[alias] = None
            real = os.path.realpath(alias)  # a link in a layer: hidden where it leads, as any mask
            found.setdefault(real, None)
            work.append((real, depth + 1))
    return [Path(a) for a in found]


def _merged_places(path: str, mounts: Sequence[tuple[str, str, list[str] | None, str]]) -> list[str]:
    """Where each overlay shows ``path`` when it lies in (or holds) one of its layers: the merged
    directory's name of it (round 38: a workspace that is an overlay's lower layer was readable
    through the merged directory, a device of its own). A path that holds a layer: the mount's
    whole point. Not compared by inode: a higher layer may shadow the name, and then the mask hides
    what it shows instead (more masks, never fewer)."""
    found: list[str] = []
    for point, root, layers, _x in mounts:
        for layer in layers or ():
            if not layer.startswith("/"):
                continue
            rest = _below(path, os.path.normpath(layer))
            if rest is None:
                if _below(os.path.normpath(layer), path) is not None:
                    found.append(point)  # the whole layer is below the denied directory
                continue
            inner = "/" + rest if rest else "/"
            shown = _below(inner, root)
            if shown is not None:
                found.append(point if not shown else point.rstrip("/") + "/" + shown)
            elif _below(root, inner) is not None:
                found.append(point)  # the mount shows a directory below the denied one
    return found


class _Raced(SandboxExecError):
    """Raised by a walk of the writable roots that kept changing under it: no pass of `_settle`
    found every directory as listed. What such a walk did not see may hold a read-denied file's
    link (round 39): it is walked again, and refused after `_COUNT_SEARCHES` walks."""

    def __init__(self, where: Path) -> None:
        super().__init__(
            f"{where} changed while it was searched for a read-denied file or its other links "
            f"({_COUNT_SEARCHES} times in a row): a command (or another process) renaming "
            "directories there could hide one. Stop what renames them, then run the command again"
        )


#: (inode, ``st_ctime_ns`` taken before its listing) of each directory a walk listed, by path.
_Listed = dict[Path, tuple[int, int]]

#: Passes over the listed directories before a walk that keeps changing is `_Raced` (each pass one
#: ``lstat`` a directory, and a listing of the changed ones: ~1 ms a pass for 1,000 directories), and
#: the time they go on for at least: 20 passes were a fraction of a millisecond for a small tree, so
#: a host program making and removing files in a few directories for a moment outlasted them (about 1
#: walk in 4,571 refused on a loaded host: red team round 53, hostchurn; round 54, relsock).
_SETTLE_PASSES = 20
_SETTLE_S = 0.25


def _settle(
    listed: _Listed, budget: _Budget, inodes: set[int] | None, device: int
) -> Iterator[tuple[Path, os.stat_result]]:
    """The files of ``inodes`` a walk missed because the tree changed under it (round 39): each
    directory whose inode or ctime changed since its listing is listed again and what is new in it
    walked (a directory moved in from a part not walked yet, a link renamed there), until one pass
    finds every directory as it was listed (`_Raced` past `_SETTLE_PASSES` passes and `_SETTLE_S`). That pass proves the walk saw the whole tree as of its
    start: anything not seen would sit then in a listed directory that did not hold it when listed,
    and so changed. A file made or removed, a chmod, an xattr (a build, another session) cost one
    listing of that directory, not a refusal (round 39, review10: every search was refused). The
    directories changed last are looked at first (their ctime is minutes old, not a pass old)."""
    order = list(listed)
    started, passes = time.monotonic(), 0
    while True:
        passes += 1
        changed = []
        for directory in order:
            try:
                st = os.lstat(directory)
            except OSError:
                changed.append(directory)
                continue
            if (st.st_ino, st.st_ctime_ns) != listed[directory]:
                changed.append(directory)
        if not changed:
            return
        if passes >= _SETTLE_PASSES and time.monotonic() - started >= _SETTLE_S:
            raise _Raced(changed[0])
        for directory in changed:
            yield from _relist(directory, listed, budget, inodes, device)
        again = set(changed)  # gone ones are forgotten by `_relist`: their parents changed too
        order = [*(d for d in changed if d in listed), *(d for d in listed if d not in again)]


def _relist(
    directory: Path, listed: _Listed, budget: _Budget, inodes: set[int] | None, device: int
) -> Iterator[tuple[Path, os.stat_result]]:
    """``directory`` listed again (`_settle`): its files of ``inodes``, and every directory in it not
    listed before (by path and inode) walked whole. Gone: forgotten (its parent changed too)."""
    listed.pop(directory, None)
    try:
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or st.st_dev != device:
            return
        listed[directory] = (st.st_ino, st.st_ctime_ns)
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        listed.pop(directory, None)
        return
    except OSError as exc:
        raise _Raced(directory) from exc  # listed once, unreadable now: fail closed
    for entry in entries:
        budget.spend(directory)
        try:
            if entry.is_dir(follow_symlinks=False):
                below = entry.stat(follow_symlinks=False)
                path = Path(entry.path)
                if below.st_dev == device and listed.get(path, (None,))[0] != below.st_ino:
                    yield from _walk(path, budget, inodes, listed)
            elif entry.is_file(follow_symlinks=False) and (inodes is None or entry.inode() in inodes):
                yield Path(entry.path), entry.stat(follow_symlinks=False)
        except OSError:
            _unsettled(listed, directory)  # gone meanwhile, or a directory above it renamed


def _unsettled(listed: _Listed, directory: Path) -> None:
    """Mark ``directory``'s listing incomplete: an entry's ``stat`` (by path) failed, which a
    directory above it renamed away causes without changing this one's ctime (round 40, locks3:
    the file was then never looked at again). `_settle` lists it again (or forgets it, gone)."""
    if directory in listed:
        listed[directory] = (listed[directory][0], -1)


class _Budget:
    """Entries left for one search; past them the command is refused."""

    def __init__(self, left: int | None = None) -> None:
        self.left = MAX_ENTRIES if left is None else left  # read now: a test lowers the bound

    def spend(self, where: Path) -> None:
        self.left -= 1
        if self.left < 0:
            raise SandboxExecError(
                f"a read-denied file has other hard links and more than {MAX_ENTRIES} names below "
                f"{where} are too many to search for them: find them with `find <workspace> -samefile "
                "<denied file>` and remove them, or deny the directory that holds the file"
            )


def _placeable(directory: Path) -> bool:
    """Whether a command running as this process's uid (a non-root caller's) could have made a link
    in ``directory``: it may write there, or it owns it (and so may change its mode back)."""
    try:
        owner = os.lstat(directory).st_uid
    except OSError:
        return True
    return owner == os.geteuid() or os.access(directory, os.W_OK | os.X_OK)


def _device(path: Path) -> int | None:
    try:
        return os.lstat(path).st_dev
    except OSError:
        return None


def _walk_settled(
    top: Path, budget: _Budget, inodes: set[int] | None = None
) -> list[tuple[Path, os.stat_result]]:
    """`_walk` of ``top`` checked by `_settle` (round 40, locks3): the walks of a denied directory
    and `unseen_links`' walk of the roots missed what a rename moved away from under them (``mv d
    d2; mv d2 d``), as the alias search's did before round 39. Walked again while it keeps changing,
    `_Raced` after `_COUNT_SEARCHES` walks. A name found before a rename may be gone (its new
    name is found too): callers stat what they keep."""
    device = _device(top)
    if device is None:
        return []
    for tries_left in reversed(range(_COUNT_SEARCHES)):
        listed: _Listed = {}
        found = list(_walk(top, budget, inodes, listed))
        try:
            found.extend(_settle(listed, budget, inodes, device))
        except _Raced:
            if not tries_left:
                raise
            continue
        return found
    raise AssertionError("unreachable")  # pragma: no cover


def _walk(
    top: Path, budget: _Budget, inodes: set[int] | None = None, listed: _Listed | None = None
) -> Iterator[tuple[Path, os.stat_result]]:
    """Every regular file below ``top`` with its ``lstat`` (with ``inodes``: only those whose inode
    number is one of them, the others are not stat'ed), never following a symlink or leaving
    ``top``'s file system (a hard link never crosses one). ``listed``: gets each directory listed
    with its inode and ``st_ctime_ns`` before the listing (`_settle` compares them after: one renamed
    away before its listing shows as a change of the directory it went to)."""
    try:
        device = os.lstat(top).st_dev
    except OSError:
        return
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            if listed is not None:
                st = os.lstat(directory)
                listed[directory] = (st.st_ino, st.st_ctime_ns)
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            if listed is not None:
                listed.pop(directory, None)
            continue  # removed (or renamed: `_settle` finds it where it went) meanwhile
        except OSError as exc:
            if _placeable(directory):
                raise SandboxExecError(
                    f"cannot list {directory} ({exc.strerror}) to look for other links of a read-denied "
                    "file: a command could have hidden one there. Make it readable (chmod u+r), or "
                    "remove it"
                ) from exc
            continue  # nothing a command could have put there
        for entry in entries:
            budget.spend(top)
            try:
                if entry.is_dir(follow_symlinks=False):
                    below = entry.stat(follow_symlinks=False)  # gone: `_settle` finds it where it went
                    if below.st_dev == device:
                        stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False) and (inodes is None or entry.inode() in inodes):
                    yield Path(entry.path), entry.stat(follow_symlinks=False)
            except OSError:
                if listed is not None:
                    _unsettled(listed, directory)
