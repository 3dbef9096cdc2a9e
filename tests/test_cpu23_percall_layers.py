"""`benchmarks.percall_layers` names only functions that exist, each layer once (round 56).

The breakdown wraps each row's function by its dotted name; a row whose function was renamed
or moved would stop the run (or, for a module global imported elsewhere under another name,
count nothing), and a child label that is no row would be subtracted as 0 from its parent's
own share. Nothing is wrapped here: the rows are only resolved.
"""

from __future__ import annotations

import importlib
import inspect

from benchmarks.percall_layers import LAYERS


def _resolve(module: str, path: str) -> object:
    owner: object = importlib.import_module(module)
    for part in path.split("."):
        owner = getattr(owner, part)
    return owner


def test_every_row_names_a_function() -> None:
    for label, module, path, _children in LAYERS:
        found = _resolve(module, path)
        assert inspect.isfunction(found) or inspect.ismethod(found), (label, module, path, found)


def test_every_child_is_a_row_and_labels_are_unique() -> None:
    labels = [label for label, _m, _p, _c in LAYERS]
    assert len(labels) == len(set(labels))
    for label, _m, _p, children in LAYERS:
        for child in children:
            assert child in labels, (label, child)


def test_the_permission_step_is_broken_down() -> None:
    rows = {label: children for label, _m, _p, children in LAYERS}
    assert rows["permission"] == ("decide", "decision noted")
    assert rows["decision key"] == ("judgement",)
    assert set(rows["judgement"]) == {"roots", "cwd resolved"}
