"""``clover-code export``: a stored session by id (as ``--resume`` takes it) to a file or
stdout; a bad id or a file that cannot be written is one sentence and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.agent.transcript import Transcript
from clover_code.cli.main import run

SESSION = "20260101-093000-abcdef"


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "sessions"
    monkeypatch.setenv("CLOVER_SESSIONS_DIR", str(directory))
    transcript = Transcript.create(directory, {"id": SESSION, "cwd": str(tmp_path)})
    transcript.message({"role": "user", "content": "what is 6 x 7?"})
    transcript.message({"role": "assistant", "content": "42", "reasoning_content": "six sevens"})
    transcript.close()
    return directory


def test_export_by_prefix_to_a_file_in_the_format_its_name_asks_for(
    sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "session.html"
    code = run(["export", "20260101-0930", "-o", str(out), "-C", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 0
    assert err.strip() == f"exported session {SESSION} to {out}"
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "six sevens" in page and "42" in page


def test_export_of_the_latest_session_here_to_stdout(
    sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["export", "-C", str(tmp_path)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith(f"# clover-code session {SESSION}\n")
    assert "## User\n\nwhat is 6 x 7?" in out
    assert run(["export", SESSION, "--format", "html", "-C", str(tmp_path)]) == 0
    assert capsys.readouterr()[0].startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (["zzz"], "no session 'zzz' in "),
        (["-o", "{tmp}/a-file/out.md"], "could not write {tmp}/a-file/out.md: "),
        (["-o", "{tmp}"], "{tmp} is a directory; give a file name to export to."),
    ],
)
def test_a_bad_id_or_file_is_one_sentence_and_exit_2(
    argv: list[str],
    sentence: str,
    sessions: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = run(["export", *argv, "-C", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("clover-code export: " + sentence.replace("{tmp}", str(tmp_path)))
    assert err.count("\n") == 1 and "Traceback" not in err
