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
    saved = sorted(
        (i for i, e in enumerate(result) if e.persisted_path is not None),
        key=lambda i: model_chars(result[i]),
        reverse=True,
    )
    for index in saved:
        if total <= budget:
            break
        before = model_chars(result[index])
        shorter = _without_preview(result[index], budget)
        if model_chars(shorter) < before:
            result[index] = shorter
            total += model_chars(shorter) - before
    if total > budget:
        total = _save_whole(result, session_dir, budget, total, seen_by_commands)
    return result


def _save_whole(
    result: list[ResultEnvelope], session_dir: Path, budget: int, total: int, seen_by_commands: frozenset[str]
) -> int:
    """Pass 3: results not yet saved, largest first while ``result`` is over ``budget``, saved and
    replaced by the note alone where that is shorter (in place); the new total."""
    left = sorted(
        (i for i, e in enumerate(result) if e.persisted_path is None),
        key=lambda i: model_chars(result[i]),
        reverse=True,
    )
    for index in left:
        if total <= budget:
            break
        before = model_chars(result[index])
        if before <= _NOTE_CHARS:
            break  # sorted: no later result is larger than its note either
        commands_see = result[index].tool_name in seen_by_commands
        saved = persist_block(result[index], session_dir, commands_see=commands_see)
        if saved.persisted_path is None:
            continue  # not saved: its text stays (told nothing is lost)
        shorter = _without_preview(saved, budget)
        if model_chars(shorter) < before:
            result[index] = shorter
            total += model_chars(shorter) - before
    return total


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
