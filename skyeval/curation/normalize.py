"""Problem text as decontamination and dedup compare it: normalized words.

`normalize` lowercases, drops a leading "Problem 3." style label, LaTeX spacing
(`\\,` `\\;` `\\!` `\\:` `\\quad` `\\qquad`), `\\left`/`\\right`, `\\displaystyle`, math
delimiters (`$`, `\\(`, `\\)`, `\\[`, `\\]`), `\\dfrac`/`\\tfrac` (as `\\frac`) and all
ASCII punctuation (and common non-ASCII punctuation: quotes, dashes, ×, ≤ ...), and keeps
the words (runs of letters, digits and other non-ASCII characters) joined by one space. Two
texts that differ only in those ways normalize to the same string. Chinese and Japanese,
written without spaces, count each ideograph (or kana) as a word, and their full-width
punctuation (，。？：) as punctuation, so their problems have n-grams too.
"""

from __future__ import annotations

import re

_LABEL = re.compile(
    r"^\s*(?:(?:problem|question|exercise|example|task|q)\s*#?\s*\d+[a-z]?\s*[.:)]?|\(?\d+[.)])\s+", re.IGNORECASE)
_LATEX_NOISE = re.compile(r"\\(?:[,;!: ]|q?quad\b|left\b|right\b|displaystyle\b|[()\[\]])")
# bytes.translate maps every non-alphanumeric ASCII byte to a space (non-ASCII bytes stay:
# letters such as é or 中); common non-ASCII punctuation and math symbols are spaced first
_ASCII_SPACES = bytes(c if chr(c).isalnum() else 32 for c in range(128)) + bytes(range(128, 256))
_CJK_PUNCTUATION = re.compile(r"[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]")
_CJK_CHARACTER = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")
_UNICODE_PUNCTUATION = "\u2019\u2018\u201c\u201d\u2014\u2013\u2026\u00d7\u00b7\u2212\u2022\u2192\u2264\u2265\u00b0\u2032\u00ab\u00bb\u00a0\u2260\u00b1\u00f7\u221a\u2248"


def words(text: str) -> list[str]:
    """The normalized words of a text."""
    text = _LATEX_NOISE.sub(" ", _LABEL.sub("", text, count=1).lower())
    if "frac" in text:
        text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    if not text.isascii():
        for mark in _UNICODE_PUNCTUATION:
            if mark in text:
                text = text.replace(mark, " ")
        if _CJK_CHARACTER.search(text):
            text = _CJK_CHARACTER.sub(r" \1 ", _CJK_PUNCTUATION.sub(" ", text))
    return text.encode().translate(_ASCII_SPACES).decode().split()


def normalize(text: str) -> str:
    """The normalized text: its words joined by single spaces."""
    return " ".join(words(text))
