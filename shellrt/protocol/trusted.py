"""Pydantic models built from shellrt's own typed values, without running the validator again.

A command's `CommandResult` and its Bash tool's `BashOutput` are made on every call from values
shellrt itself computed (exit statuses, spool sizes, preview text): validating them costs
~6-20 us a model a call (28 and 22 fields) and checks nothing the type checker has not. Pydantic's
own `model_construct` is slower still (it walks the fields in Python for their defaults).

`trusted` takes every field, in the model's field order, and sets them as validation would. It
fails closed: any other set or order of keys, a model with validators (model or field
decorators), private attributes or extra fields goes through the validator as before. What it
cannot see are checks inside a field's type (``Annotated`` validators, ``Field(ge=0)``): use it
for models of plain fields only (`tests/test_redteam_round26_perf_trusted_models.py` checks the
schema of each model built this way). Inputs from outside (a model's tool input, a hook's
output, a file) are never built this way.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["trusted"]

_M = TypeVar("_M", bound=BaseModel)

#: Per model class: its field names in order, or None when it must always be validated.
_SHAPES: dict[type[BaseModel], tuple[str, ...] | None] = {}
_set = object.__setattr__


def _shape(cls: type[BaseModel]) -> tuple[str, ...] | None:
    """The field names a trusted build must give, in order; None for a model that needs its validator."""
    decorators = cls.__pydantic_decorators__
    plain = not (
        decorators.validators
        or decorators.field_validators
        or decorators.root_validators
        or decorators.model_validators
        or decorators.computed_fields
        or cls.__private_attributes__
        or cls.model_config.get("extra") == "allow"
    )
    shape = tuple(cls.model_fields) if plain else None
    _SHAPES[cls] = shape
    return shape


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """``cls(**values)`` for values shellrt computed itself, typed as the fields are: every field,
    in field order (anything else is validated, as is a model with validators)."""
    shape = _SHAPES[cls] if cls in _SHAPES else _shape(cls)
    if shape is None or tuple(values) != shape:
        return cls.model_validate(values)
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(shape))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
