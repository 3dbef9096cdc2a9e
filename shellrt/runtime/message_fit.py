"""A message's results made to fit its budget, however many calls it held.

`apply_message_budget` persists the largest results until the message fits, but leaves two kinds
as they are: results of tools with no per-call limit (Read: persisting its result alone would loop
Read -> file -> Read), and the head+tail preview each persisted result keeps (~3,000 characters).
A message of many calls stayed far above the budget (red team round 52: 200 Reads of distinct
100 KB files answered 20 MB against 200,000 characters; 500 Bash calls 1.66 MB, each persisted).

Past the first pass, in a message of more than one result (one result alone keeps what a call
alone gets: its preview, and a Read its whole text), two more, each only while the message is
still over:

1. results of the exempt tools are persisted too: the saved file, read back in a message of its
   own, is one bounded Read (no loop).
2. persisted results lose their preview (largest first): the model is told the size and the
   path, and to read the file in pages.
3. results still in the message, largest first, are saved with that note alone where the note is
   shorter: the first pass never saves a result no longer than a preview (~3,000 characters), so a
   message of many such results stayed over (red team round 53: 20 results of 2,800 characters
   answered 56,000 against 20,000).

What stays above: images (only text is persisted), results whose text is smaller than a note,
results that could not be saved, and a message of so many calls that their notes alone are over
(about 300 characters each).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from shellrt.protocol import ResultEnvelope, apply_message_budget
from shellrt.protocol.messages import ContentBlock, TextBlock
from shellrt.protocol.notes import NOTE_MARK
from shellrt.protocol.results import model_chars, persist_block

__all__ = ["fit_message"]


def fit_message(
    envelopes: list[ResultEnvelope],
    session_dir: Path,
    budget: int,
    *,
    exempt: frozenset[str],
    seen_by_commands: frozenset[str],
) -> list[ResultEnvelope]:
    """``envelopes`` (one message's results, in order) within ``budget`` characters where the
    passes above can bring them; each call keeps its result, paired, in its place."""
    result = apply_message_budget(
        envelopes, session_dir, budget, exempt=exempt, seen_by_commands=seen_by_commands
    )
    total = sum(model_chars(e) for e in result)
    if total <= budget or len(result) < 2:  # one result keeps what a call alone gets
        return result
    if exempt:
        result = apply_message_budget(result, session_dir, budget, seen_by_commands=seen_by_commands)
        total = sum(model_chars(e) for e in result)
    if total <= budget:
        return result
    saved = [i for i, e in enumerate(result) if e.persisted_path is not None]
    total = _shrink_largest(result, saved, total, budget, lambda e: _without_preview(e, budget))
    if total > budget:  # pass 3: what is still in the message, saved with the note alone
        left = [i for i, e in enumerate(result) if e.persisted_path is None]
        _shrink_largest(result, left, total, budget, lambda e: _saved_note(e, session_dir, budget, seen_by_commands))
    return result


def _shrink_largest(
    result: list[ResultEnvelope],
    indices: list[int],
    total: int,
    budget: int,
    shorten: Callable[[ResultEnvelope], ResultEnvelope | None],
) -> int:
    """The results at ``indices``, largest first while ``result`` is over ``budget``, replaced (in
    place) by ``shorten``'s form of each where that is shorter (None: left as it is); the new total."""
    for index in sorted(indices, key=lambda i: model_chars(result[i]), reverse=True):
        if total <= budget:
            break
        before = model_chars(result[index])
        shorter = shorten(result[index])
        if shorter is not None and model_chars(shorter) < before:
            result[index] = shorter
            total += model_chars(shorter) - before
    return total


def _saved_note(
    envelope: ResultEnvelope, session_dir: Path, budget: int, seen_by_commands: frozenset[str]
) -> ResultEnvelope | None:
    """``envelope`` saved, with the note alone in its place (None: no longer than a note, so not
    saved at all, or not saved: its text stays, told nothing is lost)."""
    if model_chars(envelope) <= _NOTE_CHARS:
        return None
    saved = persist_block(envelope, session_dir, commands_see=envelope.tool_name in seen_by_commands)
    return None if saved.persisted_path is None else _without_preview(saved, budget)


#: About what `_without_preview`'s note costs (its path and numbers vary): results no longer are
#: left as they are.
_NOTE_CHARS = 300


def _without_preview(envelope: ResultEnvelope, budget: int) -> ResultEnvelope:
    """``envelope`` (persisted) with its preview replaced by a note naming the size and the file."""
    text = (
        f"{NOTE_MARK} Output too large ({envelope.total_chars:,} characters); the full output is saved at "
        f"{envelope.persisted_path}. The results of this message were over their budget ({budget:,} "
        "characters), so no preview is shown: Read it in pages (Read with offset/limit) or search it with Grep."
    )
    content = envelope.model.content
    new_content: str | list[ContentBlock]
    if isinstance(content, str):
        new_content = text
    else:  # the persisted form: the preview first, then the images it kept
        new_content = [TextBlock(text=text), *[b for b in content if not isinstance(b, TextBlock)]]
    model = envelope.model.model_copy(update={"content": new_content})
    return envelope.model_copy(update={"model": model})
