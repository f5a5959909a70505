"""Exporting a session: the whole conversation in Markdown and in one HTML page that
loads nothing from anywhere, with every secret masked."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from clover_code import protocol as p
from clover_code.agent.export import export_session, write_export
from clover_code.agent.transcript import Transcript
from clover_code.config.settings import Settings
from clover_code.errors import UsageError
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.paths import UNIT_FIXTURES
from tests.sessions import open_session

HOSTILE = '<script>alert(1)</script><img src="http://evil.example/x.png"> & </pre>'
PLANTED = "ghp_" + "A1b2C3d4" * 5
"""A GitHub token's shape, written into a transcript behind the writer's back."""


async def _session(settings: Settings, repo: Path) -> Path:
    backend = ScriptedBackend(
        [
            tool_response(("read_file", {"path": "app.py"}), text="Reading it."),
            tool_response(
                ("edit_file", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})
            ),
            text_response(f"Fixed. {HOSTILE}", reasoning="It subtracts; it should add."),
        ]
    )
    events: list[p.Event] = []
    session = await open_session(settings, backend, repo, events, approval_mode="full-auto")
    await session.run_turn(f"fix add {HOSTILE}")
    await session.close()
    return session.transcript.path


class _Page(HTMLParser):
    """Every tag and attribute of a page, and the text of its style elements."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(tag, name, value) for name, value in attrs]
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


async def test_markdown_has_the_conversation_reasoning_calls_outputs_and_diffs(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    text = export_session(await _session(make_settings(), repo), "md")
    assert "## User\n\nfix add <script>" in text
    assert "> **Reasoning**\n>\n> It subtracts; it should add." in text
    assert "#### Tool call `read_file` — app.py" in text
    assert '"path": "app.py"' in text  # the arguments
    assert "     2\t    return a - b" in text  # the read's output
    assert "```diff\n--- a/app.py\n+++ b/app.py\n" in text and "+    return a + b" in text
    assert "Fixed. <script>" in text


async def test_the_html_page_is_self_contained_and_escapes_every_text(
    make_settings: Callable[..., Settings], repo: Path
) -> None:
    page = export_session(await _session(make_settings(), repo), "html")
    parsed = _Page()
    parsed.feed(page)
    assert not {"script", "link", "img", "iframe", "object", "embed", "base"} & set(parsed.tags)
    assert not [a for a in parsed.attributes if a[1] in ("src", "href", "action", "srcset")]
    assert not [a for a in parsed.attributes if a[1].startswith("on")]
    css = "".join(parsed.styles)
    assert "url(" not in css and "@import" not in css
    policy = [v for t, n, v in parsed.attributes if t == "meta" and n == "content" and v]
    assert any("default-src 'none'" in v for v in policy)
    # The hostile text is there, as text.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=&quot;http://evil" in page
    assert "It subtracts; it should add." in page and "+    return a + b" in page


@pytest.mark.parametrize("export_format", ["md", "html"])
async def test_a_planted_secret_is_masked(
    export_format: str,
    make_settings: Callable[..., Settings],
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = await _session(make_settings(), repo)
    # Written behind the writer's back (an older version, a hand edit): a token's shape,
    # and a key the writer did not know then but this process does.
    later_key = "k3y-" + "Q7" * 12
    planted = {"role": "user", "content": f"try {PLANTED} and {later_key}"}
    with path.open("a") as fh:
        fh.write(json.dumps({"kind": "message", "message": planted}) + "\n")
    monkeypatch.setenv("DEPLOY_API_KEY", later_key)

    text = export_session(path, export_format)  # type: ignore[arg-type]
    assert PLANTED not in text and later_key not in text
    assert text.count("[REDACTED]") >= 2


def test_a_format1_session_exports_every_turn_even_compacted_ones() -> None:
    text = export_session(UNIT_FIXTURES / "transcripts" / "session.jsonl", "md")
    # The first turn was summarised away from the conversation; the export still has it.
    assert "## User\n\nfix add in calc.py" in text
    assert "+    return a + b" in text and "line 400 of the build log" in text
    assert "The conversation was compacted; the model went on from this summary:" in text
    assert "## User\n\nrun a sum" in text
    killed = export_session(UNIT_FIXTURES / "transcripts" / "killed.jsonl", "md")
    assert "No result was recorded (the session stopped during this call)." in killed


def test_a_call_without_a_result_says_so(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
    transcript.message({"role": "user", "content": "go"})
    transcript.message({"role": "assistant", "content": "", "tool_calls": [call]})  # type: ignore[typeddict-item]
    transcript.close()
    page = export_session(transcript.path, "html")
    assert "no result recorded" in page


def test_writing_where_it_cannot_is_one_sentence(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    transcript.close()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(UsageError) as info:
        write_export(transcript.path, "md", blocker / "out.md")
    assert str(info.value).startswith(f"could not write {blocker / 'out.md'}: ")
    assert str(info.value).endswith("; choose a file where you may write.")
    with pytest.raises(UsageError, match="is a directory; give a file name"):
        write_export(transcript.path, "md", tmp_path)
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".md"] == []


def test_a_long_result_starts_folded_and_a_short_one_open(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, {"id": "20260101-000000-aaaaaa", "cwd": "/repo"})
    calls = [
        {"id": i, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        for i in ("short", "long")
    ]
    transcript.message({"role": "user", "content": "go"})
    transcript.message({"role": "assistant", "content": "", "tool_calls": calls})  # type: ignore[typeddict-item]
    transcript.message({"role": "tool", "tool_call_id": "short", "content": "one\ntwo\n"})
    long_output = "".join(f"line {n}\n" for n in range(200))
    transcript.message({"role": "tool", "tool_call_id": "long", "content": long_output})
    transcript.close()
    page = export_session(transcript.path, "html")
    assert "<details open><summary>Result</summary><pre>one\ntwo\n</pre>" in page
    assert "<details><summary>Result</summary><pre>line 0\n" in page
