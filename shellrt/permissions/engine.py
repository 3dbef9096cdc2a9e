"""The decision engine: rules, the tool's own check, hooks' verdicts and the mode, in one fixed order.

The order (issue 6) is the security argument, so it is spelled out here and
every decision records which steps it passed in ``chain``:

1. deny — a PreToolUse hook denied, a tool-wide deny rule, or a content deny
   rule matching any subcommand/path/domain -> **deny**;
2. tool-wide ask — a hook asked, or a tool-wide ask rule -> **ask**;
3. the tool's own check — its deny is final (an exception in it is a deny);
4. content ask rules and the safety checks (git metadata writes, shell rc
   files, a recursive read over a denied path…) -> **ask**; no mode can skip
   steps 1-4;
5. the mode — ``plan`` denies anything not read-only, ``bypassPermissions``
   allows, ``acceptEdits`` allows writes inside the workspace;
6. allow — the tool's own allow, a hook's allow, a tool-wide allow rule, or
   content allow rules covering *every* item (never an ``incomplete`` subject),
   or a call the tool had no opinion on that is a local read inside the
   allowed roots (or a pure internal-state tool) -> **allow**;
7. anything left -> **ask**.

Shell tools (`CommandPartsTool`) are judged part by part (``CommandPart``):
deny and ask rules also match a part by its normalised program name, a part
whose program name is not static is denied when the tool has any deny rule
(asked when it has an ask rule), what a part reads and writes is matched
against ``Read(...)``/``Edit(...)`` rules, and writing git metadata is a safety
check. A compound is allowed at step 6 when every part is allowed by a rule or
is read-only inside the allowed reads, and every file its redirections write
may be written (acceptEdits inside the workspace, or an ``Edit(...)`` allow
rule). A part that sets a variable outside `SAFE_ENV_NAMES`, runs in the
background (``&``) or has no static name never matches an allow rule.

``dontAsk`` turns every ask into a deny. When settings could not be read
(``degraded``), steps 5 (bypass, acceptEdits) and 6 (rules, hooks, and the tool's own allow
of anything beyond the session's own state) cannot allow,
nor can a PermissionRequest hook (`shellrt.permissions.gate`): a broken file
might have held the deny rule that mattered, so only a person may allow.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from sandbox._hostcode import host_code_reason
from sandbox.confine import contained
from shellrt.analysis.code_loaders import assignments, loader_code
from shellrt.analysis.foreign_code import foreign, foreign_code, foreign_files
from shellrt.analysis.loaded_code import loaded_code, piped_commands
from shellrt.analysis.pwsh_writes import pwsh_found_code
from shellrt.analysis.unread_code import (
    command_settings,
    made_here,
    made_hook,
    modelled,
    script_files,
    unread_code,
    unread_env,
    value_code,
    value_scripts,
)
from shellrt.analysis.written_places import unpacks_unknown
from shellrt.permissions.content_anchor import unchanged
from shellrt.permissions.embedded import (
    command_options,
    git_alias_unknown,
    git_forms,
    is_dynamic,
    reads_anything,
    startup_from_stdin,
    subcommand_forms,
    unknown_code,
)
from shellrt.permissions.interfaces import CommandPart, CommandPartsTool, PermissionDecision
from shellrt.permissions.modes import PermissionMode
from shellrt.permissions.path_wrappers import spelt_forms, through_path_wrappers
from shellrt.permissions.rules import PermissionRule, RuleKind, git_metadata_reason, is_safe_env_name
from shellrt.permissions.ruleset import RuleSet
from shellrt.protocol import PermissionResult, PermissionSubject, Tool, ToolContext
from shellrt.supervisor._cd_loads import cd_loaded_reason
from shellrt.supervisor.protect import hooks_dir_reason, protected_reason

if TYPE_CHECKING:
    from shellrt.permissions.mcp_pins import McpPins

__all__ = ["DEGRADED_WHY", "PermissionEngine"]

#: Why nothing automatic allows in a degraded session (said in its asks and refusals).
DEGRADED_WHY = (
    "settings could not be read, so no rule, mode or hook may allow calls; only a person can, until "
    "the file named at the start of the session is fixed"
)


class PermissionEngine:
    """Decides allow / deny / ask for one call; never prompts (that is the gate's job)."""

    def __init__(
        self,
        rules: RuleSet,
        *,
        mode: PermissionMode = "default",
        workspace: Path,
        additional_directories: Sequence[Path] = (),
        degraded: bool = False,
    ) -> None:
        self.rules = rules
        self.mode: PermissionMode = mode
        self.workspace = workspace
        self.additional_directories = tuple(additional_directories)
        self.degraded = degraded
        #: Real paths of the files the settings' hooks run from a writable root, and of the hook
        #: scripts' directories (set by the runtime before any call): a write there or below asks in
        #: every mode, as a command's is reverted (rounds 17-18).
        self.hook_run_files: frozenset[str] = frozenset()
        #: Real paths of settings files a later session obeys from outside the workspace (the
        #: user's, ``--settings``, the trust store), where a link leads into a writable root (round 18).
        self.later_session_files: frozenset[str] = frozenset()
        #: (tool, its decision key) -> (the engine's state then, the allow decided); see `decide`.
        self._allowed: dict[tuple[object, Hashable], tuple[tuple[object, ...], PermissionDecision]] = {}
        self._mcp_pins: McpPins | None = None

    async def decide(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None = None,
    ) -> PermissionDecision:
        """Run the seven steps; the result is allow, deny or ask (never asks anyone).

        An allow is remembered when the tool names everything its decision depends on besides
        this engine (`Tool.decision_key`: the Bash tool's for a command that names no path) and
        no hook took part: the same key under the same rules, mode and roots gets the same
        allow without the steps. Asks and denies are always decided afresh; any change of the
        rules (even in place), the mode or the engine's roots makes every remembered allow
        stale, and an allow decided while that state changed (a decision awaits) is not kept.
        Nor is any allow while a remembered rule is anchored to files' content (round 18): the
        key does not see a file rewritten since.
        """
        key = _decision_key(tool, tool_input, ctx) if hook_decision is None else None
        state = self._state()
        if key is not None:
            found = self._allowed.get(key)
            if found is not None and found[0] == state:
                return found[1]
        decision = await self._decide(tool, tool_input, ctx, hook_decision=hook_decision)
        if (
            key is not None
            and decision.behavior == "allow"
            and decision.updated_input is None
            and self._state() == state
            and all(r.origin.files is None for r in self.rules.rules)  # files may change under the same key
        ):
            if len(self._allowed) >= _MAX_REMEMBERED:
                self._allowed.clear()
            self._allowed[key] = (state, decision)
        return decision

    def _state(self) -> tuple[object, ...]:
        """Everything of this engine a decision reads: compared, not versioned, because the rule
        set is a plain dataclass whose list the gate (and callers) change in place."""
        rules = self.rules
        return (
            rules,
            tuple(rules.rules),
            rules.managed_only,
            rules.home,
            self.mode,
            self.degraded,
            self.workspace,
            self.additional_directories,
        )

    async def _decide(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        ctx: ToolContext,
        *,
        hook_decision: PermissionDecision | None = None,
    ) -> PermissionDecision:
        chain: list[str] = [
            f"mode: {self.mode}" + (" (degraded: settings unreadable)" if self.degraded else "")
        ]
        name = tool.name
        try:
            subject = tool.permission_subject(tool_input)
        except Exception as exc:  # a broken subject cannot be matched: deny rules must not be dodged
            return self._final("deny", f"{name}: could not determine what this call touches ({exc})", chain)
        chain.append(_subject_step(subject))
        parts: list[CommandPart] | None = None
        parts_tool = _parts_tool(tool)
        if parts_tool is not None:
            try:
                # Off the event loop when splitting it may run git on the host (its configuration,
                # its changed files), which a hostile repository can make block until a timeout.
                may_block = getattr(tool, "command_parts_may_block", None)
                if may_block is None or may_block(tool_input):
                    parts = await anyio.to_thread.run_sync(parts_tool.command_parts, tool_input, ctx)
                else:
                    parts = parts_tool.command_parts(tool_input, ctx)
            except Exception as exc:  # what the command does is unknown: deny rules must not be dodged
                return self._final(
                    "deny", f"{name}: could not determine what this command runs ({exc}); refusing", chain
                )
            if parts is None:
                subject = subject.model_copy(update={"incomplete": True})
            else:
                chain.extend(_part_step(p) for p in parts)

        # 1. deny
        if hook_decision is not None and hook_decision.behavior == "deny":
            chain.append(f"1 deny: PreToolUse hook denied: {hook_decision.reason}")
            return self._final(
                "deny", hook_decision.reason or "denied by a PreToolUse hook", chain, source="hook"
            )
        wide = self.rules.tool_wide("deny", name)
        if wide is not None:
            return self._rule_final("deny", wide, f"{name} is denied by {wide.describe()}", chain, "1 deny")
        hit = self.rules.content_hit("deny", name, subject)
        if hit is not None:
            rule, item = hit
            return self._rule_final("deny", rule, f"{item!r} is denied by {rule.describe()}", chain, "1 deny")
        if parts:
            found = self._parts_hit("deny", name, parts)
            if found is not None:
                return self._part_final("deny", found, chain, "1 deny")
        if parts:
            tree = self._tree_write_covered("deny", name, parts)
            if tree is not None:
                chain.append(f"1 deny: {tree}")
                return self._final("deny", tree, chain, source="tool")
        if parts is None and parts_tool is not None and self._has_command_rule("deny", name):
            reason = (
                f"{name}: the command could not be fully parsed, so the {name} deny rules cannot be checked "
                "against it; fix its syntax"
            )
            chain.append(f"1 deny: {reason}")
            return self._final("deny", reason, chain, source="tool")
        chain.append("1 deny: no deny rule matched")

        # 2. tool-wide ask
        if hook_decision is not None and hook_decision.behavior == "ask":
            chain.append(f"2 ask: PreToolUse hook asked: {hook_decision.reason}")
            return self._final(
                "ask", hook_decision.reason or "a PreToolUse hook asks for approval", chain, source="hook"
            )
        wide = self.rules.tool_wide("ask", name)
        if wide is not None:
            return self._rule_final("ask", wide, f"{name} needs approval: {wide.describe()}", chain, "2 ask")
        chain.append("2 ask: no tool-wide ask rule")

        # 3. the tool's own check
        try:
            own = await tool.check_permissions(tool_input, ctx)
        except Exception as exc:
            chain.append(f"3 tool check: raised {type(exc).__name__}")
            return self._final(
                "deny", f"{name}'s permission check failed ({exc}); refusing", chain, source="tool"
            )
        chain.append(f"3 tool check: {own.behavior}" + (f" ({own.reason})" if own.reason else ""))
        if own.behavior == "deny":
            return self._final("deny", own.reason or f"{name} refused this call", chain, source="tool")
        shadowed = self._recursive_denied(name, parts or [])
        if shadowed and parts:
            parts = [p if not p.recursive else _not_read_only(p, shadowed) for p in parts]
        if shadowed and own.behavior in ("allow", "passthrough"):
            own = PermissionResult.ask(shadowed)
            chain.append(f"3 tool check: downgraded to ask ({shadowed})")

        # 4. content ask rules and safety checks
        hit = self.rules.content_hit("ask", name, subject)
        if hit is not None:
            rule, item = hit
            return self._rule_final(
                "ask", rule, f"{item!r} needs approval: {rule.describe()}", chain, "4 ask"
            )
        if parts:
            found = self._parts_hit("ask", name, parts)
            if found is not None:
                return self._part_final("ask", found, chain, "4 ask")
            unread = self._unread_code(name, parts)
            if unread is not None:
                chain.append(f"4 ask: {unread}")
                return self._final("ask", unread, chain, source="tool")
        tree_ask = self._tree_write_covered("ask", name, parts) if parts else None
        if tree_ask is not None:
            chain.append(f"4 ask: {tree_ask}")
            return self._final("ask", tree_ask, chain, source="tool")
        if parts is None and parts_tool is not None:
            unknown = self._unparsed_paths(name)
        else:
            unknown = self._unknown_read(name, parts or []) or self._unknown_write(name, parts or [])
        if unknown:
            # A read or write no path rule can judge, beside a rule that denies or asks for it.
            verdict = "deny" if self.mode in ("bypassPermissions", "dontAsk") else "ask"
            chain.append(f"4 {verdict}: {unknown}")
            return self._final(verdict, unknown, chain, source="tool")
        if shadowed:
            # A recursive read over a denied path reads it: a rule matter no mode may skip.
            chain.append(f"4 ask: {shadowed}")
            return self._final("ask", shadowed, chain, source="tool")
        metadata = self._metadata_write(subject, parts or [], ctx)
        if metadata is not None:
            chain.append(f"4 safety check: {metadata} (no mode can skip it)")
            return self._final("ask", metadata, chain, source="tool")
        if own.behavior == "ask" and own.safety_check:
            chain.append("4 safety check: asks (no mode can skip it)")
            return self._final("ask", own.reason or "safety check", chain, source="tool")
        chain.append("4 ask: no content ask rule, no safety check")

        # 5. mode
        read_only = _safe_read_only(tool, tool_input)
        if self.mode == "plan" and not read_only:
            chain.append("5 mode plan: not read-only")
            return self._final(
                "deny",
                f"plan mode: {name} would have side effects; only read-only calls run while planning",
                chain,
                source="mode",
            )
        if self.mode == "bypassPermissions" and not self.degraded:
            chain.append("5 mode bypassPermissions: allows")
            return self._final("allow", "allowed by bypassPermissions mode", chain, source="mode", own=own)
        if self.mode == "acceptEdits" and not self.degraded and self._edit_inside_workspace(subject, ctx):
            chain.append("5 mode acceptEdits: file edit inside the workspace")
            return self._final(
                "allow",
                "allowed by acceptEdits mode (edit inside the workspace)",
                chain,
                source="mode",
                own=own,
            )
        chain.append(f"5 mode {self.mode}: no effect")

        # 6. allow
        if self.degraded and own.behavior in ("allow", "passthrough") and _reaches_out(subject, parts_tool):
            # The unreadable file may have held the ``Read(...)`` deny that mattered (round 15): a
            # read or a command the tool would allow on its own is a person's to allow too.
            chain.append("6 allow: degraded; the tool's own allow does not reach paths, commands or hosts")
            own = PermissionResult.ask(f"{name} reads or runs something beyond the session's own state")
        if own.behavior == "allow":
            chain.append("6 allow: the tool's own check allows")
            return self._final(
                "allow", own.reason or f"allowed by {name}'s own check", chain, source="tool", own=own
            )
        if not self.degraded:
            if hook_decision is not None and hook_decision.behavior == "allow":
                chain.append("6 allow: a PreToolUse hook allowed (deny/ask rules were checked first)")
                return self._final(
                    "allow",
                    hook_decision.reason or "allowed by a PreToolUse hook",
                    chain,
                    source="hook",
                    own=own,
                )
            wide = self.rules.tool_wide("allow", name)
            if wide is not None and callable(getattr(tool, "approval_listing", None)):
                # An MCP tool: the rule holds only for what the server listed when it was allowed.
                pinned = await self._pinned_allow(tool, chain)
                if isinstance(pinned, str):
                    chain.append(f"6 allow: {pinned}")
                    return self._final("ask", pinned, chain, rule=wide.text, source=wide.origin.describe())
                wide = pinned
            dynamic = [p.text for p in parts or [] if not p.name and not p.assignment_only]
            if wide is not None and not subject.incomplete and not dynamic:
                return self._rule_final(
                    "allow", wide, f"allowed by {wide.describe()}", chain, "6 allow", own=own
                )
            if parts is not None and not subject.incomplete:
                covered, why = self._parts_allow(name, parts, ctx)
                if covered is not None:
                    if covered:
                        reason = "allowed by " + "; ".join(r.describe() for r in covered)
                        reason += " (every other part is read-only inside the workspace)"
                        return self._rule_final("allow", covered[0], reason, chain, "6 allow", own=own)
                    chain.append(
                        "6 allow: every part is read-only inside the workspace; its writes may be written"
                    )
                    return self._final(
                        "allow", "read-only parts; writes allowed by the mode", chain, source="mode", own=own
                    )
                chain.append(f"6 allow: {why}")
                if own.behavior != "ask" or not own.reason or why.startswith(_STALE_SAVED):
                    own = PermissionResult.ask(why)
            else:
                used = self.rules.content_allow(name, subject)
                if used:
                    first = used[0]
                    reason = "allowed by " + "; ".join(r.describe() for r in used)
                    return self._rule_final("allow", first, reason, chain, "6 allow", own=own)
                if subject.incomplete:
                    chain.append("6 allow: subject incomplete; no rule can allow it")
                else:
                    chain.append("6 allow: no allow rule covers every part")
        if own.behavior == "passthrough" and self._harmless(tool, tool_input, subject, ctx, read_only):
            chain.append("6 allow: local read-only call (or internal-state tool), the tool had no objection")
            return self._final("allow", "read-only call", chain, source="tool", own=own)

        # 7. ask
        reason = own.reason if own.behavior == "ask" and own.reason else f"no rule allows this {name} call"
        if self.degraded:
            reason += f" ({DEGRADED_WHY})"
        return self._final("ask", reason, chain, source="tool" if own.behavior == "ask" else None)

    # --- MCP tools: allows pinned to the server's listing ---------------------------------
    def mcp_pins(self) -> McpPins:
        """This session's MCP pins (made on first use: most sessions have no MCP tool)."""
        if self._mcp_pins is None:
            from shellrt.permissions.mcp_pins import McpPins

            self._mcp_pins = McpPins([self.workspace, *self.additional_directories])
        return self._mcp_pins

    async def _pinned_allow(self, tool: Tool[Any, Any], chain: list[str]) -> PermissionRule | str:
        """The first tool-wide allow rule for ``tool`` whose pin is the server's current listing, or
        why none holds. With no one to ask (`mcp_pins.NO_ONE_TO_ASK`), a rule without any pin pins
        the listing for this session (a changed listing still does not hold)."""
        unread = ""
        try:
            listing = await tool.approval_listing()  # type: ignore[attr-defined]
        except Exception as exc:  # the server cannot be reached: nothing to compare, so no rule holds
            listing, unread = None, str(exc)
        pins = self.mcp_pins()
        rules = [r for r in self.rules.of_kind("allow") if r.matches_tool(tool.name)]
        whys = []
        for rule in rules:
            why = pins.check(rule, tool.name, listing)
            if why is None:
                chain.append(f"6 allow: {rule.text} is pinned to the server's current listing of {tool.name}")
                return rule
            whys.append(why)
        from shellrt.permissions.mcp_pins import NO_ONE_TO_ASK, NO_PIN

        unpinned = [r for r, w in zip(rules, whys, strict=True) if NO_PIN in w]
        if NO_ONE_TO_ASK.get() and listing is not None and len(unpinned) == len(rules) and rules:
            pins.pin(rules[0], tool.name, listing, save=False)
            chain.append(f"6 allow: {rules[0].text} had no pin; no one to ask, so pinned for this session")
            return rules[0]
        changed = [w for w in whys if NO_PIN not in w]
        why = (changed or whys or [f"no allow rule names {tool.name}"])[0]
        return f"{why} ({unread})" if unread else why

    # --- shell command parts ---------------------------------------------------------
    def _parts_hit(
        self, kind: str, tool_name: str, parts: Sequence[CommandPart]
    ) -> tuple[PermissionRule | None, str] | None:
        """A deny/ask rule that catches a part by name, reads or writes, or a dynamic
        program name under such rules: (rule or None, reason)."""
        rule_kind: RuleKind = "deny" if kind == "deny" else "ask"
        if not self.rules.of_kind(rule_kind):
            return None  # every catch below needs a rule of this kind (a content hit or a command rule)
        has_command_rule = self._has_command_rule(rule_kind, tool_name)
        for part in through_path_wrappers(parts):  # `/usr/lib/git-core/git-push` is `git push` (round 31)
            forms = [part.text]
            if part.name and part.argv and part.argv[0] != part.name:
                forms.append(" ".join([part.name, *part.argv[1:]]))
            if part.name == "git":
                forms += git_forms(part.argv)  # `git --no-pager -C d push` runs `git push`
            else:
                forms += subcommand_forms(part.name, part.argv)  # `kubectl -n p delete` runs `kubectl delete`
            if not part.read_only:
                forms += _embedded_commands([*part.argv, part.text, *part.assigned])
            options = command_options(part.name, part.argv)
            # `psql -o '|cmd'`, `LESSOPEN='|cmd %s'`: command lines handed to `sh -c` too (round 49)
            # (env's NAME=VALUE operands are assignments too: the planner reads them, round 50)
            options += piped_commands(part.name, part.argv) + command_settings(part.assigned)
            forms += _embedded_commands([value for _, value in options])
            hit = self.rules.content_hit(
                rule_kind, tool_name, PermissionSubject(commands=tuple(forms), access="execute")
            )
            if hit is not None:
                rule, _ = hit
                return (
                    rule,
                    f"{part.text!r} (program {part.name or '?'}) is {_verb(kind)} by {rule.describe()}",
                )
            if not part.name and not part.assignment_only and has_command_rule:
                why = (
                    part.why_not
                    if part.hazard
                    else (
                        "its program name is not static (expansion, glob, quoting trick or an unknown wrapper)"
                    )
                )
                return None, (
                    f"{part.text!r}: {why}, so {tool_name} {rule_kind} rules cannot be checked against it; "
                    "write the program name literally"
                )
            code = (
                unknown_code(part.name, part.argv)
                or startup_from_stdin([*part.assigned, *part.argv])
                or part.linked_code  # `bash s`, `s -> /dev/stdin` (round 53)
            )
            if not code and part.name == "git" and self._has_git_rule(rule_kind, tool_name):
                code = git_alias_unknown(part.argv)
            if code and has_command_rule:
                return None, (
                    f"{part.text!r}: {code}, so {tool_name} {rule_kind} rules cannot be checked against it; "
                    "write the commands literally"
                )
            dynamic = [option for option, value in options if not value or is_dynamic(value)]
            if dynamic and has_command_rule:
                return None, (
                    f"{part.text!r}: {part.name} runs the value of {dynamic[0]} as a command, and that value "
                    f"is not static, so {tool_name} {rule_kind} rules cannot be checked against it; "
                    "write the command literally"
                )
            for access, paths in (("read", part.reads), ("write", (*part.writes, *part.program_writes))):
                known = tuple(p for p in paths if p)
                if not known:
                    continue
                hit = self.rules.content_hit(
                    rule_kind, tool_name, PermissionSubject(paths=known, access=access)
                )  # type: ignore[arg-type]
                if hit is not None:
                    rule, item = hit
                    what = "reads" if access == "read" else "writes"
                    return rule, f"{part.text!r} {what} {item}, which is {_verb(kind)} by {rule.describe()}"
        return None

    def _unread_code(self, tool_name: str, parts: Sequence[CommandPart]) -> str | None:
        """A part that runs code no command rule can read (an interpreter's stdin or inline program,
        a file the command itself writes), beside a deny or ask command rule: asked, never allowed.

        Why: with ``Bash(rm:*)`` denied, ``python3 - <<EOF`` and ``printf … > s; sh s`` ran
        whatever they hold in ``bypassPermissions`` mode (red team, round 29)."""
        if not (self._has_command_rule("deny", tool_name) or self._has_command_rule("ask", tool_name)):
            return None
        if tool_name == "PowerShell":  # no path is resolved: any write beside a program that finds code (round 40)
            found = pwsh_found_code(
                [((p.name, *(a.split(" ", 1)[0] for a in p.assigned)), p.text, p.argv) for p in parts if not p.assignment_only]
            )
            if found:
                return f"{found}, so {tool_name} deny and ask rules cannot be checked against it; approve it"
        # `/usr/bin/env sh <<<…` runs `sh` (round 31); a part and the forms it is spelt as are one.
        origin = [i for i, part in enumerate(parts) for _ in (part, *spelt_forms(part))]
        parts = through_path_wrappers(parts)
        # What each part writes; a part that is not read-only and names no write may write anything.
        writes = [
            (
                " ".join((p.text, *p.write_words)),  # `cat q > "$d/ls"`: the run-time target's pieces (round 45)
                (*p.writes, *p.program_writes) or (() if p.read_only or p.assignment_only else ("",)),
            )
            for p in parts
        ]
        # Parts that write a file no word names (`cp q "$p"`, `> "$d/x"`): not a program whose writes are
        # not modelled (`npm ci`), which `writes` cannot tell apart (round 39).
        # An unpacker writes what its archive names (`tar xf t.tar; pytest`: round 39, review13).
        # Bash's forms only: PowerShell's `&` marks a part's writes unknown for what it runs in the background,
        # and `Get-ChildItem & Get-Content x` then asked under a deny rule (CI108; round 26's kept command).
        unnamed = [
            tool_name == "Bash" and ("" in p.writes or "" in p.program_writes or unpacks_unknown(p.text)) for p in parts
        ]
        any_unnamed = any(unnamed)
        for i, part in enumerate(parts):
            unknown = [
                p.text for j, p in enumerate(parts) if unnamed[j] and origin[j] != origin[i] and not _nested(p, part)
            ] if any_unnamed else []
            if part.read_only and part.name:  # `git status` runs a hook, `ls` a copy on PATH (round 38)
                seen = [w for j, w in enumerate(writes) if origin[j] != origin[i] and not _nested(parts[j], part)]
                why = made_hook(part.name, part.argv, part.dirs, seen, read_only=True, unknown=unknown)
                if why:
                    return f"{part.text!r}: {why}, so {tool_name} deny and ask rules cannot be checked against it; approve it"
            if part.read_only or not part.name:
                continue
            why = unread_code(part.name, part.argv) or _values_code(part)
            if not why and not modelled(part.name):
                why = foreign_code(part.name, part.argv, part.stdin)  # a language no table names (round 30)
            scripts = script_files(part.name, part.argv)
            variables = assignments(part.assigned, part.argv[1:], part.env_names)
            if not why and (scripts or (not modelled(part.name) and foreign(part.name))):
                why = unread_env(variables)  # beside a script, or a program with no model (npm, mvn)
            # A wrapper and the part it runs are one program (``nice sh s``), not a writer of it.
            others = [
                written
                for j, written in enumerate(writes)
                if origin[j] != origin[i] and not _nested(parts[j], part)
            ]
            if not why:
                # A file a named write makes, given to a program with no model (``printf … > s; psql db
                # < s``, ``curl -o x.el …; emacs -l x.el``); unknown writes do not count here.
                named = [(text, [w for w in written if w]) for text, written in others]
                files = [] if modelled(part.name) else foreign_files(part.name, part.argv, part.stdin)
                why = made_here(files, part.dirs, named)
            if not why and part.name != "unset":
                why = loader_code(variables, part.dirs, others)  # LD_PRELOAD, PATH=., PYTHONPATH (round 30)
            if not why:
                program = part.argv[:1] if "/" in (part.argv[0] if part.argv else "") else []
                why = made_here([*scripts, *program], part.dirs, others)
            if not why:  # `git -c alias.x='!sh s'`, `PAGER='sh s' man` (round 40)
                why = made_here(value_scripts([*part.argv[1:], *part.assigned]), part.dirs, others)
            if not why:
                why = made_hook(part.name, part.argv, part.dirs, others, unknown=unknown)  # a hook it writes (round 37)
            if why:
                return (
                    f"{part.text!r}: {why}, so {tool_name} deny and ask rules cannot be checked against it; "
                    "approve it, or write the commands literally (a shell command, or a script that exists "
                    "before the call)"
                )
        return None

    def _has_git_rule(self, kind: RuleKind, tool_name: str) -> bool:
        """A command rule of ``kind`` about git (``Bash(git push:*)``): only then may an alias hide."""
        return any(
            r.spec_kind == "command" and r.tool == tool_name and (r.specifier or "").startswith("git")
            for r in self.rules.of_kind(kind)
        )

    def _has_command_rule(self, kind: RuleKind, tool_name: str) -> bool:
        return any(r.spec_kind == "command" and r.tool == tool_name for r in self.rules.of_kind(kind))

    def _read_rules(self, tool_name: str) -> list[PermissionRule]:
        """The ``Read(...)``-style deny and ask rules that apply to reads by ``tool_name``."""
        return [
            r
            for r in (*self.rules.of_kind("deny"), *self.rules.of_kind("ask"))
            if r.spec_kind == "path" and r.applies_to(tool_name, PermissionSubject(access="read"))
        ]

    def _recursive_denied(self, tool_name: str, parts: Sequence[CommandPart]) -> str | None:
        """A recursive read of a tree that holds a path a deny/ask rule covers."""
        rules = self._read_rules(tool_name)
        if not rules:
            return None
        for part in parts:
            if not part.recursive:
                continue
            for path in part.reads:
                for rule in rules:
                    if not path or rule.may_match_below(path, home=self.rules.home):
                        return (
                            f"{part.text!r} reads {path or 'an unknown path'} recursively, which may reach "
                            f"paths covered by {rule.describe()}; name the files or directories to read instead"
                        )
        return None

    def _unknown_read(self, tool_name: str, parts: Sequence[CommandPart]) -> str | None:
        """A part whose reads are not known (a dynamic path, an interpreter, a dynamic program)
        while a ``Read(...)`` deny or ask rule exists: that rule cannot be checked against it."""
        rules = self._read_rules(tool_name)
        if not rules:
            return None
        for part in parts:
            if part.name in _NO_FILE_ARGUMENTS or (part.assignment_only and "" not in part.reads):
                continue  # `$(< "$f")` has no program but reads what bash names at run time
            if not part.name or "" in part.reads or reads_anything(part.name, part.argv):
                what = (
                    f"{part.name} reads whatever its program text names"
                    if reads_anything(part.name, part.argv)
                    else "it reads a path that is not static (an expansion or a dynamic program)"
                )
                return (
                    f"{part.text!r}: {what}, so {rules[0].describe()} cannot be checked against it; "
                    "name the files literally, or use the Read tool"
                )
        return None

    def _tree_write_covered(self, kind: RuleKind, tool_name: str, parts: Sequence[CommandPart]) -> str | None:
        """A part that removes or changes a whole tree (``rm -rf .``, ``find . -delete``, ``chmod
        -R``) holding a path an ``Edit(...)`` rule of ``kind`` covers: the rule names a file
        below the target, never the target itself."""
        rules = [
            r
            for r in self.rules.of_kind(kind)
            if r.spec_kind == "path" and r.applies_to(tool_name, PermissionSubject(access="write"))
        ]
        if not rules:
            return None
        for part in parts:
            if part.name not in _TREE_WRITERS:
                continue
            for target in (*part.writes, *part.program_writes):
                if not target or not os.path.isdir(target):
                    continue
                for rule in rules:
                    if rule.may_match_below(target, home=self.rules.home):
                        return (
                            f"{part.text!r} changes everything below {target}, which holds paths covered by "
                            f"{rule.describe()}; name the files to change instead"
                        )
        return None

    def _unparsed_paths(self, tool_name: str) -> str | None:
        """A command the parser could not read whole, beside a ``Read(...)``/``Edit(...)`` deny or
        ask rule: what it reads and writes is unknown (``cat <> secret`` is valid bash the grammar
        splits), so those rules cannot be checked against it."""
        rules = self._read_rules(tool_name) or self._write_rules(tool_name)
        if not rules:
            return None
        return (
            f"{tool_name}: the command could not be fully parsed, so {rules[0].describe()} cannot be "
            "checked against what it reads or writes; fix its syntax or use the Read, Edit or Write tool"
        )

    def _write_rules(self, tool_name: str) -> list[PermissionRule]:
        return [
            r
            for r in (*self.rules.of_kind("deny"), *self.rules.of_kind("ask"))
            if r.spec_kind == "path" and r.applies_to(tool_name, PermissionSubject(access="write"))
        ]

    def _unknown_write(self, tool_name: str, parts: Sequence[CommandPart]) -> str | None:
        """A part that writes a file whose name is not known (``> $'\\x73rc/a'``, ``cp x "$d"``)
        while an ``Edit(...)`` deny or ask rule exists: that rule cannot be checked against it."""
        rules = self._write_rules(tool_name)
        if not rules:
            return None
        for part in parts:
            if "" in part.writes or "" in part.program_writes:
                return (
                    f"{part.text!r}: it writes a file whose name is not static (an expansion), so "
                    f"{rules[0].describe()} cannot be checked against it; name the file literally"
                )
        return None

    def _metadata_write(
        self, subject: PermissionSubject, parts: Sequence[CommandPart], ctx: ToolContext
    ) -> str | None:
        paths = list(subject.paths) if subject.access == "write" else []
        paths += [w for p in parts for w in p.writes if w]
        roots = tuple(str(r) for r in (ctx.allowed_roots or (ctx.workspace,)))
        for path in paths:
            why = git_metadata_reason(path)
            real = path
            if why is None:
                try:
                    real = os.path.realpath(path)
                except OSError:  # a path being swapped under us (a symlink loop): fail closed
                    return f"Writing {path}: the path could not be resolved (is it changing?); retry."
                if real != path:
                    why = git_metadata_reason(real)
            if why is None:
                why = hooks_dir_reason(path)  # a core.hooksPath directory (.husky): git's hooks too
            if why is None:
                why = cd_loaded_reason(real)  # what an .envrc or mise config loads at cd (round 19)
            if why is None and self.hook_run_files and _in_run_files(real, self.hook_run_files):
                why = "a file a hook of your settings runs on the host (the next session would run it)"
            if why is None and real in self.later_session_files:
                why = "a settings file a later session obeys (a link outside the workspace leads here)"
            if why is None:
                # Where the host's own Python imports from (a project .venv shellrt runs from): the
                # sandbox binds it read-only for commands; the file tools write on the host (round 16).
                why = host_code_reason(real, roots)
            if why is not None:
                return f"Writing {path} touches {why}."
        return None

    def _parts_allow(
        self, tool_name: str, parts: Sequence[CommandPart], ctx: ToolContext
    ) -> tuple[list[PermissionRule] | None, str]:
        """Rules used when every part is allowed by a rule or read-only inside the allowed
        reads, and every write may be written; (None, why not) otherwise."""
        used: list[PermissionRule] = []
        for part in parts:
            if part.background:
                return None, f"{part.text!r} runs in the background (&); use run_in_background instead"
            for target in part.writes:
                if not self._may_write(tool_name, target, ctx):
                    shown = target or "a file whose name is not known"
                    return None, f"{part.text!r} writes {shown}; that needs permission to write"
            if part.hazard:
                return None, f"{part.text!r}: {part.hazard}"
            unsafe = [n for n in part.env_names if not is_safe_env_name(n)]
            if part.assignment_only:
                if unsafe:
                    return None, f"{part.text!r} sets {', '.join(unsafe)}, which can change what programs run"
                continue
            # `less --lesskey-src=k`, `view -c CMD`, `nm --plugin x.so`: code from a file no rule reads (round 47)
            code = unknown_code(part.name, part.argv) or loaded_code(part.name, part.argv)
            if code:
                return None, f"{part.text!r}: {code}; no allow rule covers code it cannot read"
            options = command_options(part.name, part.argv)
            if options:
                option, value = options[0]
                return None, (
                    f"{part.text!r}: {part.name} runs the value of {option} ({value or 'not known'}) as a "
                    f"command; an allow rule for {part.name} does not cover what it runs"
                )
            rules = None
            stale: list[PermissionRule] = []
            if part.name and not unsafe:
                matched = self.rules.content_allow(
                    tool_name, PermissionSubject(commands=(part.text,), access="execute")
                )
                rules = _anchored(part, matched)
                stale = [r for r in matched or () if r.origin.source in ("local", "project") and r not in rules]
            if not rules and part.read_only:
                continue
            if not part.name:
                return None, f"{part.text!r}: its program name is not static, so no allow rule can match it"
            if unsafe:
                return None, (
                    f"{part.text!r} runs with {', '.join(unsafe)} set, which can change what it runs; "
                    "allow rules only match parts that set the variables listed in docs/permissions.md"
                )
            if not rules and stale and not part.read_only:
                return None, (
                    f"{_STALE_SAVED} {stale[0].text!r} ({stale[0].origin.describe()}) was allowed for other "
                    f"content than {part.text!r} runs now (a file it runs changed, is new, or the answer was "
                    "saved before shellrt kept what it allowed); allow it again to record this content"
                    + (
                        ", or review it and run `shellrt trust add` on the workspace again"
                        if stale[0].origin.source == "project"
                        else ""
                    )
                )
            if not rules:
                why = f" ({part.why_not})" if part.why_not else ""
                return None, f"no allow rule covers {part.text!r}, and it is not read-only{why}"
            reach = self._rule_reach(part, ctx)
            if reach:
                return None, reach
            used.extend(r for r in rules if r not in used)
        if not used and not any(p.writes for p in parts):
            # Nothing but read-only parts: the tool's verdict on the whole command stands.
            return None, "no allow rule covers this command"
        return used, ""

    def _rule_reach(self, part: CommandPart, ctx: ToolContext) -> str:
        """Why an allow rule cannot cover this part ("" when it can). A rule names a program,
        not where it may act: every path the part names (arguments, option values — ``git diff
        --output=../x``, ``cp f ~/x``) must be inside the allowed roots, and nothing it names
        or is known to write may be git metadata (``cp hook .git/hooks/pre-commit``)."""
        outside = [p for p in part.reads if not p or not self._inside_roots([p], ctx)]
        outside += [w for w in part.program_writes if not w or not self._inside_roots([w], ctx)]
        if outside:
            shown = ", ".join(p or "a path that is not known" for p in outside[:3])
            return f"{part.text!r} names {shown}, outside the workspace; an allow rule only covers work inside it"
        for path in (*part.reads, *part.program_writes):
            named = Path(path).parts
            if ".git" in named or named[-1:] in ((".gitattributes",), (".gitmodules",)):
                return f"{part.text!r} names {path}: git metadata, which an allow rule does not cover"
            protected = protected_reason(path)
            if protected is not None:
                return f"{part.text!r} names {path}: {protected}, which an allow rule does not cover"
        for path in part.program_writes:
            why = git_metadata_reason(path)
            if why is not None:
                return f"{part.text!r} writes {path}: {why}"
        return ""

    def _may_write(self, tool_name: str, target: str, ctx: ToolContext) -> bool:
        if not target:
            return False
        subject = PermissionSubject(paths=(target,), access="write")
        if self.rules.content_allow(tool_name, subject) and not self.degraded:
            return True
        return self.mode == "acceptEdits" and self._inside_roots([target], ctx)

    def _part_final(
        self, kind: str, found: tuple[PermissionRule | None, str], chain: list[str], step: str
    ) -> PermissionDecision:
        rule, reason = found
        if rule is not None:
            return self._rule_final(kind, rule, reason, chain, step)
        chain.append(f"{step}: {reason}")
        return self._final(kind, reason, chain, source="tool")

    # --- helpers ----------------------------------------------------------------
    def _harmless(
        self,
        tool: Tool[Any, Any],
        tool_input: Any,
        subject: PermissionSubject,
        ctx: ToolContext,
        read_only: bool,
    ) -> bool:
        """A passthrough call that may run unasked: a pure internal-state tool, or a read of
        paths inside the allowed roots. Network (domains, open world) and unknown reach always ask."""
        if not type(tool).touches_environment:
            return True
        if not read_only or subject.incomplete or subject.domains or subject.commands:
            return False
        try:
            if tool.is_open_world(tool_input):
                return False
        except Exception:
            return False
        return subject.access == "read" and bool(subject.paths) and self._inside_roots(subject.paths, ctx)

    def _edit_inside_workspace(self, subject: PermissionSubject, ctx: ToolContext) -> bool:
        if subject.access != "write" or not subject.paths or subject.incomplete:
            return False
        return self._inside_roots(subject.paths, ctx)

    def _inside_roots(self, paths: Sequence[str], ctx: ToolContext) -> bool:
        # Subjects carry paths the tools already resolved (in the sandbox's view, logical host form):
        # judged lexically, never re-resolved on the host — a second resolution of a tree that is
        # changing would judge another moment than the one the tool checked.
        roots = [self.workspace, *self.additional_directories, *ctx.allowed_roots]
        return contained(paths, roots, resolve=False)

    def _rule_final(
        self,
        behavior: str,
        rule: PermissionRule,
        reason: str,
        chain: list[str],
        step: str,
        *,
        own: PermissionResult | None = None,
    ) -> PermissionDecision:
        chain.append(f"{step}: {rule.describe()}")
        return self._final(behavior, reason, chain, rule=rule.text, source=rule.origin.describe(), own=own)

    def _final(
        self,
        behavior: str,
        reason: str,
        chain: list[str],
        *,
        rule: str | None = None,
        source: str | None = None,
        own: PermissionResult | None = None,
    ) -> PermissionDecision:
        if behavior == "ask" and self.mode == "dontAsk":
            chain.append("dontAsk: ask becomes deny")
            behavior = "deny"
            reason = f"{reason} (dontAsk mode: nothing is asked, so it is denied)"
        updated = own.updated_input if own is not None and behavior == "allow" else None
        return PermissionDecision(
            behavior=behavior,  # type: ignore[arg-type]
            reason=reason,
            rule=rule,
            source=source,
            updated_input=updated,
            chain=tuple(chain),
        )


def _reaches_out(subject: PermissionSubject, parts_tool: object) -> bool:
    """Whether a call touches more than the session's own state: a path, a command, a host, or
    a subject not fully known (what a degraded session's tools may no longer allow alone)."""
    return bool(
        parts_tool is not None
        or subject.paths
        or subject.commands
        or subject.domains
        or subject.incomplete
        or subject.access != "none"
    )


_SCRIPT_SPLIT = re.compile(r"[\s;&|()`<>{}]+")


def _embedded_commands(words: Sequence[str]) -> list[str]:
    """Every command a part that is not read-only may run inside it: each word (and each
    word of a script string) as a program name with what follows. A wrapper the analysis
    does not know (``fakeroot rm f``, ``script -c 'rm f'``, ``npm exec rm f``) runs its
    arguments, an option value may be a command (``-TT='rm f'``, ``alias.x='!rm f'``,
    ``--checkpoint-action=exec='rm f'``) and an assignment may store one (``x='$(rm f)'``):
    a deny rule must see them all. Over-inclusive on purpose (``git rm`` meets
    ``Bash(rm:*)``): deny and ask rules fail closed; allow rules never use this."""
    tokens: list[str] = []
    for word in words:
        tokens += [t for t in _SCRIPT_SPLIT.split(word) if t]
    forms: list[str] = []
    for i, token in enumerate(tokens):
        # Every value after an '=' may be the program: KEY=VALUE, --opt=exec=VALUE, alias.x=!VALUE.
        pieces = token.split("=")
        candidates = [token] if len(pieces) == 1 else pieces[1:]
        for candidate in candidates:
            program = candidate.strip("'\"").lstrip("!").strip("'\"")
            if not program or program.startswith("-"):
                continue
            forms.append(" ".join([os.path.basename(program) or program, *tokens[i + 1 :]]))
    return forms


#: Programs that remove or change whatever lies below a directory they are given.
_TREE_WRITERS = frozenset({"rm", "find", "chmod", "chown", "chgrp", "mv", "shred", "setfacl", "chattr"})

#: Builtins that never open their arguments: a dynamic argument is not a read.
_NO_FILE_ARGUMENTS = frozenset(
    {"echo", "printf", "true", "false", ":", "test", "[", "exit", "return", "shift"}
)


#: ``NAME=VALUE``: an assignment or an environment setting given as a word (``env GIT_PAGER=sh``).
_SETTING = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)


