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
_WORD = re.compile(r"[^\W_]+")
# ASCII fast path: bytes.translate maps every non-alphanumeric ASCII byte to a space; the
# words are then those of the regex (on ASCII text the two agree)
_ASCII_SPACES = bytes(c if chr(c).isalnum() else 32 for c in range(128)) + bytes(range(128, 256))


def words(text: str) -> list[str]:
    """The normalized words of a text."""
    text = _LATEX_NOISE.sub(" ", _LABEL.sub("", text, count=1).lower())
    if "frac" in text:
        text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    if text.isascii():
        return text.encode().translate(_ASCII_SPACES).decode().split()
    return _WORD.findall(text)


def normalize(text: str) -> str:
    """The normalized text: its words joined by single spaces."""
    return " ".join(words(text))
