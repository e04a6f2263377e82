"""Normalized words: what decontamination and dedup compare."""

from skyeval.curation.normalize import normalize, words


def test_formatting_differences_normalize_away():
    base = normalize("Find $\\frac{1}{2} x$ when $x = 4$.")
    for variant in ("Problem 3. Find $\\frac{1}{2} x$ when $x = 4$.",
                    "Question 12: FIND \\(\\dfrac{1}{2}\\, x\\) when \\[x \\;= 4\\].",
                    "3) find   $\\tfrac{1}{2}\\!x$\n when $ x\\quad=\\left 4 \\right$ ."):
        assert normalize(variant) == base == "find frac 1 2 x when x 4"


def test_content_is_kept():
    assert words("3.5 is half of 7") == ["3", "5", "is", "half", "of", "7"]  # a number is no label
    assert normalize("Find x.") != normalize("Find y.")
    assert words("Naïve café’s costs 5 × 2 — ≤ 9") == ["naïve", "café", "s", "costs", "5", "2", "9"]  # non-ASCII letters kept
    assert words("x_2 + y") == ["x", "2", "y"]


def test_chinese_ideographs_are_words_and_fullwidth_punctuation_is_dropped():
    from skyeval.curation.normalize import words

    assert words("她还剩多少页？看了90页，") == ["她", "还", "剩", "多", "少", "页", "看", "了", "90", "页"]
    assert words("Dr. Smith, naïve café") == ["dr", "smith", "naïve", "café"]  # other scripts as before
