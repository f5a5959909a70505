"""Whether a tool call may run: hooks, the approval mode's rules, and the user.

The PreToolUse hooks see a call first (they may refuse it, change its
arguments or approve it); then the approval mode and the rules decide, and
where they say "ask", a PermissionRequest hook or the user answers. A hook's
allow only spares asking: deny rules, the mode's refusals, protected paths and
the administrator's limit (``ceiling``) still stand.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ValidationError

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.permissions.approval import ApprovalRequest, Approver
from clover_code.agent.permissions.edit_preview import EditAllowance, preview_edit
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.turn.tool_call import ToolCall, rated
from clover_code.config.settings import ApprovalMode
from clover_code.errors import WorkspaceError
from clover_code.tools.base import Tool, ToolContext

log = logging.getLogger(__name__)


class CallChecks:
    """The checks before a call runs; ``ToolDispatcher`` sets what they use as it is made."""

    policy: PermissionPolicy
    approval_mode: ApprovalMode
    ceiling: ApprovalMode
    approver: Approver
    context: ToolContext
    hooks: HookRunner | None
    edits: EditAllowance
    emit: p.Emit

    def verdict(self, tool: Tool[Any], args: BaseModel) -> str:
        """What the approval mode and rules say of a call with ``args`` before anyone
        is asked: allow, ask or deny."""
        ruling = self.policy.decide(
            self.approval_mode, tool.name, tool.kind, args.model_dump(), on_host=tool.runs_on_host
        )
        return ruling.verdict

    async def _pre_tool_hooks(
        self, call: ToolCall, tool: Tool[Any], args: BaseModel
    ) -> tuple[BaseModel, str | None, bool]:
        """Run the PreToolUse hooks: the arguments to use, a refusal, and whether
        a hook approved the call (which only spares asking the user)."""
        assert self.hooks is not None
        data = {"tool_name": tool.name, "tool_input": call.arguments}
        outcome = await self.hooks.run("PreToolUse", data, tool=tool.name)
        if outcome.blocked:
            return args, f"refused by a PreToolUse hook: {outcome.reason}", False
        if outcome.tool_input is not None:
            replaced = _replaced(call, tool, outcome.tool_input, "PreToolUse")
            if isinstance(replaced, str):
                return args, replaced, False
            args = replaced
        return args, None, outcome.approved

    async def _approve(
        self,
        call: ToolCall,
        tool: Tool[Any],
        args: BaseModel,
        summary: str,
        approved: bool = False,
        *,
        ask_hooks: bool = True,
    ) -> tuple[str | None, BaseModel]:
        """None when the call may run, else the refusal the model sees; and the
        arguments it runs with (a PermissionRequest hook's allow may change them).

        ``approved`` (a PreToolUse hook's "approve") and a PermissionRequest hook's
        allow spare asking the user, never more: deny rules, the mode's refusals,
        protected paths and the administrator's limit still stand."""
        arguments = args.model_dump()
        command = arguments.get("command")
        shell = tool.name == "shell" and isinstance(command, str)
        command = command if isinstance(command, str) else ""
        ruling = self.policy.decide(
            self.approval_mode, tool.name, tool.kind, arguments, on_host=tool.runs_on_host
        )
        if ruling.verdict == "allow":
            return None, args
        if ruling.verdict == "deny":
            return f"refused: {ruling.reason}", args
        path = arguments.get("path") if tool.kind == "edit" else None
        if isinstance(path, str):
            try:  # a write the tool will refuse anyway is refused before anyone is asked
                self.context.workspace.resolve(path, write=True)
            except WorkspaceError as exc:
                return f"refused: {exc}.", args
        if approved and self._hook_may_allow(tool, arguments):
            return None, args
        if self.edits.covers(path):
            return None, args
        from clover_code.agent.extensions.hook_calls import permission_request

        hooked = await permission_request(
            self.hooks if ask_hooks else None, tool.name, call.arguments
        )
        if hooked.behavior == "deny":
            why = hooked.message or "no reason given."
            return f"denied by a PermissionRequest hook: {why}", args
        if hooked.behavior == "allow" and hooked.tool_input is not None:
            # The call as the hook changed it is judged again, from the start; where
            # its allow cannot be taken, the user is asked about the changed call.
            replaced = _replaced(call, tool, hooked.tool_input, "PermissionRequest")
            if isinstance(replaced, str):
                return replaced, args
            changed = headline(tool, replaced)
            self.emit(
                p.Notice(text=f"a PermissionRequest hook changed the {tool.name} call: {changed}")
            )
            return await self._approve(call, tool, replaced, summary, True, ask_hooks=False)
        if hooked.behavior == "allow" and self._hook_may_allow(tool, arguments):
            return None, args
        prefix = self.policy.session_prefix(command) if shell else None
        # Only approvers that show it get the dry run (an editor's would cost a file read).
        preview = await preview_edit(tool, args, self.context) if self.approver.shows_diff else None
        answer = await self.approver.request(
            ApprovalRequest(
                call.id,
                tool.name,
                tool.kind,
                summary,
                call.arguments,
                prefix,
                protected=ruling.protected,
                diff=preview.diff if preview else None,
                preview=preview,
                low_confidence=rated(call, tool, preview.diff if preview else None),
                mode_allows=self.approval_mode == "full-auto" and not ruling.protected,
            )
        )
        if answer.allowed:
            if answer.remember_prefix and shell:
                self.policy.allow_for_session(answer.remember_prefix)
            self.edits.remember(answer.remember_edits, path)
            return None, args
        reason = answer.feedback or "the user did not allow this call."
        return f"denied: {reason} ({ruling.reason})", args

    def _hook_may_allow(self, tool: Tool[Any], arguments: dict[str, Any]) -> bool:
        """Whether a hook's allow may spare asking: where the ceiling mode would run the
        call without asking (else a notice says why not)."""
        ruling = self.policy.decide(
            self.ceiling, tool.name, tool.kind, arguments, on_host=tool.runs_on_host
        )
        if ruling.verdict != "allow":
            self.emit(
                p.Notice(text=f"a hook's allow of {tool.name} was not taken: {ruling.reason}")
            )
        return ruling.verdict == "allow"


def _replaced(
    call: ToolCall, tool: Tool[Any], arguments: dict[str, Any], hook: str
) -> BaseModel | str:
    """A hook's replacement for the call's arguments, screened and validated like the
    model's own (then they are the call's); else the refusal the model sees."""
    screened = tool.screen(arguments)
    try:
        if screened.problem:
            raise ValueError(screened.problem)
        args: BaseModel = tool.Args.model_validate(screened.arguments)
    except (ValidationError, ValueError) as exc:
        why = f"{exc.error_count()} errors" if isinstance(exc, ValidationError) else exc
        return f"refused: a {hook} hook gave invalid arguments ({why})."
    call.arguments = screened.arguments
    return args


def headline(tool: Tool[Any], args: BaseModel) -> str:
    """The call's one-line summary for cards and notices (the tool's name where the
    tool fails to make one: only the label is lost, the call itself can go on)."""
    try:
        return tool.summary(args)
    except Exception:
        log.debug("summary of %s failed", tool.name, exc_info=True)
        return tool.name
