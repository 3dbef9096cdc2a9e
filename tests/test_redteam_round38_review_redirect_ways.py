"""Red team, round 38 (review): past 32 overlay redirects a denied path's bytes were left unmasked.

Round 38 (rules) follows ``overlay.redirect`` xattrs from a denied path down an overlay's layers
(`sandbox._maskaliases._layer_places`), 32 ways at most, and then stopped quietly: a directory
renamed 40 times over 41 layers (one rename a build layer, as image builders stack them) keeps the
denied file's bytes at ``a40/id`` of the lowest layer, and the sandbox, which shows the layer
directories of the host, masked only the first 32 places, so a command read the rest. Past the
bound the layers below now are masked whole (more masks, never fewer; fail closed). The
``user.`` xattrs of a ``userxattr`` overlay are what this test writes (no privilege needed); the
``trusted.`` ones of a root-mounted overlay are read the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

from sandbox._maskaliases import overlay_aliases

_RENAMES = 40


def _chain(tmp_path: Path) -> tuple[str, list[Path], Path]:
    """(``/proc/self/mountinfo`` text of an overlay at ``merged`` over ``_RENAMES + 1`` lower layers,
    userxattr; the layers, upper first; the merged directory). Layer ``i`` renames ``a<i>`` to
    ``a<i+1>`` (``a0`` is ``keys``); the lowest holds ``a<_RENAMES>/id``, the denied file's bytes."""
    layers = [tmp_path / f"l{i}" for i in range(_RENAMES + 1)]
    names = ["keys", *(f"a{i}" for i in range(1, _RENAMES + 1))]
    for i, layer in enumerate(layers[:-1]):
        entry = layer / names[i]
        entry.mkdir(parents=True)
        os.setxattr(entry, "user.overlay.redirect", f"/{names[i + 1]}".encode())
    (layers[-1] / names[-1]).mkdir(parents=True)
    (layers[-1] / names[-1] / "id").write_text("SECRET\n")
    merged = tmp_path / "merged"
    merged.mkdir()
    lower = ":".join(str(layer) for layer in layers)
    mountinfo = (
        f"1 0 8:1 / / rw - ext4 /dev/vda rw\n"
        f"99 1 0:99 / {merged} ro - overlay overlay ro,lowerdir={lower},redirect_dir=follow,userxattr\n"
    )
    return mountinfo, layers, merged


def _covered(path: Path, masks: list[Path]) -> bool:
    return any(mask == path or mask in path.parents for mask in masks)


def test_the_bytes_behind_many_redirects_are_masked(tmp_path: Path) -> None:
    """Failed before: ``l40/a40/id`` (the 40th redirect's place) not among the masks (1 of 1)."""
    mountinfo, layers, merged = _chain(tmp_path)
    masks = overlay_aliases([merged / "keys"], mountinfo)
    assert _covered(layers[1] / "a1", masks), masks  # the first redirect: followed, as before
    bytes_at = layers[-1] / f"a{_RENAMES}" / "id"
    assert _covered(bytes_at, masks), f"{bytes_at} is not masked: {sorted(map(str, masks))}"


def test_a_short_chain_masks_no_whole_layer(tmp_path: Path) -> None:
    """Below the bound nothing changes: only the places on the way are masked."""
    layers = [tmp_path / f"l{i}" for i in range(3)]
    (layers[0] / "keys").mkdir(parents=True)
    os.setxattr(layers[0] / "keys", "user.overlay.redirect", b"/a1")
    (layers[2] / "a1").mkdir(parents=True)
    (layers[2] / "a1" / "id").write_text("SECRET\n")
    layers[1].mkdir()
    merged = tmp_path / "merged"
    merged.mkdir()
    mountinfo = (
        f"99 1 0:99 / {merged} ro - overlay overlay ro,lowerdir={':'.join(map(str, layers))},userxattr\n"
    )
    masks = overlay_aliases([merged / "keys"], mountinfo)
    assert _covered(layers[2] / "a1" / "id", masks), masks
    assert not any(mask in layers for mask in masks), masks
