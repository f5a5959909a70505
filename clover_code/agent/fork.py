"""Forking a session: a new transcript that starts with another one's conversation.

The fork gets its own id, transcript and checkpoint store (whose first snapshot
is the workspace as it is when the fork's first turn starts); the original
transcript is only read, never written.
"""

from __future__ import annotations

import os
from pathlib import Path

from clover_code.agent.transcript import Transcript, load, new_session_id

_NOT_COPIED = frozenset({"kind", "format", "id", "pid"})


def fork_session(source: Path, directory: Path) -> Path:
    """Write a new session in ``directory`` holding ``source``'s conversation; its path.

    Raises ``UsageError`` when ``source`` cannot be read as a session and
    ``TranscriptError`` when the new file cannot be written."""
    loaded = load(source)
    meta = {k: v for k, v in loaded.meta.items() if k not in _NOT_COPIED}
    meta.update(id=new_session_id(), forked_from=loaded.meta.get("id"), pid=os.getpid())
    transcript = Transcript.create(directory, meta)
    try:
        for message in loaded.messages:  # one record each, as a session writes them
            transcript.message(message)
        if loaded.model is not None:  # the fork goes on with the model the source ended on
            transcript.model_switch(loaded.model, loaded.model)
    finally:
        transcript.close()
    return transcript.path
