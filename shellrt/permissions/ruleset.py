"""The effective set of rules from every source, and the three questions the engine asks of it.

Precedence between sources does not matter for rule *kinds*: a deny from any
source beats an ask from any source beats an allow from any source. What a
source can change is whether lower sources may allow at all: with the managed
flag ``allowManagedPermissionRulesOnly``, allow rules from every non-managed
source (session rules included) are ignored. Deny and ask rules from lower
sources still apply — they can only narrow access.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from shellrt.permissions.caller_home import caller_home
from shellrt.permissions.hosts import address_entry
from shellrt.permissions.rules import PermissionRule, RuleKind
from shellrt.protocol import PermissionSubject

__all__ = ["RuleSet"]


@dataclass
class RuleSet:
    """Rules in source-precedence order (managed first, session last)."""

    rules: list[PermissionRule] = field(default_factory=list)
    #: Managed policy forbids lower sources from allowing.
    managed_only: bool = False
    #: Home directory for ``~/`` specifiers.
    home: Path = field(default_factory=caller_home)

    def add(self, rule: PermissionRule) -> None:
        self.rules.append(rule)

    def effective(self) -> list[PermissionRule]:
        """Rules that take part in decisions (drops lower-source allows under managed-only)."""
        return [r for r in self.rules if not self.ignored(r)]

    def ignored(self, rule: PermissionRule) -> bool:
        return self.managed_only and rule.kind == "allow" and rule.origin.source != "managed"

    def of_kind(self, kind: RuleKind) -> list[PermissionRule]:
        if not self.rules:
            return []  # a session without rules: the engine asks this a dozen times per decision
        return [r for r in self.effective() if r.kind == kind]

    def tool_wide(self, kind: RuleKind, tool_name: str) -> PermissionRule | None:
        """The first tool-wide rule of ``kind`` naming this tool."""
        for rule in self.of_kind(kind):
            if rule.matches_tool(tool_name):
                return rule
        return None

    def content_hit(
        self, kind: RuleKind, tool_name: str, subject: PermissionSubject
    ) -> tuple[PermissionRule, str] | None:
        """A deny/ask content rule matching *any* item of the subject (literal or resolved path).

        One matching subcommand or path is enough: a compound command with one
        denied part is denied as a whole.
        """
        for rule in self.of_kind(kind):
            if not rule.applies_to(tool_name, subject):
                continue
            for item in rule.subject_items(subject):
                forms = _command_forms(item) if rule.spec_kind == "command" else (item,)
                if any(rule.match_item(form, home=self.home, resolve=False) for form in forms):
                    return rule, item
        return None

    def barred_addresses(self, tool_name: str) -> tuple[tuple[str, PermissionRule], ...]:
        """The addresses and ranges deny, then ask, domain rules name for ``tool_name``, and the
        names deny rules name, with their rule: a tool that resolves names itself refuses such an
        answer (or one of a denied name's answers), whatever name led there (the rules judged the
        URL's name only; red team round 28)."""
        found: list[tuple[str, PermissionRule]] = []
        for rule in (*self.of_kind("deny"), *self.of_kind("ask")):
            if rule.spec_kind != "domain" or rule.specifier is None or rule.tool != tool_name:
                continue
            entry = rule.specifier[len("domain:") :]
            if address_entry(entry) or rule.kind == "deny":
                found.append((entry, rule))
        return tuple(found)

    def content_allow(self, tool_name: str, subject: PermissionSubject) -> list[PermissionRule] | None:
        """Allow rules covering *every* item of the subject (resolved paths only), or None.

        An incomplete subject, or one with nothing to match, is never allowed
        by a content rule.
        """
        if subject.incomplete:
            return None
        allows = [r for r in self.of_kind("allow") if r.applies_to(tool_name, subject)]
        if not allows:
            return None
        used: list[PermissionRule] = []
        kinds = {r.spec_kind for r in allows}
        covered_any = False
        for spec_kind in ("command", "path", "domain"):
            if spec_kind not in kinds:
                continue
            rules = [r for r in allows if r.spec_kind == spec_kind]
            items = rules[0].subject_items(subject)
            if not items:
                continue
            for item in items:
                hit = next((r for r in rules if r.match_item(item, home=self.home, resolve=True)), None)
                if hit is None:
                    return None
                if hit not in used:
                    used.append(hit)
            covered_any = True
        if not covered_any:
            return None
        # Every kind of item the subject carries must be covered, not just one of them.
        for spec_kind, items in (
            ("command", subject.commands),
            ("path", subject.paths),
            ("domain", subject.domains),
        ):
            if items and spec_kind not in kinds:
                return None
        return used


def _command_forms(command: str) -> tuple[str, ...]:
    """The command as written and, when its program is given by path (``/bin/rm``), by name:
    deny and ask rules match either (allow rules only the text as written)."""
    words = command.split(" ", 1)
    if "/" in words[0] and not words[0].endswith("/"):
        return (command, " ".join([words[0].rsplit("/", 1)[1], *words[1:]]))
    return (command,)
