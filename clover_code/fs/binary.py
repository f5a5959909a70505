"""Telling binary files from text by their first bytes."""

from __future__ import annotations

__all__ = ["BINARY_SAMPLE", "looks_binary"]

BINARY_SAMPLE = 8192
"""How many leading bytes decide whether a file is binary."""


def looks_binary(sample: bytes) -> bool:
    """Whether a file starting with ``sample`` is binary: a NUL byte, or not UTF-8.

    A multi-byte character cut off at the end of the sample does not count.
    """
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as error:
        # Only an incomplete sequence at the very end is forgiven.
        return error.start < len(sample) - 3 or error.reason != "unexpected end of data"
    return False
