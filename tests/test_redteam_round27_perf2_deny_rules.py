"""Round 27 perf2: the post-command check's write-deny rules filtered once per rule list.

`WriteDenyGlobs.version` is asked ~4 times a command; it filtered the engine's rules each time
(~3 us over a dozen rules). Now it compares a copy of the list (and ``managed_only``) to the last
one. The attack on the cut: a rule set changed in a way a cheaper key (the list's identity and
length) would not see, so a deny rule added mid-session does not count and a command's
``new.pem`` is kept. Every kind of change must be seen at the next ask.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.permissions.rules import PermissionRule, RuleKind, RuleOrigin, parse_rule
from shellrt.permissions.ruleset import RuleSet
from shellrt.runtime.write_deny_globs import WriteDenyGlobs


class _Filtered(RuleSet):
    """A rule set of another class: its own ``of_kind`` (here: no rule counts)."""

    def of_kind(self, kind: RuleKind) -> list[PermissionRule]:
        return []


def test_every_change_to_the_rules_is_seen(tmp_path: Path) -> None:
    def rule(text: str, kind: RuleKind = "deny") -> PermissionRule:
        return parse_rule(text, kind, RuleOrigin("session", root=tmp_path))

    root = str(tmp_path)
    pem, env = f"{root}/new.pem", f"{root}/sub/.env"
    rules = RuleSet([rule("Bash(git:*)", "allow"), rule("Read(./x/**)")], home=tmp_path)
    deny = WriteDenyGlobs(rules)
    first = deny.version()
    assert deny.version() == first and deny.match(pem, root) is None

    rules.add(rule("Edit(**/*.pem)"))  # appended: one longer
    assert deny.version() != first
    assert deny.match(pem, root) == "Edit(**/*.pem)" and deny.match(env, root) is None

    rules.rules[2] = rule("Write(**/.env)")  # in place: same list, same length
    deny.version()
    assert deny.match(pem, root) is None and deny.match(env, root) == "Write(**/.env)"

    rules.rules = [rule("Edit(**/*.pem)")]  # another list
    deny.version()
    assert deny.match(pem, root) == "Edit(**/*.pem)" and deny.match(env, root) is None

    rules.rules.clear()
    deny.version()
    assert deny.match(pem, root) is None

    other = _Filtered([rule("Edit(**/*.pem)")], home=tmp_path)
    filtered = WriteDenyGlobs(other)
    filtered.version()
    assert filtered.match(pem, root) is None
