"""The repo map: tags of every supported language, ranking on a fixture repo, caching, the tool."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clover_code.repomap import RepoMap, estimate_tokens
from clover_code.repomap import parse as parse_mod
from clover_code.repomap.graph import RefGraph
from clover_code.repomap.parse import FileParser, parse_many
from clover_code.repomap.tags import FileTags
from clover_code.tools.base import ToolContext
from clover_code.tools.repo_map import RepoMapArgs, RepoMapTool
from clover_code.tools.workspace import Workspace
from tests.paths import UNIT_FIXTURES

FIXTURES = UNIT_FIXTURES / "repomap"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A copy of the fixture shop repo (tests touch files and mtimes)."""
    root = tmp_path / "shop"
    shutil.copytree(FIXTURES / "shop", root)
    return root


def ranked_names(root: Path, focus: tuple[str, ...] = ()) -> list[str]:
    """Definition names of ``root``, best first."""
    parser = FileParser(str(root), 1 << 20)
    files = sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in {".py", ".js"}
    )
    tags = dict(parse_many(parser, [(f, (root / f).stat().st_size) for f in files], 1))
    graph = RefGraph.build(files, [tags[f] for f in files])
    index = {f: i for i, f in enumerate(files)}
    return [d[0] for _, _, d in graph.rank_definitions({index[f] for f in focus})]


@pytest.mark.parametrize(
    ("name", "defs", "refs"),
    [
        ("sample.py", {"PyWidget", "py_render", "py_helper"}, {"py_helper"}),
        ("sample.js", {"JsWidget", "jsRender", "jsHelper"}, {"jsHelper"}),
        ("sample.ts", {"TsShape", "TsCircle", "area", "tsHelper"}, {"tsHelper", "TsShape"}),
        ("sample.tsx", {"TsxButton", "tsxLabel"}, {"tsxLabel"}),
        ("sample.go", {"GoServer", "GoServe", "goHelper"}, {"goHelper"}),
        ("sample.rs", {"RsEngine", "rs_start", "rs_helper"}, {"rs_helper"}),
        ("Sample.java", {"JavaService", "javaHandle", "javaHelper"}, {"javaHelper"}),
        ("sample.c", {"c_point", "c_helper", "c_main"}, {"c_helper"}),
        ("sample.cpp", {"CppParser", "cppParse", "cppHelper"}, {"cppHelper"}),
        ("sample.rb", {"RbModel", "rb_save", "rb_helper"}, {"rb_helper"}),
        ("sample.sh", {"sh_helper", "sh_main"}, {"sh_helper"}),
    ],
)
def test_each_language_yields_definitions_and_references(
    name: str, defs: set[str], refs: set[str]
) -> None:
    root = FIXTURES / "langs"
    tags = FileParser(str(root), 1 << 20).parse(name, (root / name).stat().st_size)
    assert not tags.skipped
    assert {d[0] for d in tags.defs} == defs
    assert refs <= set(tags.refs)


def test_known_ranking_of_the_fixture_repo() -> None:
    names = ranked_names(FIXTURES / "shop")
    # Money is used by four files, format_money by three (and its long name
    # counts more), Cart by two; nobody uses orphan_helper.
    assert names[:4] == ["Money", "format_money", "shipping_quote_calc", "Cart"]
    assert names.index("orphan_helper") > names.index("checkout_order")


def test_focus_pulls_the_focus_files_neighbours_up() -> None:
    plain = ranked_names(FIXTURES / "shop")
    lonely = ranked_names(FIXTURES / "shop", ("tools/lonely.py",))
    assert lonely[0] == "shipping_quote_calc"
    admin = ranked_names(FIXTURES / "shop", ("shop/admin.py",))
    assert admin.index("describe") < plain.index("describe")
    assert admin[:4] == ["Money", "format_money", "Cart", "describe"]


def _defining(name: str, uses: str) -> FileTags:
    return FileTags("python", [(name, "function", 0, 1, f"def {name}():")], {uses: 1})


def test_pagerank_of_a_small_graph() -> None:
    # a -> b, b -> c, c -> b: b and c share the rank, a keeps only teleports.
    graph = RefGraph.build(
        ["a.py", "b.py", "c.py"],
        [
            _defining("a_thing", "b_thing"),
            _defining("b_thing", "c_thing"),
            _defining("c_thing", "b_thing"),
        ],
    )
    ranks = graph.rank_files(()).tolist()
    assert sum(ranks) == pytest.approx(1.0)
    assert ranks[0] == pytest.approx(0.05)
    assert ranks[1] > ranks[2] > ranks[0]


def test_map_text_fits_the_budget_and_grows_with_it(shop: Path) -> None:
    repo_map = RepoMap(shop, None)
    small = repo_map.render(60)
    large = repo_map.render(4000)
    assert 0 < estimate_tokens(small) <= 60
    assert "class Money:" in small and "orphan_helper" not in small
    assert "orphan_helper" in large and len(large) > len(small)
    # Methods show under their class, with elisions between.
    assert "│class Cart:\n⋮\n│    def describe(self) -> str:" in small
    assert repo_map.notes == []


