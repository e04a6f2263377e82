"""IFEval's 25 verifiable instructions, one checker each (Zhou et al. 2023).

`CHECKERS[instruction_id](response, **kwargs) -> bool`, with the kwargs the dataset gives
that instruction. Each follows the official definition (google-research
`instruction_following_eval`, as lm-evaluation-harness runs it); where a definition is
surprising it is kept, since published numbers were made with it, and said in a comment.
`KWARGS` lists the arguments each checker needs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Callable

from skyeval.scorers.ifeval import text

LESS_THAN, AT_LEAST = "less than", "at least"
RELATIONS = (LESS_THAN, AT_LEAST)
CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _compare(count: int, relation: str, threshold: int) -> bool:
    """`less than` -> count < threshold; `at least` -> count >= threshold."""
    if relation == LESS_THAN:
        return count < threshold
    if relation == AT_LEAST:
        return count >= threshold
    raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")


def _language_is(response: str, language: str) -> bool:
    """langdetect's language; text it cannot judge (no letters) counts as followed, as in
    the official checker."""
    found = text.detect_language(response)
    return found is None or found == language


# ---- keywords ---------------------------------------------------------------------------------
def keyword_existence(response: str, *, keywords: list[str]) -> bool:
    """Every keyword appears, case-insensitively (as a regular expression, anywhere: "cat"
    is found in "concatenate")."""
    return all(re.search(keyword, response, flags=re.IGNORECASE) for keyword in keywords)


def keyword_frequency(response: str, *, keyword: str, frequency: int, relation: str) -> bool:
    """The keyword's case-insensitive occurrences (as a regular expression, also inside words)."""
    return _compare(len(re.findall(keyword.strip(), response, flags=re.IGNORECASE)), relation, frequency)


def forbidden_words(response: str, *, forbidden_words: list[str]) -> bool:
    """None of the words appears as a whole word, case-insensitively."""
    return not any(re.search(rf"\b{word}\b", response, flags=re.IGNORECASE) for word in set(forbidden_words))


def letter_frequency(response: str, *, letter: str, let_frequency: int, let_relation: str) -> bool:
    """Occurrences of the letter, either case. Any relation but `less than` means at least."""
    count = Counter(response.lower())[letter.lower()]
    return count < let_frequency if let_relation == LESS_THAN else count >= let_frequency


# ---- language and case ------------------------------------------------------------------------
def response_language(response: str, *, language: str) -> bool:
    return _language_is(response, language)


def english_capital(response: str) -> bool:
    """All cased letters are capitals, and the text is English."""
    return response.isupper() and _language_is(response, "en")


def english_lowercase(response: str) -> bool:
    """All cased letters are lowercase, and the text is English."""
    return response.islower() and _language_is(response, "en")


def capital_word_frequency(response: str, *, capital_frequency: int, capital_relation: str) -> bool:
    """Words (NLTK's word tokens) all in capitals. Any relation but `less than` means at least."""
    count = sum(word.isupper() for word in text.word_tokens(response))
    return count < capital_frequency if capital_relation == LESS_THAN else count >= capital_frequency


# ---- length -----------------------------------------------------------------------------------
def number_sentences(response: str, *, num_sentences: int, relation: str) -> bool:
    return _compare(text.count_sentences(response), relation, num_sentences)


def number_words(response: str, *, num_words: int, relation: str) -> bool:
    return _compare(text.count_words(response), relation, num_words)


def number_paragraphs(response: str, *, num_paragraphs: int) -> bool:
    """Paragraphs split by the markdown divider `***` (with a space either side allowed): an
    empty first or last one does not count, an empty one between two breaks the rule."""
    paragraphs = re.split(r"\s?\*\*\*\s?", response)
    last = len(paragraphs) - 1
    if any(not p.strip() for i, p in enumerate(paragraphs) if 0 < i < last):
        return False
    return sum(bool(p.strip()) for p in paragraphs) == num_paragraphs


