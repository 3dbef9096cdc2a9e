"""The rules gate: the engine decides; an ask goes to PermissionRequest hooks, then the approver.

Fail closed at every step: no approver (headless) -> deny after the hooks had
their chance; an approver that raises -> deny; a remembered rule that cannot
be saved -> the call is still allowed once, and a diagnostic says why it was
not remembered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from shellrt.permissions.call_approval import note_decision
from shellrt.permissions.content_anchor import named_files, python_module
from shellrt.permissions.engine import DEGRADED_WHY, PermissionEngine
from shellrt.permissions.errors import RuleSyntaxError, SettingsWriteError
from shellrt.permissions.interfaces import (
    ApprovalRequest,
    ApprovalResponse,
    Approver,
    CommandPart,
    HookRunner,
    NoHooks,
    PermissionDecision,
    PermissionGate,
)
from shellrt.permissions.mcp_pins import NO_ONE_TO_ASK, NO_PIN
from shellrt.permissions.persist import UNCHECKED, save_allow_rules
from shellrt.permissions.rule_anchors import ANCHORED_TOOLS, record_anchors
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.suggest import suggest_rules
from shellrt.protocol import PermissionSubject, Tool, ToolContext
from shellrt.protocol.revalidated import revalidated

__all__ = ["RulesGate"]


class RulesGate(PermissionGate):
    """`PermissionGate` over the rules engine, hooks and an optional approver."""

    def __init__(
        self,
        engine: PermissionEngine,
        *,
        approver: Approver | None = None,
        hooks: HookRunner | None = None,
        local_settings: Path | None = None,
        diagnostics: list[str] | None = None,
    ) -> None:
        self.engine = engine
        self.approver = approver
        self.hooks = hooks or NoHooks()
        self.local_settings = local_settings
        #: What ``local_settings`` must hold before an answer is added to it (its digest when the
        #: session started, then what shellrt last wrote); `UNCHECKED` merges into any content.
        self.local_settings_digest: str | None = UNCHECKED
        self.diagnostics = diagnostics if diagnostics is not None else []
        #: The store an answer's anchors were last written to (`rule_anchors`), for the runtime.
        self.anchors_written: Path | None = None

    def is_visible(self, tool: Tool[Any, Any]) -> bool:
        return self.engine.rules.tool_wide("deny", tool.name) is None

    def barred_addresses(self, tool_name: str) -> tuple[tuple[str, str, bool], ...]:
        found = self.engine.rules.barred_addresses(tool_name)
        return tuple((entry, rule.describe(), rule.kind == "ask") for entry, rule in found)

    async def authorize(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None = None,
        approved_input: dict[str, Any] | None = None,
    ) -> PermissionDecision:
        decision = await self._authorize(
            tool, tool_input, ctx, hook_decision=hook_decision, approved_input=approved_input
        )
        # For the call: a rule naming its programs runs them from outside writable roots (round 27).
        note_decision(tool.name, getattr(tool_input, "command", None), decision, self.engine.rules)
        return decision

    async def _authorize(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None,
        approved_input: dict[str, Any] | None,
    ) -> PermissionDecision:
        # Someone to ask: an unpinned MCP rule asks; no one (headless, a client that cannot elicit):
        # it pins what the server lists on first use, for the session (round 21).
        can_ask = getattr(self.approver, "can_ask", None)
        token = NO_ONE_TO_ASK.set(self.approver is None or (callable(can_ask) and not can_ask()))
        try:
            decision = await self.engine.decide(tool, tool_input, ctx, hook_decision=hook_decision)
        finally:
            NO_ONE_TO_ASK.reset(token)
        if decision.behavior != "ask":
            return decision
        chain = list(decision.chain)
        input_dict: dict[str, Any] = tool_input.model_dump(mode="json")
        if approved_input is not None and approved_input == input_dict:
            # The approver wrote this very input while answering for this call: that was its answer.
            chain.append("approver: allow (it wrote this input)")
            return _decision("allow", "approved by the user (who wrote this input)", chain, decision, "user")
        request = await self.hooks.permission_request(tool.name, input_dict, ctx, reason=decision.reason)
        chain += [f"PermissionRequest notice: {n.hook}: {n.message}" for n in request.notices]
        if request.behavior == "deny":
            chain.append(f"PermissionRequest hook: deny ({request.message})")
            return _decision(
                "deny", request.message or "denied by a PermissionRequest hook", chain, decision, "hook"
            )
        if request.behavior == "allow" and self.engine.degraded:
            # Degraded (a settings file could not be read): an automatic allow may be the one its
            # lost deny rule stopped. Only a person decides now (red team, round 14).
            chain.append(f"PermissionRequest hook: allow ignored ({DEGRADED_WHY})")
        elif request.behavior == "allow":
            chain.append(f"PermissionRequest hook: allow ({request.message})")
            return _decision(
                "allow",
                request.message or "allowed by a PermissionRequest hook",
                chain,
                decision,
                "hook",
                updated_input=request.updated_input,
            )
        if self.approver is None:
            chain.append("approver: none (headless) -> deny")
            return _decision(
                "deny",
                f"Permission to use {tool.name} was not granted: {decision.reason}. No one is available to "
                "approve it (headless); add an allow rule (see `shellrt permissions check`) or run with a "
                "permission mode that allows it.",
                chain,
                decision,
                decision.source,
            )
        try:
            subject = tool.permission_subject(tool_input)
            suggestions = suggest_rules(tool.name, subject)
            description = tool.describe(tool_input)
        except Exception:
            suggestions, description = [], tool.name
        listing = await _listing(tool)  # what the server lists as the person is asked: what an answer pins
        try:
            answer = await self.approver(
                ApprovalRequest(
                    tool_name=tool.name,
                    tool_input=input_dict,
                    description=description,
                    reason=decision.reason,
                    suggested_rules=suggestions,
                    cwd=ctx.cwd,
                )
            )
            # Validated again: `model_construct` / `model_copy(update=...)` skip it, and a ``behavior``
            # of "no" or False was an allow below, a ``remember`` outside its values a scope (round 35).
            answer = revalidated(answer, (ApprovalResponse,), "approver answer")
        except Exception as exc:
            chain.append(f"approver: failed ({type(exc).__name__}: {exc}) -> deny")
            return _decision(
                "deny", f"The approval prompt failed ({exc}); the call was not run.", chain, decision, None
            )
        if answer.behavior == "deny":
            chain.append("approver: deny")
            return _decision("deny", answer.message or "The user denied this call.", chain, decision, "user")
        chain.append(f"approver: allow ({answer.remember})")
        if listing is not None and answer.remember == "once" and NO_PIN in decision.reason:
            # A rule with no pin stands; the person allowed the tool as listed now: that pins it for the
            # session (a changed listing is re-pinned by a "session" or "always" answer only).
            self._pin(tool.name, listing, "session", chain)
        if answer.remember != "once" and suggestions:
            if answer.updated_input is not None:
                # The rules were made from the input the person replaced: remembering them would
                # allow that input next time, unasked (red team round 16).
                chain.append("not remembered: the approver rewrote the input; the answer holds for this call")
                self.diagnostics.append(
                    f"did not remember {suggestions}: the approver rewrote the input, so the answer "
                    "was for its own input, not for these rules; add a rule yourself to allow always"
                )
            elif _feeds_stdin(tool, tool_input):
                # A rule names a part's words, not what it reads on stdin: allowing ``python3`` always
                # (from ``python3 <<EOF … EOF``) allowed it with any code there (round 17).
                why = (
                    "not remembered: the command feeds a program's standard input (a pipe, here-document, "
                    "here-string or '<' file), which a rule cannot name, so a rule would allow that program "
                    "with any input; the answer holds for this call"
                )
                chain.append(why)
                self.diagnostics.append(f"did not remember {suggestions}: {why}")
            else:
                scope = answer.remember
                relative = _relative_file(tool, tool_input, ctx) if scope == "project" else None
                if relative is not None:
                    # A saved rule holds in every directory; the session's copy is anchored (round 17).
                    scope = "session"
                    why = (
                        f"remembered for this session only, not saved for the project: the command names "
                        f"{relative!r} relative to its directory, and a saved rule would allow the same "
                        "words in every directory (another file of that name); add a rule yourself to allow always"
                    )
                    chain.append(why)
                    self.diagnostics.append(f"{suggestions}: {why}")
                dirs, files = _approved_anchors(tool, tool_input, ctx)
                self._remember(scope, suggestions, chain, dirs, files)
                if answer.remember == "project" and files is not None:
                    self._pin_saved(tool, tool_input, ctx, files, chain)
                if listing is not None:
                    # A saved rule names the tool only; its pin names what the server listed (round 21).
                    self._pin(tool.name, listing, scope, chain)
        return _decision(
            "allow", "approved by the user", chain, decision, "user", updated_input=answer.updated_input
        )

    def _pin(self, tool_name: str, listing: Any, scope: str, chain: list[str]) -> None:
        """Pin ``listing`` to every allow rule naming ``tool_name`` (saved for rules from a settings
        file when the answer was "always", else for this session): the answer re-pins them all."""
        pins = self.engine.mcp_pins()
        for rule in self.engine.rules.of_kind("allow"):
            if not rule.matches_tool(tool_name):
                continue
            save = scope == "project" and rule.origin.file is not None
            why = pins.pin(rule, tool_name, listing, save=save)
            if why is not None:
                self.diagnostics.append(f"pinned {rule.text} for this session only: {why}")
            chain.append(f"pinned {rule.text} to the server's listing of {tool_name}" + (" (saved)" if save and why is None else ""))

    def remember(self, scope: str, rules: list[str]) -> None:
        """Add allow rules for this session (``session``) or save them for the project (``project``)."""
        self._remember(scope, rules, [])

    def _remember(
        self,
        scope: str,
        rules: list[str],
        chain: list[str],
        dirs: frozenset[str] | None = None,
        files: frozenset[tuple[str, str]] | None = None,
    ) -> None:
        """``dirs``: where the approved call ran; the rules then cover command parts run there only.
        ``files``: what it named, fingerprinted; the rules then cover parts naming those, unchanged."""
        source = "session"
        if scope == "project" and self.local_settings is not None:
            try:
                self.local_settings_digest = save_allow_rules(
                    self.local_settings, rules, expected_digest=self.local_settings_digest
                )
                source = "local"
                chain.append(f"remembered in {self.local_settings}: {', '.join(rules)}")
            except SettingsWriteError as exc:
                self.diagnostics.append(f"could not remember {rules} for the project: {exc}")
                chain.append(f"could not save to project settings ({exc}); remembered for this session")
        else:
            chain.append(f"remembered for this session: {', '.join(rules)}")
        file = self.local_settings if source == "local" else None
        origin = RuleOrigin(source, file, None, self.engine.workspace, dirs, files)
        added = []
        for text in rules:
            try:
                added.append(parse_rule(text, "allow", origin))
            except RuleSyntaxError as exc:
                self.diagnostics.append(f"could not remember {text!r}: {exc}")
        if file is not None and files is not None:
            self._record_anchors(file, [r.text for r in added if r.tool in ANCHORED_TOOLS], files, chain)
        for rule in added:
            self.engine.rules.add(rule)

    def _pin_saved(
        self, tool: Tool[Any, Any], tool_input: Any, ctx: ToolContext, files: frozenset[tuple[str, str]], chain: list[str]
    ) -> None:
        """Record ``files`` for the saved rules that match this approved call's parts (a hand-written
        ``Bash(./scripts/*)``, one saved before round 21): the person allowed this content always,
        and such a rule asked because nothing was recorded for it ("ask once, then pin")."""
        try:
            parts: list[CommandPart] = tool.command_parts(tool_input, ctx) or []  # type: ignore[attr-defined]
        except Exception:
            return
        by_file: dict[Path, list[str]] = {}
        for part in parts:
            if not part.name:
                continue
            subject = PermissionSubject(commands=(part.text,), access="execute")
            for rule in self.engine.rules.content_allow(tool.name, subject) or ():
                origin = rule.origin
                if origin.source == "local" and origin.file is not None and origin.dirs is None and origin.files is not None:
                    by_file.setdefault(origin.file, []).append(rule.text)
        for file, texts in by_file.items():
            self._record_anchors(file, sorted(set(texts)), files, chain)

    def _record_anchors(
        self, file: Path, texts: list[str], files: frozenset[tuple[str, str]], chain: list[str]
    ) -> None:
        """Keep what saved command rules allowed outside the workspace (`rule_anchors`): a later
        session obeys them only while that code is unchanged (round 21)."""
        if not texts:
            return
        try:
            rel = file.relative_to(self.engine.workspace).as_posix()
        except ValueError:
            rel = file.name
        self.anchors_written = record_anchors(self.engine.workspace, rel, texts, files)
        if self.anchors_written is None:
            why = "could not record what they allowed outside the workspace; a later session asks again"
            self.diagnostics.append(f"{texts}: {why}")
            chain.append(why)


async def _listing(tool: Tool[Any, Any]) -> Any:
    """An MCP tool's current listing digests (`McpProxyTool.approval_listing`), else None."""
    get = getattr(tool, "approval_listing", None)
    if not callable(get):
        return None
    try:
        return await get()
    except Exception:
        return None


def _approved_anchors(
    tool: Tool[Any, Any], tool_input: Any, ctx: ToolContext
) -> tuple[frozenset[str] | None, frozenset[tuple[str, str]] | None]:
    """Where an approved shell call runs (its parts' directories; empty: not known, so a rule
    anchored there covers nothing) and what its parts name there, fingerprinted (round 18:
    a file rewritten after the answer is not what the person approved); (None, None) for a tool
    with no command parts (its rules name absolute paths or hosts, the same wherever it runs)."""
    command_parts = getattr(tool, "command_parts", None)
    if not callable(command_parts):
        return None, None
    try:  # the engine's judgement of this very input, a moment ago (kept on it): no second look
        parts: list[CommandPart] | None = command_parts(tool_input, ctx)
    except Exception:
        parts = None
    dirs = frozenset(d for part in parts or () for d in part.dirs)
    return dirs, frozenset(f for part in parts or () for f in named_files(part))


def _feeds_stdin(tool: Tool[Any, Any], tool_input: Any) -> bool:
    """Whether a Bash call gives one of its programs standard input that its words do not name
    (``|``, ``|&``, ``<``, ``<<``, ``<<<``), or cannot be parsed to tell."""
    command = getattr(tool_input, "command", None)
    if tool.name != "Bash" or not isinstance(command, str):
        return False
    from shellrt.analysis import analyze

    plan = analyze(command).plan
    if plan is None:
        return True
    if any(op in ("|", "|&") for op in plan.operators) or plan.heredocs:
        return True
    return any(r.op.startswith("<") and not r.op.startswith("<>") for r in plan.redirects)


def _relative_file(tool: Tool[Any, Any], tool_input: Any, ctx: ToolContext) -> str | None:
    """A word of the approved shell call that means a file relative to where it runs (a path with
    a ``/`` not from the root or home, a leading ``.``, a name that exists in one of its
    directories, or a ``python3 -m`` module found there), or ``"(directory not known)"``; None
    when there is none or the tool has no parts."""
    command_parts = getattr(tool, "command_parts", None)
    if not callable(command_parts):
        return None
    try:
        parts: list[CommandPart] | None = command_parts(tool_input, ctx)
    except Exception:
        parts = None
    if not parts:
        return "(its parts are not known)"
    for part in parts:
        if part.assignment_only:
            continue
        if not part.dirs:
            return "(a directory not known)"
        module = python_module(part)  # ``-m tool`` runs ./tool.py (round 18)
        stem = module.replace(".", "/")
        if module and any(
            os.path.lexists(os.path.join(d, name)) for d in part.dirs for name in (f"{stem}.py", stem)
        ):
            return module
        for word in part.argv:
            path = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
            if not path or path.startswith(("/", "~", "-")):
                continue
            if "/" in path or path.startswith(".") or any(
                os.path.lexists(os.path.join(d, path)) for d in part.dirs
            ):
                return word
    return None


def _decision(
    behavior: str,
    reason: str,
    chain: list[str],
    asked: PermissionDecision,
    source: str | None,
    *,
    updated_input: dict[str, Any] | None = None,
) -> PermissionDecision:
    return PermissionDecision(
        behavior=behavior,  # type: ignore[arg-type]
        reason=reason,
        rule=asked.rule,
        source=source,
        updated_input=updated_input,
        chain=tuple(chain),
    )
