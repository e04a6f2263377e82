"""Problem text as decontamination and dedup compare it: normalized words.

`normalize` lowercases, drops a leading "Problem 3." style label, LaTeX spacing
(`\\,` `\\;` `\\!` `\\:` `\\quad` `\\qquad`), `\\left`/`\\right`, `\\displaystyle`, math
delimiters (`$`, `\\(`, `\\)`, `\\[`, `\\]`), `\\dfrac`/`\\tfrac` (as `\\frac`) and all
punctuation, and keeps the words (runs of letters and digits) joined by one space. Two
texts that differ only in those ways normalize to the same string.
"""

from __future__ import annotations

import re

_LABEL = re.compile(
    r"^\s*(?:(?:problem|question|exercise|example|task|q)\s*#?\s*\d+[a-z]?\s*[.:)]?|\(?\d+[.)])\s+", re.IGNORECASE)
_LATEX_NOISE = re.compile(r"\\(?:[,;!: ]|q?quad\b|left\b|right\b|displaystyle\b|[()\[\]])")
_FRAC = re.compile(r"\\[dt]frac\b")
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The normalized words of a text."""
    text = _LABEL.sub("", text, count=1).lower()
    return _WORD.findall(_FRAC.sub(r"\\frac", _LATEX_NOISE.sub(" ", text)))


def normalize(text: str) -> str:
    """The normalized text: its words joined by single spaces."""
    return " ".join(words(text))
