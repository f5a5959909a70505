"""Command-line mistakes get one clear sentence and the documented exit code."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from clover_code import __version__
from clover_code.cli.main import run, start_up_loaded
from clover_code.outcome.result import TaskResult, parse_stream_line
from clover_code.protocol import ErrorEvent


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_task_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["-C", str(tmp_path), "--task-file", "nope.md"], capsys)
    assert code == 2
    assert err.strip() == "clover-code: task file nope.md does not exist."


def test_empty_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "  "], capsys)
    assert code == 2 and "the task is empty" in err


def test_no_engine_configured_exits_3_with_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["-C", str(tmp_path), "--task", "hi"], capsys)
    assert code == 3
    assert "--base-url" in err and "Traceback" not in err
    # one sentence: a single full stop, at the end
    assert err.strip().count(". ") == 0 and err.strip().endswith("."), err
    assert out == ""


def test_no_engine_in_json_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["-C", str(tmp_path), "--task", "hi", "--output-format", "stream-json"], capsys
    )
    assert code == 3 and '"type":"error"' in out and '"fatal":true' in out


def test_sandbox_that_cannot_run_has_its_own_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Docker socket that does not exist: the sandbox asked for cannot run.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    argv = ["-C", str(tmp_path), "--task", "hi", "--sandbox", "docker"]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--output-format", "json"]
    code, out, _ = run_cli(argv, capsys)
    result = TaskResult.model_validate_json(out)
    assert (code, result.exit_code, result.exit_reason) == (3, 3, "no_sandbox")
    assert result.error is not None and "--sandbox docker cannot run" in result.error


def test_result_schema_lists_no_sandbox(capsys: pytest.CaptureFixture[str]) -> None:
    assert "no_sandbox" in str(TaskResult.model_json_schema())


def test_malformed_repo_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".clover").mkdir()
    (tmp_path / ".clover/config.toml").write_text("base_url = [\n")
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "hi"], capsys)
    assert code == 2 and "is not valid TOML" in err and ".clover/config.toml" in err


def test_unknown_engine_value_in_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOVER_ENGINE", "gpu")
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "hi"], capsys)
    assert code == 2 and "environment variable CLOVER_ENGINE" in err


def test_resume_without_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["-C", str(tmp_path), "--continue", "--task", "x"], capsys)
    assert code == 2 and "no earlier session" in err


def test_bad_flag_value_is_argparse_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run(["--approval", "yolo"])
    assert info.value.code == 2
    assert "invalid choice: 'yolo'" in capsys.readouterr().err


def test_app_without_a_terminal_says_how_to_run_headless(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["-C", str(tmp_path)], capsys)
    assert code == 2 and "needs a terminal" in err and "--task" in err


def test_bad_base_url_in_env_names_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOVER_BASE_URL", "localhost:8080")
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "hi"], capsys)
    assert code == 2 and "environment variable CLOVER_BASE_URL" in err
    assert "has no scheme" in err and len(err.strip().splitlines()) == 1


def test_bad_base_url_in_config_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".clover").mkdir()
    (tmp_path / ".clover/config.toml").write_text('base_url = "ftp://models.example/v1"\n')
    code, _, err = run_cli(["-C", str(tmp_path), "--trust-project", "--task", "hi"], capsys)
    assert code == 2 and ".clover/config.toml" in err and "'base_url'" in err
    assert "scheme 'ftp' is not supported" in err


def test_an_untrusted_project_cannot_send_the_model_traffic_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The requests carry the code and the user's API key: a cloned repository's own
    # server address applies only once the user trusted the file, and says so.
    (tmp_path / ".clover").mkdir()
    (tmp_path / ".clover/config.toml").write_text('base_url = "http://127.0.0.1:9/v1"\n')
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "hi"], capsys)
    assert code == 3 and "No model engine is configured" in err
    assert 'base_url = "http://127.0.0.1:9/v1"' in err and "--trust-project" in err
    assert err.strip().count(". ") == 0 and err.strip().endswith(".")  # one sentence
    code, _, err = run_cli(["-C", str(tmp_path), "--trust-project", "--task", "hi"], capsys)
    assert code == 3 and "cannot reach the model server at http://127.0.0.1:9/v1" in err


def test_a_url_without_a_host_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["-C", str(tmp_path), "--task", "hi", "--base-url", "http://"], capsys)
    assert code == 2 and "command-line option --base-url" in err and "no host" in err


def test_early_error_in_json_is_the_one_result_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["-C", str(tmp_path), "--task", "hi", "--output-format", "json"], capsys)
    result = TaskResult.model_validate_json(out)
    assert code == 3 and (result.status, result.exit_code) == ("error", 3)
    assert result.session_id is None and result.turns == 0 and result.version == __version__
    assert result.error is not None and "--base-url" in result.error


def test_early_error_in_stream_json_ends_with_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        ["-C", str(tmp_path), "--task", "  ", "--output-format", "stream-json"], capsys
    )
    error, result = (parse_stream_line(line) for line in out.splitlines())
    assert code == 2
    assert isinstance(error, ErrorEvent) and error.fatal
    assert isinstance(result, TaskResult) and (result.status, result.exit_code) == ("error", 2)


def test_the_command_says_once_when_its_modules_are_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # main() keeps the collector off until then, so every path that starts work must say so.
    calls: list[str] = []
    assert run(["-C", str(tmp_path), "--task", "hi"], lambda: calls.append("task")) == 3
    assert run(["schema", "result"], lambda: calls.append("schema")) == 0
    capsys.readouterr()
    assert calls == ["task", "schema"]


def test_after_the_start_up_the_collector_runs_again() -> None:
    gc.disable()
    try:
        start_up_loaded()
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_the_app_says_it_is_loaded_after_its_modules_and_before_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Textual and the app's widgets are most of the app's start-up: they load with the
    # collector still off, and the app runs with it back on.
    from clover_code.config.load import load_settings
    from clover_code.ui.app import CloverApp
    from clover_code.ui.run import run_app

    calls: list[str] = []

    def run(self: CloverApp) -> int:
        calls.append("run")
        return 0

    monkeypatch.setattr(CloverApp, "run", run)
    settings = load_settings({"sessions_dir": tmp_path / "s"}, user_config=tmp_path / "none.toml")
    assert run_app(settings, tmp_path, resume=None, loaded=lambda: calls.append("loaded")) == 0
    assert calls == ["loaded", "run"]
