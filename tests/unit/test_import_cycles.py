"""``scripts/import-cycles`` finds a cycle between modules, and none in clover_code."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import-cycles"


def _script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("import_cycles", str(SCRIPT))
    spec = importlib.util.spec_from_loader("import_cycles", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_a_cycle_through_a_third_module_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "cyclic_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyclic_pkg import b\n")
    (package / "b.py").write_text("def f():\n    from cyclic_pkg import c\n")
    (package / "c.py").write_text("import cyclic_pkg.a\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic_pkg import e\n"
    )
    (package / "e.py").write_text("from cyclic_pkg import d\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _script().cycles("cyclic_pkg")
    # an import inside a function counts; one only for the type checker does not
    assert found == [["cyclic_pkg.a", "cyclic_pkg.b", "cyclic_pkg.c"]]
    sys.modules.pop("cyclic_pkg", None)


def test_clover_code_has_no_import_cycles() -> None:
    assert _script().cycles("clover_code") == []
