"""The images a prompt mentions (``@shot.png``), read to go with it.

Every ``@`` word whose name ends like an image (``.png``, ``.jpg``, ``.jpeg``,
``.gif``, ``.webp``) is attached; the mention stays in the text, so the model
knows which file it sees. A relative path must stay inside the workspace; an
absolute path (or ``~/...``) is read as the user typed it.
"""

from __future__ import annotations

import re
from pathlib import Path

from clover_code import protocol as p
from clover_code.fs.images import IMAGE_SUFFIXES, ImageError, workspace_image

__all__ = ["attached_images", "image_mentions"]

_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING = ",;:!?)]}'\""
"""Punctuation after a mention that is not part of the path."""


def image_mentions(text: str) -> list[str]:
    """The paths of the images ``text`` mentions, in order, each once."""
    found: list[str] = []
    for match in _MENTION.finditer(text):
        path = match.group(1).rstrip(_TRAILING)
        if path.lower().endswith(IMAGE_SUFFIXES) and path not in found:
            found.append(path)
    return found


def attached_images(text: str, root: Path) -> tuple[list[p.ImageAttachment], str | None]:
    """The images ``text`` mentions, read from ``root`` (the workspace), and the
    sentence saying why one cannot be attached (then nothing should be sent)."""
    images: list[p.ImageAttachment] = []
    for path in image_mentions(text):
        try:
            images.append(p.ImageAttachment.of(*workspace_image(path, root), path))
        except ImageError as exc:
            return [], f"{exc} The prompt was not sent; it is back in the prompt box."
    return images, None
