"""Images in a turn: the user message that carries them, and whether they go to the model.

The conversation keeps every image the user attached. Each request sends them
only to a model that takes images: its ``[models]`` entry says so (``vision``),
or, left to auto, a remote model gets them until its server refuses images once
(remembered for the session, per model); a local engine never does (Clover
is text-only). A model
that takes none gets the text with a sentence in each image's place, and the
user hears once, when attaching, that the image was left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.engine.base import Backend, UserMessage
from clover_code.engine.messages import ContentPart, image_part
from clover_code.engine.models import takes_images

__all__ = ["Vision", "user_message"]


def user_message(text: str, images: Sequence[p.ImageAttachment]) -> UserMessage:
    """The user's message: ``text``, and the ``images`` as parts after it when any."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[ContentPart] = [{"type": "text", "text": text}]
    parts += [image_part(image.media_type, image.data) for image in images]
    return {"role": "user", "content": parts}


class Vision:
    """Which models take images: as configured, and as their servers said this session."""

    def __init__(self) -> None:
        self.refused: set[str] = set()
        """Models whose server refused images this session."""

    def sends(self, settings: Settings, backend: Backend) -> bool:
        """Whether this request's images go to ``backend``'s model."""
        configured = takes_images(settings, backend)
        if configured is None:
            return backend.model not in self.refused
        return configured

    def left_out(
        self, settings: Settings, backend: Backend, images: Sequence[p.ImageAttachment]
    ) -> str:
        """The one sentence saying the attached ``images`` were not sent, and why."""
        which = ", ".join(i.source for i in images if i.source) or "the image"
        if backend.name != "remote":
            why = f"the {backend.name} engine is text-only"
        elif takes_images(settings, backend) is False:
            why = "its [models] entry says vision = false"
        else:
            why = "its server refused images earlier in this session"
        return (
            f"the model {backend.model} takes no images ({why}), so the prompt went without "
            f"{which}; the image stays in the conversation for a model that takes images."
        )