def nth_paragraph_first_word(response: str, *, num_paragraphs: int, nth_paragraph: int, first_word: str) -> bool:
    """Paragraphs split by blank lines (exactly "\\n\\n"): as many non-empty ones as asked,
    and the nth piece of the split starts with the word (its letters up to the first
    . , ? ! ' or ", leading quotes dropped; either case)."""
    pieces = response.split("\n\n")
    count = sum(bool(p.strip()) for p in pieces)
    if nth_paragraph > count:
        return False
    paragraph = pieces[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    head = re.match(r"[^.,?!'\"]*", word).group(0).lower()
    return count == num_paragraphs and head == first_word.lower()


# ---- content and format -----------------------------------------------------------------------
def number_placeholders(response: str, *, num_placeholders: int) -> bool:
    """At least that many square-bracket placeholders such as [address]."""
    return len(re.findall(r"\[.*?\]", response)) >= num_placeholders


def postscript(response: str, *, postscript_marker: str) -> bool:
    """A line holding the marker (P.S. or P.P.S, either case, a space allowed after each
    dot; any other marker as a regular expression)."""
    marker = postscript_marker.strip()
    patterns = {"P.P.S": r"\s*p\.\s?p\.\s?s.*$", "P.S.": r"\s*p\.\s?s\..*$"}
    pattern = patterns.get(marker, r"\s*" + marker.lower() + r".*$")
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


def number_bullet_lists(response: str, *, num_bullets: int) -> bool:
    """Exactly that many markdown bullet lines: `* item` (not `**`) or `- item`."""
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == num_bullets


def constrained_response(response: str) -> bool:
    """The response contains one of "My answer is yes.", "... no.", "... maybe."."""
    return any(option in response.strip() for option in CONSTRAINED_RESPONSES)


def number_highlighted_sections(response: str, *, num_highlights: int) -> bool:
    """At least that many non-empty `*highlighted*` spans on one line; each `**bold**` span
    counts once more (lm-evaluation-harness's reading of the official rule)."""
    single = [s for s in re.findall(r"\*[^\n\*]*\*", response) if s.strip("*").strip()]
    double = [s for s in re.findall(r"\*\*[^\n\*]*\*\*", response) if s[2:-2].strip()]
    return len(single) + len(double) >= num_highlights


def multiple_sections(response: str, *, section_spliter: str, num_sections: int) -> bool:
    """At least that many sections headed "<spliter> <number>" (e.g. "SECTION 2")."""
    splitter = r"\s?" + section_spliter.strip() + r"\s?\d+\s?"
    return len(re.split(splitter, response)) - 1 >= num_sections


def json_format(response: str) -> bool:
    """The whole response parses as JSON, after an optional ``` / ```json fence."""
    body = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        body = body.removeprefix(fence)
    body = body.removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def title(response: str) -> bool:
    """A title in double angular brackets on one line, such as <<poem of joy>>."""
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))


def two_responses(response: str) -> bool:
    """Two different responses separated by six asterisks `******`."""
    parts = response.split("******")
    last = len(parts) - 1
    if any(not p.strip() for i, p in enumerate(parts) if 0 < i < last):
        return False
    valid = [p for p in parts if p.strip()]
    return len(valid) == 2 and valid[0].strip() != valid[1].strip()


def repeat_prompt(response: str, *, prompt_to_repeat: str) -> bool:
    """The response starts with the request, repeated word for word (either case)."""
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


def end_checker(response: str, *, end_phrase: str) -> bool:
    """The response ends with the phrase (either case; surrounding double quotes ignored)."""
    return response.strip().strip('"').lower().endswith(end_phrase.strip().lower())


def quotation(response: str) -> bool:
    """The whole response is wrapped in double quotation marks."""
    body = response.strip()
    return len(body) > 1 and body[0] == '"' and body[-1] == '"'


def no_comma(response: str) -> bool:
    return "," not in response


CHECKERS: dict[str, Callable[..., bool]] = {
    "keywords:existence": keyword_existence,
    "keywords:frequency": keyword_frequency,
    "keywords:forbidden_words": forbidden_words,
    "keywords:letter_frequency": letter_frequency,
    "language:response_language": response_language,
    "length_constraints:number_sentences": number_sentences,
    "length_constraints:number_paragraphs": number_paragraphs,
    "length_constraints:number_words": number_words,
    "length_constraints:nth_paragraph_first_word": nth_paragraph_first_word,
    "detectable_content:number_placeholders": number_placeholders,
    "detectable_content:postscript": postscript,
    "detectable_format:number_bullet_lists": number_bullet_lists,
    "detectable_format:constrained_response": constrained_response,
    "detectable_format:number_highlighted_sections": number_highlighted_sections,
    "detectable_format:multiple_sections": multiple_sections,
    "detectable_format:json_format": json_format,
    "detectable_format:title": title,
    "combination:two_responses": two_responses,
    "combination:repeat_prompt": repeat_prompt,
    "startend:end_checker": end_checker,
    "startend:quotation": quotation,
    "change_case:capital_word_frequency": capital_word_frequency,
    "change_case:english_capital": english_capital,
    "change_case:english_lowercase": english_lowercase,
    "punctuation:no_comma": no_comma,
}


def _kwargs_of(checker: Callable[..., bool]) -> tuple[str, ...]:
    import inspect

    return tuple(p.name for p in inspect.signature(checker).parameters.values() if p.kind is p.KEYWORD_ONLY)


KWARGS: dict[str, tuple[str, ...]] = {name: _kwargs_of(checker) for name, checker in CHECKERS.items()}