def _values_code(part: CommandPart) -> str:
    """Why a command the part gives as a value (an option's, a setting's) runs code no rule reads."""
    values: list[tuple[str, str | None]] = [(value, None) for _, value in command_options(part.name, part.argv)]
    values += [(m.group(2), m.group(1)) for w in (*part.assigned, *part.argv[1:]) if (m := _SETTING.fullmatch(w))]
    return next((why for value, name in values if (why := value_code(value, name))), "")


def _nested(one: CommandPart, other: CommandPart) -> bool:
    """Whether one part is a wrapper of the other (``nice sh s`` and ``sh s``), or the same words."""
    short, long = sorted((one.argv, other.argv), key=len)
    return bool(short) and long[len(long) - len(short) :] == short


def _not_read_only(part: CommandPart, why: str) -> CommandPart:
    return dataclasses.replace(part, read_only=False, why_not=why)


def _verb(kind: str) -> str:
    return "denied" if kind == "deny" else "asked for"


#: Most allow decisions one engine remembers (cleared whole when full).
_MAX_REMEMBERED = 256


def _decision_key(tool: Tool[Any, Any], tool_input: Any, ctx: ToolContext) -> tuple[object, Hashable] | None:
    """The memo key of a call (None: decide afresh). A tool whose key cannot be made, or is
    not hashable, is decided afresh rather than failing the call."""
    try:
        own = tool.decision_key(tool_input, ctx)
        if own is None:
            return None
        hash(own)
    except Exception:
        return None
    return (tool, own)


