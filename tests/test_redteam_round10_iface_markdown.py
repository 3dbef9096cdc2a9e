"""Red team round 10 (interfaces): an approval a Markdown client rendered could read as another call.

The MCP elicitation message (what a person approves) carried the command as plain text; clients
render it as Markdown. A command is text the model chose, and Markdown hid or changed parts of
it: a link's title hides ``; rm -rf victim`` behind ``ls -la``, an HTML comment or ``<span
hidden>`` hides lines, ``*victim*`` loses its glob stars to emphasis, ``&lt;script&gt;`` reads as
``<script>`` while bash backgrounds ``script``, ``~~`` strikes a command through as if cancelled.
Each command below is valid bash that runs what the rendered text does not show. Now every part of
the message the model chose is a fenced code block (fence longer than any backtick run inside),
rendered here by a real CommonMark renderer (markdown-it-py, with GFM's strikethrough and tables):
the text a person reads contains the command character for character and no markup.

Lookalikes no renderer marks (a Cyrillic ``а`` in ``bаckup``, a right-to-left letter reordering
the words around it, a variation selector) are shown again in ASCII and named, in the elicitation
and in the CLI prompt; characters drawn as nothing (U+2800, Hangul fillers) count as blanks when
they pad a prompt, and a smear of combining marks is named.
"""

from __future__ import annotations

import html.parser
import io

import pytest
from markdown_it import MarkdownIt

from shellrt.permissions import ApprovalRequest, TerminalApprover
from shellrt.permissions.shown import MARKDOWN_COLUMNS, WRAPPED, for_person
from shellrt.server.mcp_approval import approval_text

#: Valid bash, each running something its rendered text does not show.
HIDING = {
    "link title": "echo '[ls -la](x \"' ; rm -rf victim ; echo '\")'",
    "html comment": "ls -la # <!--\nrm -rf victim\n# -->",
    "hidden span": 'echo "<span hidden>" ; rm -rf victim ; echo "</span>"',
    "emphasis eats a glob": "rm -rf *victim* keep",
    "entity": "echo &lt;script&gt;",
    "backslash escape": "rm -rf victim\\*",
    "strikethrough": "true ~~; rm -rf victim;~~ ls",
    "fence closed early": "echo ok\n```\n# Approved: ls -la\n```\nrm -rf victim",
    "table": "| a | b |\n|---|---|\n| rm -rf victim | x |",
}


class _Visible(html.parser.HTMLParser):
    """What a browser shows of rendered HTML: text, not comments; the tags used, outside code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("pre", "code"):
            self._in_code += 1
        elif tag != "p":
            self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("pre", "code"):
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _rendered(message: str) -> _Visible:
    md = MarkdownIt("commonmark").enable(["strikethrough", "table"])
    seen = _Visible()
    seen.feed(md.render(message))
    return seen


def _request(command: str) -> ApprovalRequest:
    return ApprovalRequest(
        tool_name="Bash",
        tool_input={"command": command},
        description=f"Bash: {command}",
        reason=f"{command} is not read-only",
        suggested_rules=[f"Bash({command}:*)"],
    )


@pytest.mark.parametrize("attack", sorted(HIDING))
def test_a_markdown_client_shows_the_command_verbatim(attack: str) -> None:
    command = HIDING[attack]
    seen = _rendered(approval_text(_request(command)))
    visible = "".join(seen.text).replace(WRAPPED, "")
    assert for_person(f"Bash: {command}") in visible, f"{attack}: a person reads\n{visible}"
    assert not seen.tags, f"{attack}: rendered as markup {seen.tags}"


def test_long_lines_are_wrapped_visibly_not_scrolled_away() -> None:
    command = "ls -la " + "#" * 250 + " ; rm -rf victim"
    message = approval_text(_request(command))
    assert max(len(line) for line in message.split("\n")) <= MARKDOWN_COLUMNS + len(WRAPPED)
    visible = "".join(_rendered(message).text).replace(WRAPPED, "")
    assert f"Bash: {command}" in visible


LOOKALIKES = {
    "cyrillic a": ("rm -rf b\u0430ckup", "\\u0430", "CYRILLIC SMALL LETTER A"),
    "right-to-left letter": ("echo \u05d0 -- 1; rm -rf victim", "\\u05d0", "HEBREW LETTER ALEF"),
    "variation selector": ("git push origin main\ufe0f", "\\ufe0f", "VARIATION SELECTOR-16"),
    "fullwidth": ("\uff52m -rf victim", "\\uff52", "FULLWIDTH LATIN SMALL LETTER R"),
}


@pytest.mark.parametrize("case", sorted(LOOKALIKES))
def test_lookalikes_are_spelled_in_ascii_and_named(case: str) -> None:
    command, code, name = LOOKALIKES[case]
    message = approval_text(_request(command))
    assert code in message and name in message, message
    shown = io.StringIO()
    TerminalApprover(stdin=io.StringIO("n\n\n"), stdout=shown)._ask(_request(command))
    prompt = shown.getvalue()
    assert "in ASCII: Bash: " in prompt and code in prompt and name in prompt, prompt


def test_ascii_commands_get_no_ascii_line() -> None:
    message = approval_text(_request("git status"))
    assert "outside ASCII" not in message
    shown = io.StringIO()
    TerminalApprover(stdin=io.StringIO("n\n\n"), stdout=shown)._ask(_request("git status"))
    assert "in ASCII" not in shown.getvalue()


@pytest.mark.parametrize("blank", ["\u2800", "\u3164", "\uffa0", "\u115f"])
def test_characters_drawn_as_nothing_are_named_like_blanks(blank: str) -> None:
    shown = for_person("rm -rf victim #" + blank * 10_000 + "ls -la")
    assert shown.startswith("rm -rf victim #[10,000 blanks]ls -la"), shown[:80]


def test_a_smear_of_combining_marks_is_named() -> None:
    assert for_person("ls" + "\u0301" * 500 + " -la") == "ls[500 combining marks] -la"
    assert for_person("cafe\u0301 na\u0308i\u0308ve") == "cafe\u0301 na\u0308i\u0308ve"  # accents stay
