"""How git encodes what the checkpoint store writes: blob ids, pack entries, index lines.

Pure functions over bytes, shared by the loose-object and pack writers of
``shadow_store`` (which hash files in Python rather than through git's
filters, so undo gives back exactly the bytes that were there).
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["blob_sha", "file_content", "index_line", "pack_entry_header"]


def file_content(path: str, mode: str) -> bytes:
    """What git stores for a file: its bytes, or a link's target."""
    if mode == "120000":
        return os.fsencode(os.readlink(path))
    with open(path, "rb") as fh:
        return fh.read()


def blob_sha(data: bytes) -> str:
    """The object id git gives a blob of ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def pack_entry_header(size: int) -> bytes:
    """A pack entry header for a blob (type 3) of ``size`` bytes."""
    out = bytearray([(3 << 4) | (size & 0x0F)])
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def index_line(path: str, mode: str, sha: str) -> bytes:
    """One ``git update-index --index-info -z`` record."""
    return f"{mode} {sha}\t".encode() + os.fsencode(path) + b"\0"
