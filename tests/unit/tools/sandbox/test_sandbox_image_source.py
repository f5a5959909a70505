"""The sandbox image has one definition: ``sandbox/`` in the source tree, which the
package's ``sandbox_image/`` only links to, so a wheel install and a source install
look for the same image tag."""

from __future__ import annotations

from clover_code.tools.sandbox.image import DEFINITION_FILES, image_tag
from tests.paths import ROOT

TREE = ROOT
PACKAGED = TREE / "clover_code" / "sandbox_image"


def test_the_packaged_definition_is_the_tree_s() -> None:
    for name in DEFINITION_FILES:
        packaged = PACKAGED / name
        assert packaged.is_symlink(), f"{packaged} must link to sandbox/{name}"
        assert packaged.resolve() == (TREE / "sandbox" / name).resolve()
    assert image_tag(PACKAGED) == image_tag(TREE / "sandbox")
