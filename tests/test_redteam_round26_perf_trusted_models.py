"""Round 26 (perf, issue 22 item 2): a Bash call's own result models are not validated again.

Every local call built a `CommandResult` (28 fields), a `BashOutput` (22) and its envelope
(`ToolResultBlock`, `ResultEnvelope`) through pydantic's validator from values shellrt computed
itself: ~3-20 us a model a call on this machine.
`shellrt.protocol.trusted` builds them from every field in field order, and validates anything
else (fail closed); an envelope of a tool's renderings of other types is validated. Counted,
not timed (robust at any load): a Runtime Bash call runs none of the four validators, and what
it builds equals, field for field and in its JSON, what validation makes of the same values. The shortcut cannot see checks inside a field's type, so the schema of
each model built this way is checked to have none but pydantic's own for ``Path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

import shellrt
from shellrt.protocol.messages import ToolResultBlock
from shellrt.protocol.results import ResultEnvelope
from shellrt.protocol.trusted import trusted
from shellrt.runtime.execution import CallExecutor
from shellrt.supervisor.models import CommandResult
from shellrt.tools.bash import Bash, BashOutput
from tests._calls import block_text
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio

TRUSTED_MODELS = (CommandResult, BashOutput, ToolResultBlock, ResultEnvelope)


class _Counting:
    """A model's validator, counting the inputs it validates."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls = 0

    def validate_python(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self._inner.validate_python(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[type[pydantic.BaseModel], _Counting]:
    out: dict[type[pydantic.BaseModel], _Counting] = {}
    for cls in TRUSTED_MODELS:
        counter = _Counting(cls.__pydantic_validator__)
        monkeypatch.setattr(cls, "__pydantic_validator__", counter)
        out[cls] = counter
    return out


def _validated_copy(model: pydantic.BaseModel) -> pydantic.BaseModel:
    return type(model).model_validate({k: getattr(model, k) for k in type(model).model_fields})


async def test_a_bash_call_validates_none_of_its_result_models_and_builds_the_same(
    tmp_path: Path, counted: dict[type[pydantic.BaseModel], _Counting], monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[pydantic.BaseModel] = []
    import shellrt.runtime.execution as exec_mod
    import shellrt.supervisor.supervisor as sup_mod
    import shellrt.tools.bash as bash_mod

    def keep(cls: Any, values: dict[str, Any]) -> Any:
        model = trusted(cls, values)
        built.append(model)
        return model

    monkeypatch.setattr(sup_mod, "trusted", keep)
    monkeypatch.setattr(bash_mod, "trusted", keep)
    monkeypatch.setattr(exec_mod, "trusted", keep)
    async with shellrt.Runtime(tmp_path, "local", mode="bypassPermissions") as rt:
        block = await _one(rt, "Bash", command="printf 'x\\n'; echo err >&2; exit 3")
        assert "Exit code 3" in block_text(block)
    assert {type(m) for m in built} == set(TRUSTED_MODELS)
    assert [c.calls for c in counted.values()] == [0] * len(TRUSTED_MODELS), "a result model was validated"
    for model in built:
        copy = _validated_copy(model)
        assert copy == model
        assert copy.model_dump_json() == model.model_dump_json()
        assert copy.model_fields_set == model.model_fields_set
    result = next(m for m in built if isinstance(m, CommandResult))
    assert result.exit_code == 3 and isinstance(result.notes, tuple) and isinstance(result.output_path, Path)
    with pytest.raises(pydantic.ValidationError):  # still frozen
        result.exit_code = 0  # type: ignore[misc]


def _values(cls: type[pydantic.BaseModel]) -> dict[str, Any]:
    sample = {"command": "true", "cwd": "/ws", "duration_s": 0.5, "exit_code": 0}
    if cls is CommandResult:
        sample["output_path"] = Path("/tmp/out")
    model = cls.model_validate(sample)
    return {k: getattr(model, k) for k in cls.model_fields}


def test_an_envelope_of_other_types_is_validated() -> None:
    """A tool's own rendering or flag of another type goes through the validator (as before)."""
    data = BashOutput(command="true", exit_code=0)
    plain = CallExecutor._envelope("t1", Bash(), data, False, [], None)  # type: ignore[arg-type]
    assert plain == ResultEnvelope.model_validate(plain.model_dump())
    coerced = CallExecutor._envelope("t1", Bash(), data, 1, [], None)  # type: ignore[arg-type]
    assert coerced.model.is_error is True  # validated: 1 became a bool
    with pytest.raises(pydantic.ValidationError):
        CallExecutor._envelope("t1", Bash(), data, "maybe", [], None)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [CommandResult, BashOutput])
def test_any_other_shape_is_validated(cls: type[pydantic.BaseModel]) -> None:
    values = _values(cls)
    reordered = dict(reversed(values.items()))
    assert trusted(cls, reordered) == cls.model_validate(values)  # validated: same model
    missing = dict(values)
    del missing["command"]
    with pytest.raises(pydantic.ValidationError):
        trusted(cls, missing)
    with pytest.raises(pydantic.ValidationError):
        trusted(cls, {**values, "extra": 1})
    wrong = {**values, "exit_code": "x"}
    reordered_wrong = dict(reversed(wrong.items()))
    with pytest.raises(pydantic.ValidationError):
        trusted(cls, reordered_wrong)


def test_a_model_with_validators_is_always_validated() -> None:
    class Checked(pydantic.BaseModel):
        n: int

        @pydantic.field_validator("n")
        @classmethod
        def positive(cls, v: int) -> int:
            if v <= 0:
                raise ValueError("must be positive")
            return v

    with pytest.raises(pydantic.ValidationError):
        trusted(Checked, {"n": -1})


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            yield schema
        for value in schema.values():
            yield from _nodes(value)
    elif isinstance(schema, list | tuple):
        for value in schema:
            yield from _nodes(value)


_CONSTRAINTS = {"ge", "gt", "le", "lt", "max_length", "min_length", "pattern", "multiple_of"}


@pytest.mark.parametrize("cls", TRUSTED_MODELS)
def test_trusted_models_have_no_checks_inside_field_types(cls: type[pydantic.BaseModel]) -> None:
    for node in _nodes(cls.__pydantic_core_schema__):
        assert not _CONSTRAINTS & node.keys(), f"{cls.__name__}: a constrained field {node}"
        if node["type"].startswith("function-"):
            function = node["function"]  # a serializer's is the function itself
            function = function["function"] if isinstance(function, dict) else function
            assert function.__module__.startswith("pydantic."), (
                f"{cls.__name__}: a field validator of its own ({function.__qualname__}): "
                "trusted() would skip it; build this model with its validator"
            )
