"""``serve``'s listening settings from a project file apply only once it is trusted,
and its key never shows in the notice that says so."""

from __future__ import annotations

from pathlib import Path

from clover_code.config.load import load_settings
from clover_code.config.trust import PROJECT_CONFIG, TrustStore


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".clover").mkdir(parents=True)
    (root / PROJECT_CONFIG).write_text(
        'serve_host = "0.0.0.0"\nserve_api_key = "key-the-author-knows"\nserve_port = 9123\n'
    )
    return root


def test_untrusted_serve_host_and_key_are_ignored_and_the_key_is_not_shown(
    tmp_path: Path,
) -> None:
    store = TrustStore(tmp_path / "data" / "trusted.json")
    settings = load_settings(
        repo_root=_project(tmp_path), user_config=tmp_path / "none.toml", env={}, store=store
    )
    assert settings.serve_host == "127.0.0.1" and settings.serve_api_key is None
    assert settings.serve_port == 9123  # neutral: applies
    report = settings.project_trust
    assert report is not None
    notice = report.notice()
    assert notice is not None
    assert 'serve_host = "0.0.0.0"' in notice and "serve_api_key" in notice
    assert "key-the-author-knows" not in notice


def test_trusted_serve_host_and_key_apply(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "data" / "trusted.json")
    settings = load_settings(
        repo_root=_project(tmp_path),
        user_config=tmp_path / "none.toml",
        env={},
        store=store,
        trust_project=True,
    )
    assert settings.serve_host == "0.0.0.0"
    assert settings.serve_api_key is not None
    assert settings.serve_api_key.get_secret_value() == "key-the-author-knows"


def test_the_key_comes_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        user_config=tmp_path / "none.toml", env={"CLOVER_SERVE_API_KEY": "from-env"}
    )
    assert settings.serve_api_key is not None
    assert settings.serve_api_key.get_secret_value() == "from-env"
