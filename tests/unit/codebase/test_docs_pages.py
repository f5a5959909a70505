"""The README stays what a newcomer reads first, and docs/ holds the rest.

Nothing documented may be lost: every heading and every command-line flag of
the README as it stood before its reference sections moved to docs/ (frozen in
``fixtures/readme_headings_2026-12.txt``) must still be a heading, or a flag,
of README.md or a page under docs/. Every page under docs/ is linked from the
README, and every relative link of these pages leads to a file (and heading)
that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import ROOT, UNIT_FIXTURES

README = ROOT / "README.md"
DOCS = ROOT / "docs"
FROZEN = UNIT_FIXTURES / "readme_headings_2026-12.txt"
# The README's size limit: past it, a section belongs in a page of docs/.
README_MAX_LINES = 400

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")
# An option as a command line writes it: `--base-url`, `-C`; not part of a
# word (`auto-edit`), a path (`./x-y`) or a number (`-32800`).
FLAG = re.compile(r"(?<![\w./-])(--?[A-Za-z][\w-]*)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [README, *sorted(DOCS.glob("**/*.md"))]


def headings(text: str) -> list[str]:
    """The headings of a Markdown text, outside fenced code, as written."""
    found: list[str] = []
    inside = False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside and (match := HEADING.match(line)):
            found.append(match.group(2))
    return found


def flags(text: str) -> set[str]:
    """Every command-line option a Markdown text names, in prose or in code."""
    return set(FLAG.findall(text))


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a page, a repeated heading's numbered ones included."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in headings(text):
        base = anchor(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def frozen(kind: str) -> list[str]:
    lines = FROZEN.read_text("utf-8").splitlines()
    prefix = f"{kind}: "
    return [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]


def test_the_frozen_list_holds_the_old_readme() -> None:
    # The list names the sections that moved, and flags in prose and code alike.
    assert {"Sandbox", "Hooks", "stream-json events", "On many machines: Ray"} <= set(
        frozen("heading")
    )
    assert {"--base-url", "--ray-address", "--max-body-mb", "-C"} <= set(frozen("flag"))


def test_every_heading_of_the_old_readme_is_still_a_heading() -> None:
    now = {heading for page in pages() for heading in headings(page.read_text("utf-8"))}
    lost = [heading for heading in frozen("heading") if heading not in now]
    assert not lost, f"headings no page of README.md or docs/ has any more: {lost}"


def test_every_flag_of_the_old_readme_is_still_documented() -> None:
    now: set[str] = set()
    for page in pages():
        now |= flags(page.read_text("utf-8"))
    lost = [flag for flag in frozen("flag") if flag not in now]
    assert not lost, f"flags no page of README.md or docs/ names any more: {lost}"


def test_the_readme_is_a_newcomers_page() -> None:
    count = len(README.read_text("utf-8").splitlines())
    assert count < README_MAX_LINES, (
        f"README.md has {count} lines: move reference sections to a page of docs/"
    )


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        (ROOT / target.split("#")[0]).resolve()
        for target in LINK.findall(README.read_text("utf-8"))
        if not re.match(r"\w+:", target)
    }
    unlinked = [str(p.relative_to(ROOT)) for p in sorted(DOCS.glob("**/*.md")) if p not in linked]
    assert not unlinked, f"pages the README does not link to: {unlinked}"


def test_every_relative_link_leads_somewhere() -> None:
    broken: list[str] = []
    for page in [*pages(), ROOT / "CONTRIBUTING.md", ROOT / "ARCHITECTURE.md"]:
        text = page.read_text("utf-8")
        for target in LINK.findall(text):
            if re.match(r"\w+:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            destination = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)} -> {target}"
            if not destination.exists():
                broken.append(f"{where} (no such file)")
            elif (
                fragment
                and destination.suffix == ".md"
                and fragment not in anchors(destination.read_text("utf-8"))
            ):
                broken.append(f"{where} (no such heading)")
    assert not broken, "broken links: " + "; ".join(broken)