def test_mentioned_identifier_and_edited_file_change_the_map(shop: Path) -> None:
    repo_map = RepoMap(shop, None)
    assert "orphan_helper" not in repo_map.render(60)
    assert "orphan_helper" in repo_map.render(60, mentioned=["orphan_helper"])
    assert "shipping_quote_calc" in repo_map.render(40, edited=[str(shop / "tools/lonely.py")])


def test_empty_repo_gives_empty_map(tmp_path: Path) -> None:
    repo_map = RepoMap(tmp_path, tmp_path / "cache.sqlite3")
    assert repo_map.render(1000) == ""
    assert repo_map.notes == []


def test_warm_builds_reuse_and_follow_changes(shop: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "repomap.sqlite3"
    first = RepoMap(shop, cache).build(500)
    assert first.parsed == 7 and not first.from_cache
    # A new session on an unchanged repo reads the map from disk.
    again = RepoMap(shop, cache)
    warm = again.build(500)
    assert warm.from_cache and warm.parsed == 0 and warm.text == first.text
    # One edited file is the only one parsed again, and the map shows it.
    (shop / "shop/report.py").write_text("def weekly_sales_summary_report():\n    pass\n")
    changed = again.build(4000)
    assert changed.parsed == 1
    assert "weekly_sales_summary_report" in changed.text
    assert "sales_report(amounts" not in changed.text
    # Same instance, nothing changed: no parsing, same text.
    same = again.build(4000)
    assert same.from_cache and same.text == changed.text
    # A removed file leaves the map; a new one joins it.
    (shop / "tools/lonely.py").unlink()
    (shop / "tools/extra.py").write_text("def brand_new_function():\n    pass\n")
    after = again.build(4000)
    assert after.parsed == 1
    assert "tools/lonely.py" not in after.text and "brand_new_function" in after.text


def test_ignored_hidden_and_vendored_code_is_not_mapped(shop: Path) -> None:
    (shop / ".gitignore").write_text("build/\n")
    for folder in ("build", ".venv", "node_modules"):
        (shop / folder).mkdir()
        (shop / folder / "gen.py").write_text(f"def only_in_{folder.strip('.')}():\n    pass\n")
    repo_map = RepoMap(shop, None)
    text = repo_map.render(4000)
    assert "only_in" not in text
    # Un-ignoring takes effect on the next build.
    (shop / ".gitignore").write_text("")
    assert "only_in_build" in repo_map.render(4000)


def test_worker_processes_give_the_same_tags(shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_mod, "PARALLEL_MIN_FILES", 2)
    parser = FileParser(str(shop), 1 << 20)
    todo = [(p.relative_to(shop).as_posix(), p.stat().st_size) for p in sorted(shop.rglob("*.py"))]
    in_process = dict(parse_many(parser, todo, 1))
    in_workers = dict(parse_many(parser, todo, 2))
    assert in_workers == in_process


async def test_repo_map_tool(shop: Path, tmp_path: Path) -> None:
    tool = RepoMapTool(cache_path=tmp_path / "tool-cache.sqlite3")
    ctx = ToolContext(workspace=Workspace(shop))
    result = await tool.run(RepoMapArgs(focus=["tools/lonely.py"], budget_tokens=256), ctx)
    assert not result.is_error
    assert "shipping_quote_calc" in result.text
    assert result.display.notes == []  # the cache works from the worker thread
    assert result.display.files == 7
    assert tool.spec().name == "repo_map" and tool.kind == "read"
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = await tool.run(RepoMapArgs(), ToolContext(workspace=Workspace(empty)))
    assert "no source files" in nothing.text


def test_cache_survives_a_damaged_file_and_reports_an_unusable_one(
    shop: Path, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(b"this is not a database" * 100)
    result = RepoMap(shop, damaged).build(500)
    assert "class Money" in result.text and result.notes == []
    assert RepoMap(shop, damaged).build(500).from_cache
    unusable = tmp_path / "a-directory"
    unusable.mkdir()
    result = RepoMap(shop, unusable).build(500)
    assert "class Money" in result.text
    assert any("cannot be used" in note for note in result.notes)


def test_cached_tags_are_dropped_when_the_queries_change(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "c.sqlite3"
    RepoMap(shop, cache).build(500)
    from clover_code.repomap import repomap as repomap_mod

    monkeypatch.setattr(repomap_mod, "fingerprint", lambda: "another-version")
    assert RepoMap(shop, cache).build(500).parsed == 7


def test_paths_outside_the_root_are_ignored_as_focus(shop: Path) -> None:
    repo_map = RepoMap(shop, None)
    plain = repo_map.render(100)
    assert repo_map.render(100, edited=[os.path.abspath("/etc/passwd")]) == plain