#: How the reason starts when a saved rule matched but was allowed for other content (round 21):
#: it is what the person is asked, rather than the tool's "not read-only".
_STALE_SAVED = "the saved rule"


def _anchored(part: CommandPart, rules: list[PermissionRule] | None) -> list[PermissionRule]:
    """``rules`` minus those remembered from an approval given in other directories than the
    ones ``part`` runs in: the person approved ``./run.sh`` where they saw it, not wherever the
    model's ``cd`` leads (red team round 16), nor after what it names changed (round 18: the
    model may rewrite ``run.sh`` unasked under ``acceptEdits``; round 21: nor a saved one, see
    `rule_anchors`). Other rules from settings are not anchored."""
    dirs = frozenset(part.dirs)
    return [
        r
        for r in rules or ()
        if unchanged(r.origin.files, part) and (r.origin.dirs is None or (dirs and r.origin.dirs == dirs))
    ]


def _parts_tool(tool: Tool[Any, Any]) -> CommandPartsTool | None:
    """``tool`` when it is a `CommandPartsTool` (the check the runtime-checkable protocol makes,
    without its cost: isinstance against a protocol walks every base class on each call)."""
    return tool if callable(getattr(tool, "command_parts", None)) else None  # type: ignore[return-value]


def _safe_read_only(tool: Tool[Any, Any], tool_input: Any) -> bool:
    try:
        return bool(tool.is_read_only(tool_input))
    except Exception:
        return False


