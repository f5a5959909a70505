"""Images a user attaches to a prompt: read with a size cap, their type told by their bytes.

A file named ``shot.png`` is taken for what its first bytes say (PNG, JPEG,
GIF or WebP), never for its name; anything else, too large or unreadable is
refused with one sentence. ``workspace_image`` adds the app's rule: a path
typed relative to the workspace must stay inside it (symlinks followed), and
only an absolute path the user typed reaches outside.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path

from clover_code.errors import UsageError

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "ImageError",
    "decode_image",
    "read_image",
    "sniff_image",
    "workspace_image",
]

MAX_IMAGE_BYTES = 5 * 2**20
"""The largest image attached (5 MiB): what the strictest hosted servers take."""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
"""File names the app takes an ``@`` mention of for an image to attach."""

_KINDS = "PNG, JPEG, GIF or WebP"


class ImageError(UsageError):
    """An image that cannot be attached; the sentence says why and what to do."""


def sniff_image(data: bytes) -> str | None:
    """The media type ``data`` starts like (``image/png``...), or None for none we send."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _checked(data: bytes, source: str) -> str:
    """The media type of ``data``, or ``ImageError`` naming ``source``."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(
            f"the image {source} is larger than {MAX_IMAGE_BYTES // 2**20} MiB; "
            "attach a smaller one (scale or crop it)."
        )
    kind = sniff_image(data)
    if kind is None:
        raise ImageError(f"{source} is not a {_KINDS} image; attach one of those.")
    return kind


def read_image(path: Path, source: str | None = None) -> tuple[str, bytes]:
    """The media type and bytes of the image file at ``path`` (``source``: how the user
    named it, for the sentences); ``ImageError`` when it cannot be attached."""
    named = source or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the read
    except FileNotFoundError:
        raise ImageError(f"the image {named} does not exist; check the path.") from None
    except OSError as exc:
        raise ImageError(f"the image {named} cannot be read ({exc.strerror}).") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImageError(f"{named} is not a file; attach an image file.")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise ImageError(f"the image {named} cannot be read ({exc.strerror}).") from None
    finally:
        os.close(fd)
    return _checked(data, named), data


def workspace_image(typed: str, root: Path) -> tuple[str, bytes]:
    """The image the user named as ``typed`` in the app: an absolute (or ``~``) path as
    given, a relative one inside ``root`` only (``ImageError`` if it leads out)."""
    path = Path(typed).expanduser()
    if not path.is_absolute():
        real_root = Path(os.path.realpath(root))
        real = Path(os.path.realpath(root / path))
        if not real.is_relative_to(real_root):
            raise ImageError(
                f"the image {typed} is outside the workspace; give its absolute path "
                "if you mean to attach it."
            )
        path = real
    return read_image(path, typed)


def decode_image(data: str, source: str) -> tuple[str, bytes]:
    """The media type and bytes of a base64 image (an editor's image block);
    ``ImageError`` when it is not base64 or not an image we send."""
    if len(data) > (MAX_IMAGE_BYTES + 2) // 3 * 4 + 4:
        raise ImageError(
            f"the image {source} is larger than {MAX_IMAGE_BYTES // 2**20} MiB; "
            "attach a smaller one (scale or crop it)."
        )
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(
            f"the image {source} is not valid base64; send the image's bytes."
        ) from None
    return _checked(raw, source), raw
