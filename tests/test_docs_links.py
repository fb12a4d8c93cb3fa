"""Every relative link of the documentation leads somewhere: README.md, docs/*.md, bpf/README.md
and workloads/*/README.md. A Markdown link `[text](path)` or `[text](path#anchor)` (or
`(#anchor)` within the page) must name a file or folder that exists, relative to the page, and
an anchor must be the slug of one of that file's headings, as GitHub makes it: lowercase, spaces
to hyphens, punctuation dropped, `-1`, `-2` for repeats."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.paths import REPO_ROOT

pytestmark = pytest.mark.unit

# [text](target) or ![alt](target), the target up to whitespace or ")"; an optional "title".
_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
_EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, file:


def pages(root: Path = REPO_ROOT) -> list[Path]:
    """The pages whose links are checked."""
    found = [root / "README.md", root / "bpf" / "README.md"]
    found += sorted((root / "docs").glob("*.md"))
    found += sorted((root / "workloads").glob("*/README.md"))
    return [page for page in found if page.is_file()]


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "``", line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    parts = re.split(r"(`[^`]*`)", heading)  # code spans keep their text, `<bin>` too
    text = "".join(
        part.strip("`") if part.startswith("`") else re.sub(r"<[^>]+>", "", part)  # inline HTML
        for part in parts
    )
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # punctuation dropped (letters, digits, _ and - stay)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            base = slug(match["text"])
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The relative link targets of a page (external ones left out)."""
    return [
        m["target"]
        for line in _prose_lines(page.read_text())
        for m in _LINK.finditer(line)
        if not _EXTERNAL.match(m["target"])
    ]


def broken(page: Path, root: Path = REPO_ROOT) -> list[str]:
    """A line per broken link of `page`: a missing file, or an anchor no heading has."""
    problems = []
    for target in links(page):
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}: ({target})"
        if not dest.exists():
            problems.append(f"{where}: no such file {path_part}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading of {dest.relative_to(root)} has anchor #{anchor}")
    return problems


def test_the_pages_are_found() -> None:
    names = {str(page.relative_to(REPO_ROOT)) for page in pages()}
    assert {"README.md", "bpf/README.md", "docs/probes.md", "workloads/timers/README.md"} <= names


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    assert broken(page) == []


def test_slugs_follow_githubs_rules() -> None:
    assert slug("Roles and CPU placement") == "roles-and-cpu-placement"
    assert slug("The real driver: `scylla-driver`, `scylla-driver-no-timeout`") == (
        "the-real-driver-scylla-driver-scylla-driver-no-timeout"
    )
    assert slug("The client's connection") == "the-clients-connection"
    assert slug("Before and after issue 25 (2-core VM, 2026-11-28)") == (
        "before-and-after-issue-25-2-core-vm-2026-11-28"
    )
    assert slug("`harness probe`") == "harness-probe"
    assert slug("`<bin> check`") == "bin-check"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A section\n")
    page = tmp_path / "README.md"
    page.write_text(
        "# Title\n\n## Here\n\n"
        "[fine](docs/other.md) [fine](docs/other.md#a-section) [fine](#here)\n"
        "[gone](docs/missing.md) [bad anchor](docs/other.md#nowhere) [bad](#there)\n"
        "[web](https://example.com/x.md) `[code](not/checked.md)`\n"
        "```\n[fenced](not/checked/either.md)\n```\n"
    )
    problems = broken(page, root=tmp_path)
    assert len(problems) == 3, problems
    assert "no such file docs/missing.md" in problems[0]
    assert "#nowhere" in problems[1] and "#there" in problems[2]
