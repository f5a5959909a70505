"""``scripts/import-cycles`` finds a circle between modules, of any kind of import, and none in
clover_code."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.paths import ROOT

SCRIPT = ROOT / "scripts" / "import-cycles"


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("import_cycles", str(SCRIPT))
    spec = importlib.util.spec_from_loader("import_cycles", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_a_third_module_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        tmp_path / "cyclic_pkg",
        {
            "__init__.py": "",
            "a.py": "from cyclic_pkg import b\n",
            "b.py": "def f():\n    from cyclic_pkg import c\n",
            "c.py": "import cyclic_pkg.a\n",
            "d.py": "from cyclic_pkg import e\n",
            "e.py": "from cyclic_pkg import f\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    script = _script()
    found = script.cycles("cyclic_pkg")
    # an import inside a function counts; d -> e -> f is a line, not a circle
    assert found == [["cyclic_pkg.a", "cyclic_pkg.b", "cyclic_pkg.c"]]
    assert script.describe(found[0]) == "import circle in cyclic_pkg: a <-> b <-> c"
    sys.modules.pop("cyclic_pkg", None)


def test_a_circle_among_the_files_of_one_package_counts_type_checking_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        tmp_path / "typed_pkg",
        {
            "__init__.py": "",
            "other.py": "from typed_pkg.front import app\n",
            "front/__init__.py": "",
            # the app imports its parts; a part names the app's class for its types only
            "front/app.py": "from typed_pkg.front import part\n",
            "front/part.py": (
                "from __future__ import annotations\n"
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from typed_pkg.front.app import App\n"
            ),
            # relative, and only inside a function
            "front/lazy.py": "def f():\n    from . import helper\n",
            "front/helper.py": "from .lazy import f\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    script = _script()
    found = script.cycles("typed_pkg")
    assert found == [
        ["typed_pkg.front.app", "typed_pkg.front.part"],
        ["typed_pkg.front.helper", "typed_pkg.front.lazy"],
    ]
    assert [script.describe(g) for g in found] == [
        "import circle in typed_pkg.front: app <-> part",
        "import circle in typed_pkg.front: helper <-> lazy",
    ]
    sys.modules.pop("typed_pkg", None)


def test_a_circle_through_a_package_init_names_that_package() -> None:
    group = ["pkg.front", "pkg.front.app"]
    assert _script().describe(group) == "import circle in pkg.front: __init__ <-> app"


def test_clover_code_has_no_import_cycles() -> None:
    assert _script().cycles("clover_code") == []
