"""Images attached to a prompt: their type told by their bytes, a size cap, the workspace rule."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from clover_code.fs.images import (
    MAX_IMAGE_BYTES,
    ImageError,
    decode_image,
    read_image,
    sniff_image,
    workspace_image,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xdb" + bytes(8), "image/jpeg"),
        (b"GIF89a" + bytes(8), "image/gif"),
        (b"GIF87a" + bytes(8), "image/gif"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", None),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"", None),
    ],
)
def test_the_type_comes_from_the_bytes(data: bytes, kind: str | None) -> None:
    assert sniff_image(data) == kind


def test_a_file_named_like_an_image_that_is_not_one_is_refused(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_text("not an image")
    with pytest.raises(ImageError, match=r"^shot.png is not a PNG, JPEG, GIF or WebP image"):
        read_image(tmp_path / "shot.png", "shot.png")
    (tmp_path / "real.txt").write_bytes(PNG)  # the name does not matter either way
    assert read_image(tmp_path / "real.txt") == ("image/png", PNG)


def test_too_large_missing_and_not_a_file_are_one_sentence_each(tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(PNG + bytes(MAX_IMAGE_BYTES))
    with pytest.raises(ImageError, match="larger than 5 MiB; attach a smaller one"):
        read_image(tmp_path / "big.png")
    with pytest.raises(ImageError, match="does not exist; check the path"):
        read_image(tmp_path / "gone.png")
    with pytest.raises(ImageError, match="is not a file"):
        read_image(tmp_path)
    os.mkfifo(tmp_path / "pipe.png")  # must not block the read
    with pytest.raises(ImageError, match="is not a file"):
        read_image(tmp_path / "pipe.png")


def test_a_relative_path_stays_inside_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "shot.png").write_bytes(PNG)
    outside = tmp_path / "private.png"
    outside.write_bytes(PNG)
    (root / "link.png").symlink_to(outside)
    assert workspace_image("docs/shot.png", root) == ("image/png", PNG)
    for sneaky in ("../private.png", "link.png", "docs/../../private.png"):
        with pytest.raises(ImageError, match="outside the workspace; give its absolute path"):
            workspace_image(sneaky, root)
    # Typed as an absolute path, the user names it on purpose.
    assert workspace_image(str(outside), root) == ("image/png", PNG)


def test_base64_from_an_editor_is_checked_the_same_way() -> None:
    assert decode_image(base64.b64encode(PNG).decode(), "image 1") == ("image/png", PNG)
    with pytest.raises(ImageError, match="image 1 is not valid base64"):
        decode_image("not base64!", "image 1")
    with pytest.raises(ImageError, match="image 2 is not a PNG"):
        decode_image(base64.b64encode(b"%PDF-1.7").decode(), "image 2")
    huge = base64.b64encode(PNG + bytes(MAX_IMAGE_BYTES)).decode()
    with pytest.raises(ImageError, match="larger than 5 MiB"):
        decode_image(huge, "image 3")
