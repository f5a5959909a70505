"""The map after edits, updated file by file, is byte for byte the map a fresh build makes."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clover_code.repomap import RepoMap
from clover_code.repomap import graph as graph_mod
from clover_code.repomap.tags import FileTags
from tests.paths import UNIT_FIXTURES

FIXTURES = UNIT_FIXTURES / "repomap"

# Names shared by several modules (several definers), long ones that weigh
# more, private ones that weigh less: the weights and ties all come into play.
NAMES = [
    "load",
    "save",
    "render",
    "parse_config",
    "apply_discount",
    "computeTotalPrice",
    "format_money",
    "_private_helper",
    "validate",
    "ShoppingCart",
    "build_report",
    "send_invoice",
]


def _python_module(rng: random.Random, index: int) -> str:
    lines = [f'"""Module {index}."""', ""]
    for name in rng.sample(NAMES, rng.randint(2, 5)):
        calls = ", ".join(f"{callee}()" for callee in rng.sample(NAMES, rng.randint(1, 4)))
        if name[0].isupper():
            lines += [f"class {name}:", "    def run(self):", f"        return [{calls}]", ""]
        else:
            lines += [f"def {name}(value):", f"    return [{calls}]", ""]
    return "\n".join(lines)


def _js_module(rng: random.Random, index: int) -> str:
    out = [f"// module {index}"]
    for name in rng.sample(NAMES, rng.randint(1, 3)):
        calls = "; ".join(f"{callee}()" for callee in rng.sample(NAMES, rng.randint(1, 3)))
        out.append(f"function {name}(x) {{ {calls}; return x; }}")
    return "\n".join(out) + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The shop fixture plus 40 generated modules that use each other's names."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "shop", root)
    rng = random.Random(7)
    for index in range(40):
        folder = root / ("pkg" if index % 3 else "pkg/sub") / f"m{index:02d}"
        folder.parent.mkdir(parents=True, exist_ok=True)
        if index % 8 == 0:
            folder.with_suffix(".js").write_text(_js_module(rng, index))
        else:
            folder.with_suffix(".py").write_text(_python_module(rng, index))
    return root


_clock = iter(range(1, 1_000_000))


def _stamp(path: Path) -> None:
    """Give an edited file an mtime no earlier edit had, as edits apart in time get.

    Two writes within one tick of the file system's clock, leaving the same
    size, would look unchanged to any build that goes by (mtime, size).
    """
    ns = 1_700_000_000_000_000_000 + next(_clock) * 1_000_000
    os.utime(path, ns=(ns, ns))


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    _stamp(path)


def _assert_same_as_fresh(kept: RepoMap, root: Path) -> None:
    fresh = RepoMap(root, None, workers=1)
    for budget, kwargs in [
        (60, {}),
        (400, {}),
        (5000, {}),
        (300, {"edited": ["pkg/m01.py"]}),
        (300, {"mentioned": ["apply_discount", "shop/cart.py"]}),
    ]:
        got = kept.build(budget, **kwargs)
        want = fresh.build(budget, **kwargs)
        assert got.text == want.text, (budget, kwargs)
        assert got.notes == want.notes and got.files == want.files


def _edits(root: Path) -> Iterator[tuple[str, Callable[[], None]]]:
    money = root / "shop/money.py"
    cart = root / "shop/cart.py"

    def add_symbol() -> None:
        _write(money, money.read_text() + "\n\ndef refund_total(m):\n    return format_money(m)\n")

    def use_it() -> None:
        _write(cart, cart.read_text() + "\n\ndef refund_all():\n    return refund_total(1)\n")

    def change_symbol() -> None:
        _write(money, money.read_text().replace("def refund_total(", "def refund_everything("))

    def delete_symbol() -> None:
        text = money.read_text()
        _write(money, text[: text.index("\n\ndef refund_everything(")] + "\n")

    def body_only() -> None:
        _write(cart, cart.read_text().replace("result = Money(0)", "result = Money(0 + 0)"))

    def rename_file() -> None:
        (root / "pkg/m05.py").rename(root / "pkg/m05_renamed.py")

    def delete_file() -> None:
        (root / "pkg/m04.py").unlink()

    def new_file_in_new_folder() -> None:
        _write(root / "extra/deep/fresh.py", "def apply_discount(x):\n    return validate(x)\n")

    def name_defined_everywhere() -> None:
        # A seventh definer of ``load``: its weight drops for every user.
        for i in (10, 11, 13, 14, 17, 19, 20):
            path = root / "pkg" / f"m{i:02d}.py"
            _write(path, path.read_text() + "\n\ndef load(value):\n    return value\n")

    def make_binary() -> None:
        _write(root / "pkg/m02.py", "\x00 binary now")

    yield from [
        ("add a symbol", add_symbol),
        ("use it from another file", use_it),
        ("change (rename) a symbol", change_symbol),
        ("delete a symbol", delete_symbol),
        ("edit a body only", body_only),
        ("rename a file", rename_file),
        ("delete a file", delete_file),
        ("add a file in a new folder", new_file_in_new_folder),
        ("define a name in many files", name_defined_everywhere),
        ("make a file unparseable", make_binary),
    ]


def test_each_kind_of_edit_gives_the_fresh_build_map(repo: Path) -> None:
    kept = RepoMap(repo, None, workers=1)
    _assert_same_as_fresh(kept, repo)
    for _name, edit in _edits(repo):
        edit()
        _assert_same_as_fresh(kept, repo)


def test_random_edits_give_the_fresh_build_map(repo: Path) -> None:
    rng = random.Random(11)
    kept = RepoMap(repo, None, workers=1)
    kept.build(400)
    for step in range(25):
        files = sorted(p for p in repo.rglob("*") if p.suffix in {".py", ".js"})
        target = rng.choice(files)
        action = rng.random()
        if action < 0.6:
            text = _js_module(rng, step) if target.suffix == ".js" else _python_module(rng, step)
            _write(target, text)
        elif action < 0.75:
            target.unlink()
        elif action < 0.9:
            target.rename(target.with_name(f"r{step}_{target.name}"))
        else:
            _write(repo / "pkg" / f"new{step}.py", _python_module(rng, step))
        _assert_same_as_fresh(kept, repo)


def test_an_edit_redoes_only_the_edited_files_part(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = RepoMap(repo, None, workers=1)
    kept.build(400)
    redone: list[str] = []
    original = graph_mod.RefGraph._part

    def counting(self: graph_mod.RefGraph, tags: FileTags) -> graph_mod._FilePart:
        redone.append(tags.lang)
        return original(self, tags)

    monkeypatch.setattr(graph_mod.RefGraph, "_part", counting)
    cart = repo / "shop/cart.py"
    _write(cart, cart.read_text() + "\n\ndef one_more():\n    return validate(1)\n")
    assert kept.build(400).parsed == 1
    assert redone == ["python"]
    kept.reset()
    kept.build(400)
    assert len(redone) == 1 + len(list(repo.rglob("*.py"))) + len(list(repo.rglob("*.js")))
