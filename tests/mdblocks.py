"""The fenced code blocks of a Markdown page (the guide's pages, the README), each with the reason it does not
run when the line before it says so (``<!-- not-run: reason -->``): what tests/test_docs.py and
tests/test_readme.py run."""
from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parent.parent

_MARKER = re.compile(r"<!--\s*not-run:\s*(\S.*?)\s*-->")
_FENCE = re.compile(r"^(\s*)(`{3,})\s*(\S*)")


class Block:
    __slots__ = ("page", "line", "lang", "text", "not_run")

    def __init__(self, page, line, lang, text, not_run):
        self.page, self.line, self.lang, self.text, self.not_run = page, line, lang, text, not_run

    def __repr__(self):
        where = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{where}:{self.line} ({self.lang})"


def blocks_of(page):
    """The fenced code blocks of a Markdown page, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = _MARKER.search(lines[j]) if j >= 0 else None
        body, k = [], i + 1
        while k < len(lines) and not re.match(rf"^\s*{fence}\s*$", lines[k]):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k].lstrip())
            k += 1
        assert k < len(lines), f"{page}:{i + 1}: unclosed code block"
        if not lang.startswith("{"):        # ```{toctree} and other MyST directives are not code
            out.append(Block(page, i + 1, lang, "\n".join(body) + "\n", marker.group(1) if marker else None))
        i = k + 1
    return out
