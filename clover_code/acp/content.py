"""ACP prompt content -> the text and images of a user turn (pure).

Text blocks are taken as they are; a ``resource_link`` (an @-mention the
editor did not inline) becomes ``@path``; an embedded text resource (an
@-mention the editor inlined, or a selection) becomes a ``<context>`` block
naming its source. An image block goes with the text (its type read from its
bytes: PNG, JPEG, GIF or WebP, at most 5 MiB); a model that takes no images
gets the text alone. Audio is refused: this agent does not advertise it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from clover_code import protocol as p
from clover_code.fs.images import ImageError, decode_image

__all__ = ["PromptBlock", "prompt_input", "uri_label"]

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def uri_label(uri: str, root: Path) -> str:
    """A ``file://`` URI as a path relative to ``root`` when inside it; other URIs as given."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def prompt_input(
    blocks: Sequence[PromptBlock], root: Path
) -> tuple[str, tuple[p.ImageAttachment, ...]]:
    """The user's turn: its text and its images; ``RequestError`` (invalid params) when
    it cannot be."""
    parts: list[str] = []
    images: list[p.ImageAttachment] = []
    for block in blocks:
        if isinstance(block, ImageContentBlock):
            source = uri_label(block.uri, root) if block.uri else f"image {len(images) + 1}"
            try:
                images.append(p.ImageAttachment.of(*decode_image(block.data, source), source))
            except ImageError as exc:
                raise RequestError(-32602, str(exc)) from None
        elif isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{uri_label(block.uri, root)}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            label = uri_label(resource.uri, root)
            if not isinstance(resource, TextResourceContents):
                raise RequestError(
                    -32602, f"the attached resource {label} is binary; attach text files only."
                )
            body = resource.text if resource.text.endswith("\n") else resource.text + "\n"
            parts.append(f'\n<context source="{label}">\n{body}</context>\n')
        else:
            raise RequestError(
                -32602, "this agent takes no audio; send the prompt as text (and images)."
            )
    text = "".join(parts)
    if not text.strip() and not images:
        raise RequestError(-32602, "the prompt is empty; say what the agent should do.")
    return text, tuple(images)
