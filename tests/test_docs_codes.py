"""Every finding code has a page in docs/codes, and every page belongs to a code."""

from __future__ import annotations

import re
from pathlib import Path

from vkdoctor.commands.explain import known_codes

REPO = Path(__file__).resolve().parent.parent
CODES_DIR = REPO / "docs" / "codes"


def test_every_code_has_a_page_and_every_page_a_code():
    pages = {p.stem for p in CODES_DIR.glob("*.md")}
    codes = set(known_codes())
    assert codes - pages == set(), f"codes without a page: {sorted(codes - pages)}"
    assert pages - codes == set(), f"pages without a code: {sorted(pages - codes)}"


def test_pages_have_the_sections_a_reader_needs():
    for page in CODES_DIR.glob("*.md"):
        text = page.read_text()
        assert text.startswith(f"# {page.stem}: "), page
        for section in ("**What it means.**", "**Why it matters.**", "**How to fix.**"):
            assert section in text, f"{page.name} lacks {section}"


def test_every_code_written_in_the_source_is_registered():
    used = set()
    for py in (REPO / "vkdoctor").rglob("*.py"):
        used |= set(re.findall(r"[\"'](VK[A-Z][0-9]{3})[\"']", py.read_text()))
    assert used - set(known_codes()) == set()
