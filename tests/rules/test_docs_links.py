"""Every relative link in the README and in ``docs/`` leads somewhere: to a file or folder of the
checkout and, when it names one, to an anchor of that markdown file (a heading's GitHub slug or an
explicit ``<a id="...">``)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from helpers.paths import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: ``[text](target)`` outside code; the target up to the first space or closing parenthesis.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans, where brackets are not links."""
    kept, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercased, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    found: set[str] = set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    counts: dict[str, int] = {}
    inside = False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        match = None if inside else re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            n = counts.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            counts[base] = n + 1
    return found


def links(path: Path) -> list[str]:
    return [t for t in LINK.findall(prose(path.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # http(s):, mailto: and the like are not checked


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(doc):
    broken = []
    for target in links(doc):
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / unquote(file_part)).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such anchor in {dest.relative_to(REPO).as_posix()}")
    assert broken == [], f"{doc.relative_to(REPO).as_posix()}: {broken}"


def test_the_checker_finds_links_and_anchors(tmp_path):
    """The checker itself: links in prose found, code left alone, GitHub's slugs."""
    text = "# A `code` title: yes\n\n## A `code` title: yes\n<a id=\"x-1\"></a>\n[a](b.md#c) `[d](e)`\n```\n[f](g)\n```\n"
    (tmp_path / "t.md").write_text(text, encoding="utf-8")
    assert links(tmp_path / "t.md") == ["b.md#c"]
    assert anchors(tmp_path / "t.md") == {"a-code-title-yes", "a-code-title-yes-1", "x-1"}
    assert slug("Released embeddings: real dense rows without encoding 21M passages") == (
        "released-embeddings-real-dense-rows-without-encoding-21m-passages")

