"""A long run of combining marks in a field of a people face (a diff line, a Grep match, a file name)
stacks into a smear over the lines above and below it, hiding them from the person approving a
change (round 39's Left, tools). Prompts name such runs (`for_person`, round 10); the people faces
(`for_people`) now do too, with the same rule."""

from __future__ import annotations

from shellrt.permissions.shown import for_person
from shellrt.tools._people import for_people

_SMEAR = "\u0301\u0302\u0303\u0304\u0305\u0306" * 40  # 240 marks on one letter


def test_a_diff_line_with_a_smear_of_marks_names_the_run() -> None:
    """Failed before: the 240 marks were printed as they were."""
    shown = for_people(f"+ x{_SMEAR} = 1")
    assert shown == "+ x[240 combining marks] = 1"


def test_a_letter_with_its_accents_is_kept() -> None:
    assert for_people("re\u0301sume\u0301 \u1ec7\u0302") == "re\u0301sume\u0301 \u1ec7\u0302"


def test_people_faces_and_prompts_name_runs_alike() -> None:
    for text in (
        f"a{_SMEAR}",
        "\u0301" * 5,
        "\u0301" * 4 + "b",
        f"{_SMEAR}\u20dd" * 2,
        "x\u20dd\u20dd\u20dd\u20dd\u20dd",
    ):
        assert for_people(text) == for_person(text), text