def _describe_part(part: CommandPart) -> str:
    bits = [repr(part.text), f"program={part.name or '(not static)'}"]
    if part.env_names:
        bits.append("sets=" + ",".join(part.env_names))
    if part.writes:
        bits.append("writes=" + ",".join(w or "?" for w in part.writes))
    if part.reads:
        bits.append(
            "reads=" + ",".join(r or "?" for r in part.reads[:5]) + ("..." if len(part.reads) > 5 else "")
        )
    if part.recursive:
        bits.append("recursive")
    if part.background:
        bits.append("background")
    bits.append("read-only" if part.read_only else "not read-only")
    if part.hazard:
        bits.append("hazard")
    return " ".join(bits)


def _subject_step(subject: PermissionSubject) -> str:
    """The chain's ``subject:`` step; a tool that hands the same (frozen) subject again, as the
    Bash tool does for a command text it has seen, gets the text made for it before."""
    return _remembered_step(_subject_steps, subject, lambda: f"subject: {_describe_subject(subject)}")


def _part_step(part: CommandPart) -> str:
    """The chain's ``part:`` step of a (frozen) part; the same part object gets the same text."""
    return _remembered_step(_part_steps, part, lambda: f"part: {_describe_part(part)}")


def _remembered_step(steps: dict[int, tuple[object, str]], frozen: object, make: Callable[[], str]) -> str:
    """The step text made for this very object (kept alive beside its id, so the id is not reused)."""
    found = steps.get(id(frozen))
    if found is not None and found[0] is frozen:
        return found[1]
    step = make()
    if len(steps) >= 256:
        steps.clear()
    steps[id(frozen)] = (frozen, step)
    return step


#: id(subject) -> (the subject, its step); the object is kept, so its id is not reused meanwhile.
_subject_steps: dict[int, tuple[object, str]] = {}
#: id(part) -> (the part, its step), likewise.
_part_steps: dict[int, tuple[object, str]] = {}


def _describe_subject(subject: PermissionSubject) -> str:
    parts = [f"access={subject.access}"]
    if subject.commands:
        parts.append("commands=" + " | ".join(subject.commands))
    if subject.paths:
        parts.append("paths=" + ", ".join(subject.paths))
    if subject.domains:
        parts.append("domains=" + ", ".join(subject.domains))
    if subject.incomplete:
        parts.append("incomplete")
    return " ".join(parts)


def _in_run_files(real: str, run_files: frozenset[str]) -> bool:
    """Whether ``real`` is one of ``run_files`` or below one (a hook script's directory: what the
    script may load beside it, ``require('./lib')``; red team round 18)."""
    path = real
    while True:
        if path in run_files:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
