"""ACP prompt content -> the text of a user turn (pure).

Text blocks are taken as they are; a ``resource_link`` (an @-mention the
editor did not inline) becomes ``@path``; an embedded text resource (an
@-mention the editor inlined, or a selection) becomes a ``<context>`` block
naming its source. Images and audio are refused: this agent does not
advertise them.
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

__all__ = ["PromptBlock", "prompt_text", "uri_label"]

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


def prompt_text(blocks: Sequence[PromptBlock], root: Path) -> str:
    """The user's turn as one text; ``RequestError`` (invalid params) when it cannot be."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
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
                -32602, "this agent reads text only; send the prompt without images or audio."
            )
    text = "".join(parts)
    if not text.strip():
        raise RequestError(-32602, "the prompt is empty; say what the agent should do.")
    return text
