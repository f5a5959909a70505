"""The only contract between the core and its front ends.

A front end sends ``Op`` values (what the user asks for) and receives
``Event`` values (what the core reports). Both are pydantic models tagged by
a ``type`` field, so the JSONL written by ``--output-format stream-json`` is
this stream and can be read back with ``EVENT_ADAPTER`` (there each text is
sent once: block and turn-end events leave theirs out, and a final ``result``
line from ``clover_code/outcome/result.py`` follows the events).

This package imports nothing else of clover-code. ``ops`` holds the operations,
``events`` the union of the events, whose kinds are there and in
``output_events``, ``tool_events`` and ``op_results`` (all built on
``base``), and ``tool_display`` the typed details of tool results; their names
are re-exported here, so front ends use ``protocol.UserInput`` or
``protocol.FileEdit`` without knowing the module.
"""

from __future__ import annotations

from clover_code.protocol.base import new_op_id as new_op_id
from clover_code.protocol.confidence import EditConfidence as EditConfidence
from clover_code.protocol.events import EVENT_ADAPTER as EVENT_ADAPTER
from clover_code.protocol.events import Emit as Emit
from clover_code.protocol.events import ErrorEvent as ErrorEvent
from clover_code.protocol.events import Event as Event
from clover_code.protocol.events import HookRan as HookRan
from clover_code.protocol.events import Notice as Notice
from clover_code.protocol.events import SessionEnded as SessionEnded
from clover_code.protocol.events import SessionStarted as SessionStarted
from clover_code.protocol.events import SubagentEvent as SubagentEvent
from clover_code.protocol.events import TurnFinished as TurnFinished
from clover_code.protocol.events import TurnStarted as TurnStarted
from clover_code.protocol.events import TurnStatus as TurnStatus
from clover_code.protocol.op_results import ApprovalModeChanged as ApprovalModeChanged
from clover_code.protocol.op_results import AutoCommitted as AutoCommitted
from clover_code.protocol.op_results import Compacted as Compacted
from clover_code.protocol.op_results import DiffReport as DiffReport
from clover_code.protocol.op_results import ModelChanged as ModelChanged
from clover_code.protocol.op_results import ModelOption as ModelOption
from clover_code.protocol.op_results import UndoDone as UndoDone
from clover_code.protocol.ops import APPROVAL_MODES as APPROVAL_MODES
from clover_code.protocol.ops import OP_ADAPTER as OP_ADAPTER
from clover_code.protocol.ops import AllowCheckpoints as AllowCheckpoints
from clover_code.protocol.ops import ApprovalDecision as ApprovalDecision
from clover_code.protocol.ops import ApprovalMode as ApprovalMode
from clover_code.protocol.ops import AutoCommit as AutoCommit
from clover_code.protocol.ops import ClearHistory as ClearHistory
from clover_code.protocol.ops import Compact as Compact
from clover_code.protocol.ops import ImageAttachment as ImageAttachment
from clover_code.protocol.ops import ImageType as ImageType
from clover_code.protocol.ops import Interrupt as Interrupt
from clover_code.protocol.ops import NotificationType as NotificationType
from clover_code.protocol.ops import Notify as Notify
from clover_code.protocol.ops import Op as Op
from clover_code.protocol.ops import RewindWhat as RewindWhat
from clover_code.protocol.ops import SetApprovalMode as SetApprovalMode
from clover_code.protocol.ops import SetModel as SetModel
from clover_code.protocol.ops import ShowDiff as ShowDiff
from clover_code.protocol.ops import Shutdown as Shutdown
from clover_code.protocol.ops import Undo as Undo
from clover_code.protocol.ops import UserInput as UserInput
from clover_code.protocol.output_events import AnswerConfidence as AnswerConfidence
from clover_code.protocol.output_events import AnswerConfidenceDelta as AnswerConfidenceDelta
from clover_code.protocol.output_events import BlockCommitted as BlockCommitted
from clover_code.protocol.output_events import BlockDraft as BlockDraft
from clover_code.protocol.output_events import ContentDelta as ContentDelta
from clover_code.protocol.output_events import ReasoningDelta as ReasoningDelta
from clover_code.protocol.output_events import UsageReport as UsageReport
from clover_code.protocol.tool_display import DISPLAY_ADAPTER as DISPLAY_ADAPTER
from clover_code.protocol.tool_display import TASK_TOOL as TASK_TOOL
from clover_code.protocol.tool_display import BackgroundTask as BackgroundTask
from clover_code.protocol.tool_display import CommandRun as CommandRun
from clover_code.protocol.tool_display import Diagnostic as Diagnostic
from clover_code.protocol.tool_display import FileEdit as FileEdit
from clover_code.protocol.tool_display import FileRead as FileRead
from clover_code.protocol.tool_display import JobReport as JobReport
from clover_code.protocol.tool_display import JobState as JobState
from clover_code.protocol.tool_display import Listing as Listing
from clover_code.protocol.tool_display import McpCall as McpCall
from clover_code.protocol.tool_display import PatchApplied as PatchApplied
from clover_code.protocol.tool_display import RepoMapBuilt as RepoMapBuilt
from clover_code.protocol.tool_display import SearchResult as SearchResult
from clover_code.protocol.tool_display import SkillLoaded as SkillLoaded
from clover_code.protocol.tool_display import SubagentRun as SubagentRun
from clover_code.protocol.tool_display import TodoItem as TodoItem
from clover_code.protocol.tool_display import TodoList as TodoList
from clover_code.protocol.tool_display import ToolDisplay as ToolDisplay
from clover_code.protocol.tool_display import WebPage as WebPage
from clover_code.protocol.tool_display import WebSearch as WebSearch
from clover_code.protocol.tool_display import read_display as read_display
from clover_code.protocol.tool_events import ApprovalRequested as ApprovalRequested
from clover_code.protocol.tool_events import BackgroundTaskFinished as BackgroundTaskFinished
from clover_code.protocol.tool_events import JobInfo as JobInfo
from clover_code.protocol.tool_events import JobsChanged as JobsChanged
from clover_code.protocol.tool_events import TodoUpdated as TodoUpdated
from clover_code.protocol.tool_events import ToolCallFinished as ToolCallFinished
from clover_code.protocol.tool_events import ToolCallStarted as ToolCallStarted
from clover_code.protocol.tool_events import ToolOutput as ToolOutput
