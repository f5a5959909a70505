"""The note that stands in for dropped output says how much was dropped, in bytes.

Commands really print 100 MB through the host sandbox here; the number in
the note must be within 10% of what the command printed, also after the
shell tool and the output spill have capped the text again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from clover_code import protocol as p
from clover_code.config.settings import Settings
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.sandbox.output import (
    HeadTailBuffer,
    cap_head_tail,
    omission_marker,
    omitted_bytes,
)
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.sessions import open_session
from tests.unit.agent.turn.test_agent_loop import of_type

PRINTED = 100_000_000
FLOOD = f"echo FIRST; head -c {PRINTED} /dev/zero | tr '\\0' a; echo; echo LAST"
NOTE = re.compile(r"\[\.\.\. [0-9.]+ (?:bytes?|kB|MB|GB|TB) omitted \.\.\.\]")


def _close_to(dropped: int, printed: int) -> bool:
    return abs(dropped - printed) < printed / 10


async def test_the_host_sandbox_counts_the_bytes_it_read(tmp_path: Path) -> None:
    box = HostSandbox(tmp_path, output_limit=30_000)
    try:
        result = await box.exec(FLOOD, timeout=240)
    finally:
        await box.close()
    assert result.exit_code == 0 and result.truncated
    assert NOTE.findall(result.output) == ["[... 100.0 MB omitted ...]"]
    assert result.output.startswith("FIRST\naaa") and result.output.endswith("aaa\nLAST\n")


async def test_the_model_sees_the_size_of_what_was_dropped(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    events: list[p.Event] = []
    backend = ScriptedBackend([tool_response(("shell", {"command": FLOOD})), text_response("ok")])
    session = await open_session(make_settings(), backend, repo, events, approval_mode="full-auto")
    try:
        finished = await session.run_turn("flood")
    finally:
        await session.close()
    assert finished.status == "completed"
    (result,) = of_type(events, p.ToolCallFinished)
    seen = next(m for m in backend.requests[1].messages if m["role"] == "tool")["content"]
    for text in (result.result, seen):
        notes = NOTE.findall(text)
        assert len(notes) == 1, notes
        assert _close_to(omitted_bytes(text), PRINTED), notes
        assert "exit code 0" in text


def test_capping_again_folds_the_old_note_into_the_new_one() -> None:
    buffer = HeadTailBuffer(1000)
    buffer.write("h" * 500)
    buffer.write("m" * 10_000, size=10_000)
    buffer.write("é" * 500, size=1000)  # two bytes each, as read
    first = buffer.text()
    assert omitted_bytes(first) == 10_000
    # The shell tool adds a footer and caps to the same limit: the note survives.
    again, cut = cap_head_tail(first + "exit code 0 (1.0 s)\n", 1000)
    # 10,000 bytes plus the few characters cut next to the old note.
    assert cut and NOTE.findall(again) == ["[... 10.0 kB omitted ...]"]
    assert again.endswith("exit code 0 (1.0 s)\n")


def test_a_note_the_cut_falls_inside_is_dropped_whole_and_counted() -> None:
    text = "a" * 100 + omission_marker(5_000_000) + "b" * 100
    assert len(text) == 226
    capped, cut = cap_head_tail(text, 220)  # the cut would be characters 110-116: in the note
    assert cut and NOTE.findall(capped) == ["[... 5.0 MB omitted ...]"]
    assert capped == text
    shorter, _ = cap_head_tail(text, 120)
    assert shorter == "a" * 60 + omission_marker(5_000_080) + "b" * 60
