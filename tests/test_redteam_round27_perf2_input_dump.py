"""Round 27 perf2: a call's executed input dumped from its fields (`shellrt.runtime.flat_dump`).

The attack on the cut: an input whose dump from the fields differs from pydantic's (a value put
in after parsing, a type its field does not name, a class that changes how it dumps) so the
transcript records another input than the one that ran. Each case must equal pydantic's dump,
read afresh after every change.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer, model_serializer

import shellrt
from shellrt.runtime.flat_dump import json_dump
from shellrt.runtime.session import TRANSCRIPT_FILE
from shellrt.tools.bash import BashInput
from tests._calls import one_call as _one

pytestmark = pytest.mark.anyio


class _Str(str):
    pass


class _Int(int):
    pass


class _Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True)
    name: str = Field(serialization_alias="other")


class _FieldSer(BaseModel):
    name: str

    @field_serializer("name")
    def _upper(self, value: str) -> str:
        return value.upper()


class _ModelSer(BaseModel):
    name: str

    @model_serializer
    def _all(self) -> dict[str, Any]:
        return {"x": 1}


class _Computed(BaseModel):
    name: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def more(self) -> str:
        return self.name * 2


class _Excluded(BaseModel):
    name: str
    secret: str = Field(default="s", exclude=True)


class _Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class _Override(BaseModel):
    name: str

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"overridden": True}


class _Nested(BaseModel):
    names: list[str]


def _same(model: BaseModel) -> None:
    with warnings.catch_warnings():  # pydantic warns of a value its field does not name
        warnings.simplefilter("ignore")
        theirs = model.model_dump(mode="json")
        mine = json_dump(model)
    assert mine == theirs and list(mine) == list(theirs)
    assert [type(v) for v in mine.values()] == [type(v) for v in theirs.values()]


def test_a_dump_is_pydantics_and_follows_every_change() -> None:
    b = BashInput(command="true", timeout=30000)
    _same(b)
    # Changed after parsing (hooks and rewrites make new inputs; a model is mutable): read afresh.
    for field, value in [
        ("command", '"}, "ran": true \udcff caf\u00e9\n'),
        ("command", _Str("sub")),
        ("timeout", True),  # pydantic writes 1
        ("timeout", _Int(5)),
        ("timeout", 2.5),
        ("timeout", None),
        ("description", "d"),
        ("run_in_background", 1),
        ("run_in_background", True),
    ]:
        setattr(b, field, value)
        _same(b)
        one = BashInput(command="true", timeout=30000)  # the change alone
        _same(one)
        setattr(one, field, value)
        _same(one)
    for model in [
        _Aliased(name="a"),
        _FieldSer(name="a"),
        _ModelSer(name="a"),
        _Computed(name="a"),
        _Excluded(name="a"),
        _Extra(name="a", more="b"),
        _Extra(name="a"),
        _Override(name="a"),
        _Nested(names=["a"]),
    ]:
        assert json_dump(model) == model.model_dump(mode="json")


async def test_a_calls_record_holds_the_input_it_ran(tmp_path: Path) -> None:
    ws, session = tmp_path / "ws", tmp_path / "session"
    ws.mkdir()
    commands = ["printf one", 'printf \'"}, "ran": false\' caf\u00e9']
    async with shellrt.Runtime(ws, "local", mode="bypassPermissions", session_dir=session) as rt:
        await _one(rt, "Bash", command=commands[0], timeout=30000)
        await _one(rt, "Bash", command=commands[1], description="second")
    lines = [json.loads(raw) for raw in (session / TRANSCRIPT_FILE).read_text().splitlines()]
    executed = [line["executed_input"] for line in lines if line.get("type") == "call"]
    assert executed == [
        {"command": commands[0], "timeout": 30000, "description": None, "run_in_background": False},
        {"command": commands[1], "timeout": None, "description": "second", "run_in_background": False},
    ]
