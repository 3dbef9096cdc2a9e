"""``model.model_dump(mode="json")`` of a flat tool input without pydantic's serializer.

Every call records its executed input (the transcript's ``executed_input``): for a shell call
that is a ``BashInput`` of four scalars, and pydantic's dump of it cost ~1.4-1.8 us of a call
(issue 22, item 2). A class qualifies once (memoised per class: its fields and serializers are
fixed when it is built) when each field's annotation is ``str``, ``int``, ``bool`` or an optional
of those and nothing changes how it is dumped (no serializer, computed field, exclusion,
dump-by-alias or ``model_dump`` override). A value is copied as is only when its exact type is
one its annotation names: anything else (a ``bool`` put in an ``int`` field after parsing, which
pydantic writes as ``1``; a ``str`` subclass; extra fields) goes through pydantic. Nothing is
memoised about a value: the input is read afresh on every call.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

_SCALARS: frozenset[type] = frozenset({str, int, bool, type(None)})

#: class -> ((field name, the exact value types it takes), ...), or None: not flat.
_PLANS: dict[type, tuple[tuple[str, frozenset[type]], ...] | None] = {}
_PLANS_MAX = 256


def _types_of(annotation: Any) -> frozenset[type] | None:
    """The exact types a field annotated ``annotation`` dumps unchanged, or None (not flat)."""
    if annotation in _SCALARS:
        return frozenset({annotation})
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = frozenset(typing.get_args(annotation))
        if args <= _SCALARS:
            return args
    return None


def _plan(cls: type[BaseModel]) -> tuple[tuple[str, frozenset[type]], ...] | None:
    decorators = cls.__pydantic_decorators__
    if (
        cls.model_dump is not BaseModel.model_dump
        or decorators.field_serializers
        or decorators.model_serializers
        or cls.__pydantic_computed_fields__
        or cls.model_config.get("serialize_by_alias")
    ):
        return None
    plan = []
    for name, info in cls.model_fields.items():
        allowed = _types_of(info.annotation)
        if allowed is None or info.exclude or getattr(info, "exclude_if", None) is not None:
            return None
        plan.append((name, allowed))
    return tuple(plan)


def json_dump(model: BaseModel) -> dict[str, Any]:
    """``model.model_dump(mode="json")``: from the fields directly when the class is flat."""
    cls = type(model)
    try:
        plan = _PLANS[cls]
    except KeyError:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[cls] = _plan(cls)
    if plan is None or model.__pydantic_extra__:
        return model.model_dump(mode="json")
    values = model.__dict__
    out: dict[str, Any] = {}
    for name, allowed in plan:
        value = values.get(name, _MISSING)
        if type(value) not in allowed:
            return model.model_dump(mode="json")
        out[name] = value
    return out


_MISSING = object()
