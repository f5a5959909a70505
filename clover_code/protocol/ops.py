"""The operations a front end sends the core: ``Op`` and its kinds.

Re-exported by ``clover_code.protocol``. This module imports nothing else of
clover-code but the protocol's own base models.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import base64
from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field, TypeAdapter

from clover_code.protocol.base import _Message, _Op

ApprovalMode = Literal["read-only", "plan", "ask", "auto-edit", "sandbox-auto", "full-auto"]
"""What may run without asking: nothing that changes anything, nothing but reads and
the todo list while the model writes a plan, nothing without asking, file edits, file
edits and the commands a real sandbox contains, or everything. The settings, the flags
and every picker use this."""
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
"""The approval modes, strictest first (the order Shift+Tab cycles through)."""


ImageType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The kinds of image a prompt may carry (what model servers take)."""


class ImageAttachment(_Message):
    """An image the user attached to a prompt (``@shot.png``, ``--image``, an editor's
    image block): sent to a model that takes images, kept in the conversation."""

    media_type: ImageType
    """Its type, as read from its bytes."""
    data: str
    """Its bytes, base64-encoded."""
    source: str = ""
    """Where it came from, for the sentences about it: a path, or ``image 1``."""

    @classmethod
    def of(cls, media_type: str, data: bytes, source: str = "") -> "ImageAttachment":
        """The attachment of an image's bytes (``media_type`` one of ``ImageType``)."""
        encoded = base64.b64encode(data).decode("ascii")
        return cls.model_validate({"media_type": media_type, "data": encoded, "source": source})


class UserInput(_Op):
    """Start a turn with the user's text (and the images attached to it)."""

    type: Literal["user_input"] = "user_input"
    text: str
    images: tuple[ImageAttachment, ...] = ()
    """Images sent with the text to a model that takes them; a text-only model gets the
    text alone and one sentence says so."""


class Interrupt(_Op):
    """Stop the running turn at once; what arrived so far is kept."""

    type: Literal["interrupt"] = "interrupt"


class ApprovalDecision(_Op):
    """The user's answer to an ``ApprovalRequested`` event."""

    type: Literal["approval_decision"] = "approval_decision"
    request_id: str
    decision: Literal["allow_once", "allow_prefix", "allow_file", "allow_edits", "deny"]
    """``allow_file``: edits to this file, ``allow_edits``: all edits, for the session."""
    feedback: str | None = None
    """Text passed to the model with a denial."""


class SetApprovalMode(_Op):
    """Switch the approval mode for the rest of the session (``ApprovalModeChanged`` answers)."""

    type: Literal["set_approval_mode"] = "set_approval_mode"
    mode: ApprovalMode


class SetModel(_Op):
    """Use another model of the server from the next request on (``ModelChanged``
    answers, or an ``ErrorEvent`` saying why not, the model staying as it was)."""

    type: Literal["set_model"] = "set_model"
    model: str
    """A model id the server serves, or a name of the ``[models]`` table."""


class AutoCommit(_Op):
    """Commit what the agent changed in the workspace's git repository
    (``AutoCommitted`` answers, or an ``ErrorEvent`` saying why not)."""

    type: Literal["auto_commit"] = "auto_commit"
    subject: str
    """The commit message's first line."""


RewindWhat = Literal["files", "conversation", "both"]


class Undo(_Op):
    """Revert the workspace to before the last ``turns`` turns (checkpoints).

    Refused with an error event when the user changed the same files since,
    unless ``force``."""

    type: Literal["undo"] = "undo"
    turns: int = 1
    force: bool = False
    last_change: bool = False
    """Undo back to (and including) the newest turn that changed files; ``turns`` is
    then ignored."""
    what: RewindWhat = "both"
    """Restore the files, cut the conversation back to before those turns, or both."""


class AllowCheckpoints(_Op):
    """The answer to ``SessionStarted.checkpoint_warning``: snapshot the workspace
    (``allow``) or turn checkpoints (undo, diff) off for the session."""

    type: Literal["allow_checkpoints"] = "allow_checkpoints"
    allow: bool


class ShowDiff(_Op):
    """Ask for what the agent changed in the workspace this session."""

    type: Literal["show_diff"] = "show_diff"


class Compact(_Op):
    """Summarise older turns now to free context."""

    type: Literal["compact"] = "compact"


class ClearHistory(_Op):
    """Start a fresh conversation (the transcript of the old one is kept)."""

    type: Literal["clear_history"] = "clear_history"


NotificationType = Literal["permission_prompt", "idle_prompt"]
"""Why the user is told: an approval waits, or the prompt waits after a turn ended."""


class Notify(_Op):
    """The front end told the user that something waits for them (the app's desktop
    notification or bell, ACP's timer): the session runs the Notification hooks."""

    type: Literal["notify"] = "notify"
    message: str
    """What the user is told, e.g. "clover-code needs your permission to use shell"."""
    notification_type: NotificationType
    title: str = "clover-code"


class Shutdown(_Op):
    """End the session cleanly."""

    type: Literal["shutdown"] = "shutdown"


Op = Annotated[
    UserInput
    | Interrupt
    | ApprovalDecision
    | SetApprovalMode
    | SetModel
    | AutoCommit
    | Undo
    | AllowCheckpoints
    | ShowDiff
    | Compact
    | ClearHistory
    | Notify
    | Shutdown,
    Field(discriminator="type"),
]
OP_ADAPTER: TypeAdapter[Op] = TypeAdapter(Op, config=ConfigDict(defer_build=True))
