"""The meaning-level check: a benchmark problem restated in other words, with the same
quantities (docs/curation.md, "paraphrase").

A text becomes a set of features: content words, stemmed and folded onto a small synonym
table (`purchased` = `bought` = `buy`), and numbers (`five` = `5`, `$1,200` = `1200`,
`twice` = `2`, `half` = `0.5`). Each feature weighs its idf over the benchmark problems;
features of more than `max_df` of the problems (stop words, "how many") are not indexed.

1. Retrieval (vectorized, every row): a chunk's rows (their normalized words, shared with
   the n-gram check) times the inverted index (a sparse word x problem matrix of weights)
   gives each pair's word coverage and focus exactly, hence an upper bound of its score
   (quantity coverage 1); the `TOP_K` pairs of a row with the highest bound, if it reaches
   the threshold, are scored.
2. Scoring (those pairs only): the mean of the word coverage (idf-weighted share of the
   problem's content words the row holds) and the quantity coverage (idf-weighted share of
   the problem's quantities, parsed from the raw text with percentages, fractions and
   compound number words, found in the row; trusted less when the problem's quantities
   are few and common, such as "2 and 3"), scaled down when less than `FOCUS` of the
   row's own word weight is the problem's (a long text covering a problem's words by
   chance). A row matches when the score reaches `threshold` (default `DEFAULT_THRESHOLD`,
   measured on the development set of tests/curation/data: docs/curation.md).

Problems with fewer than `MIN_FEATURES` indexed words or no quantity (a one-line
"Simplify $\\sqrt{242}$") are left to the n-gram check: a paraphrase of them is not told
apart from chance.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import repeat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import scipy.sparse

DEFAULT_THRESHOLD = 0.6
TOP_K = 20  # pairs scored per row (those of the highest bound)
MIN_FEATURES = 4
FOCUS = 0.3  # share of a row's word weight that must be the problem's for a full score
QUANTITY_INFORMATION = 5.0  # summed idf of a problem's quantities for them to count fully ("2, 3": ~2)
MAX_DF = 0.05  # features of more than this share of the problems are not indexed,
MAX_POSTINGS = 100  # nor of more problems than this (bounds the retrieval's work per row)
MAX_CACHE = 500_000  # tokens remembered per process when texts are read here (check without features)

_NUMBER_TOKEN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?$")
_QUANTITY = re.compile(  # a number (with /denominator, with %) | a word | a fraction glyph
    r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)(?:\s*/\s*(\d+))?(\s*%|\s+percent)?|([a-z]+)|([½⅓⅔¼¾])")
_GLYPHS = {"½": Fraction(1, 2), "⅓": Fraction(1, 3), "⅔": Fraction(2, 3), "¼": Fraction(1, 4),
           "¾": Fraction(3, 4)}

STOP = frozenset("""a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either else ever for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just let me more most much my
myself no nor not now of off on once only or other our ours out over own per same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up very was
we were what when where which while who whom why will with would you your yours s t d ll m re ve many total
altogether""".split())

NUMBER_WORDS: dict[str, int | Fraction] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000, "million": 1000000,
    "twice": 2, "double": 2, "doubled": 2, "thrice": 3, "triple": 3, "tripled": 3, "half": Fraction(1, 2),
    "halves": Fraction(1, 2), "quarter": Fraction(1, 4), "quarters": Fraction(1, 4), "dozen": 12, "dozens": 12,
    "third": Fraction(1, 3), "thirds": Fraction(1, 3), "fourth": Fraction(1, 4), "fourths": Fraction(1, 4),
    "fifth": Fraction(1, 5), "fifths": Fraction(1, 5), "tenth": Fraction(1, 10), "tenths": Fraction(1, 10),
}
_TENS = {"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}

# words a rewrite swaps for each other, folded onto the first of each group (after stemming)
SYNONYMS = [
    "buy bought purchase acquire get got obtain", "sell sold", "cost price priced charge fee", "pay paid",
    "spend spent expend expense expenditure", "earn earned make made income gain profit", "eat ate consume consumed",
    "give gave gift donate hand", "take took", "run ran jog", "walk stroll", "drive drove", "ride rode",
    "write wrote", "grow grew", "find found", "keep kept retain", "win won", "lose lost", "leave left remain",
    "remaining rest", "begin began start initial", "each every", "day daily", "week weekly", "month monthly",
    "year yearly annual annually", "hour hourly", "meter metre", "dollar buck", "shop store market",
    "house home", "car vehicle automobile", "child kid", "friend buddy pal", "big large huge", "small little tiny",
    "fast quick rapid", "need require", "want wish desire intend plan", "use utilize employ", "finish complete",
    "build construct", "fix repair", "collect gather", "travel journey trip", "speed rate pace velocity",
    "amount quantity number count", "bake cook", "bag sack", "box crate carton", "job work task", "student pupil",
]

_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "er", "es", "ed", "ly", "s")


def stem(word: str) -> str:
    """A light suffix-stripping stem: `purchases`, `purchased`, `purchasing` -> `purchas`."""
    if len(word) <= 3:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base + "y"
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if base.endswith("e"):
                base = base[:-1]
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":  # running -> run
                base = base[:-1]
            return base
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


_SYNONYM_OF = {stem(w): stem(group.split()[0]) for group in SYNONYMS for w in group.split()}


def number_text(value: Fraction | int) -> str:
    """A quantity as one canonical string: 1200, 0.5, 0.333333 (6 places)."""
    value = Fraction(value).limit_denominator(10**6)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6f}".rstrip("0")


def word_feature(token: str) -> str | None:
    """The feature of one token (a word or a plain number; numbers start with "#"), None
    for a stop word."""
    if _NUMBER_TOKEN.match(token):
        return "#" + number_text(Fraction(token.replace(",", "")))
    if token in NUMBER_WORDS:
        return "#" + number_text(NUMBER_WORDS[token])
    if token in STOP or len(token) < 2:
        return None
    root = stem(token)
    return _SYNONYM_OF.get(root, root)


def features(text: str) -> set[str]:
    """The features of a text's normalized words (as rows are read: `normalize.words`)."""
    from skyeval.curation.normalize import words

    return {f for f in map(word_feature, words(text)) if f}


def quantities(text: str) -> set[str]:
    """The quantities of a text: numbers (commas dropped), `50%` as 0.5 (and 50), `3/4`, `¾`,
    number words with compounds (`twenty-five` = 25, `two hundred` = 200, `two thirds`)."""
    found: set[str] = set()
    pending: Fraction | int | None = None  # a number word waiting for its compound
    previous = ""
    for number, denominator, percent, word, glyph in _QUANTITY.findall(text.lower()):
        if number or glyph:
            if pending is not None:
                found.add(number_text(pending))
                pending = None
            if glyph:
                found.add(number_text(_GLYPHS[glyph]))
                continue
            value = Fraction(number.replace(",", ""))
            if denominator and int(denominator):
                value /= int(denominator)
            found.add(number_text(value))
            if percent:
                found.add(number_text(value / 100))
            continue
        value = NUMBER_WORDS.get(word)
        if value is None:
            if pending is not None:
                found.add(number_text(pending))
                pending = None
            continue
        if pending is not None:
            if previous in _TENS and isinstance(value, int) and value < 10:
                value = pending + value  # twenty-five
            elif value in (100, 1000, 1000000) and isinstance(pending, int):
                value = pending * value  # two hundred
            elif isinstance(value, Fraction) and isinstance(pending, int) and pending < 10:
                value = pending * value  # three quarters, two thirds
            else:
                found.add(number_text(pending))
        pending, previous = value, word
    if pending is not None:
        found.add(number_text(pending))
    return found


def _variants(word: str) -> list[str]:
    """Inflections a rewrite may use of a word: plural, past, gerund, agent, adverb."""
    forms = [word + s for s in ("s", "es", "ed", "d", "ing", "er", "ers", "ly")]
    if word.endswith("e"):
        forms += [word[:-1] + "ing", word[:-1] + "er"]
    if word.endswith("y"):
        forms += [word[:-1] + "ies", word[:-1] + "ied"]
    if word[-1] not in "aeiouwxy" and word[-2] in "aeiou":
        forms += [word + word[-1] + "ing", word + word[-1] + "ed"]
    return forms


def combine(words: float, numbers: float, focus: float, information: float) -> float:
    """The score of a pair: the mean of its word coverage and its quantity coverage (the
    latter trusted in proportion to the problem's quantity `information`, up to
    `QUANTITY_INFORMATION`), scaled down when less than `FOCUS` of the row's word weight
    is the problem's."""
    trust = min(1.0, information / QUANTITY_INFORMATION)
    return (words + numbers * trust) / 2 * min(1.0, focus / FOCUS)


@dataclass
class ParaphraseMatch:
    """A row's best paraphrase candidate: the problem's index and the score's parts."""

    problem: int
    score: float
    words: float  # idf-weighted share of the problem's content words found in the row
    numbers: float  # idf-weighted share of the problem's quantities found in the row
    focus: float  # share of the row's word weight that is the problem's


@dataclass
class ParaphraseIndex:
    """An inverted index of benchmark problems' features, for retrieval then scoring."""

    threshold: float
    feature_ids: dict[str, int]  # indexed features (numbers start with "#")
    is_word: "np.ndarray"  # per feature id: a word (not a number)
    word_weights: "np.ndarray"  # per feature id: its idf if a word, else 0
    retrieval: "scipy.sparse.csr_matrix"  # word feature x problem: idf weights
    word_totals: "np.ndarray"  # per problem: summed weight of its indexed words (inf: not indexed)
    problem_quantities: list[dict[str, float]]  # per problem: quantity -> weight ({}: not indexed)
    cache: dict[str, int] = field(default_factory=dict, repr=False)  # token -> word feature id or -1
    token_features: "np.ndarray | None" = None  # vocabulary id -> word feature id or -1 (extend_vocabulary)

    def extend_vocabulary(self, vocab: dict[str, int]) -> None:
        """Add to `vocab` (token -> id, the n-gram index's) the inflections and synonyms of
        the indexed words, and map every vocabulary id to its word feature: rows are then
        looked up once, by the n-gram check, and their features gathered by id."""
        import numpy as np

        candidates = set(vocab) | {w for group in SYNONYMS for w in group.split()}
        candidates |= {v for w in list(candidates) if w.isalpha() and len(w) >= 3 for v in _variants(w)}
        for token in sorted(candidates - set(vocab)):
            if self._word_feature_id(token) >= 0:
                vocab[token] = len(vocab)
        self.token_features = np.full(len(vocab), -1, dtype=np.int64)
        for token, index in vocab.items():
            self.token_features[index] = self._word_feature_id(token)

    def _word_feature_id(self, token: str) -> int:
        feature = word_feature(token)
        found = self.feature_ids.get(feature, -1) if feature else -1
        return found if found >= 0 and self.is_word[found] else -1

    @classmethod
    def build(cls, texts: list[str], *, threshold: float = DEFAULT_THRESHOLD, max_df: float = MAX_DF,
              min_features: int = MIN_FEATURES) -> "ParaphraseIndex":
        import numpy as np
        import scipy.sparse

        if not 0 < threshold <= 1:
            raise ValueError(f"paraphrase threshold must be in (0, 1], got {threshold}")
        per_problem = [features(t) for t in texts]
        per_quantities = [quantities(t) for t in texts]
        count = len(texts)
        df: dict[str, int] = {}
        for fs, qs in zip(per_problem, per_quantities):
            for f in fs | {"#" + q for q in qs}:
                df[f] = df.get(f, 0) + 1
        idf = {f: math.log((count + 1) / (n + 0.5)) for f, n in df.items()}
        limit = max(2, min(int(max_df * count), MAX_POSTINGS))
        kept = sorted(f for f, n in df.items() if n <= limit)
        feature_ids = {f: i for i, f in enumerate(kept)}
        weights = np.array([idf[f] for f in kept], dtype=np.float32)
        is_word = np.array([not f.startswith("#") for f in kept], dtype=bool)
        word_weights = np.where(is_word, weights, 0).astype(np.float32)
        rows, cols, problem_quantities = [], [], []
        totals = np.full(count, np.inf, dtype=np.float32)
        for problem, (fs, qs) in enumerate(zip(per_problem, per_quantities)):
            words = [feature_ids[f] for f in fs if f in feature_ids and not f.startswith("#")]
            if len(words) < min_features or not qs:
                problem_quantities.append({})
                continue
            problem_quantities.append({q: idf["#" + q] for q in qs})
            rows.extend(words)
            cols.extend([problem] * len(words))
            totals[problem] = word_weights[words].sum()
        rows_a, cols_a = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
        retrieval = scipy.sparse.csr_matrix((word_weights[rows_a], (rows_a, cols_a)), shape=(len(kept), count))
        return cls(threshold, feature_ids, is_word, word_weights, retrieval, totals, problem_quantities)

    def describe(self) -> dict[str, object]:
        return {"threshold": self.threshold, "features": len(self.feature_ids),
                "problems_indexed": sum(1 for q in self.problem_quantities if q)}

    def _cached_feature_id(self, token: str) -> int:
        found = self._word_feature_id(token)
        if len(self.cache) < MAX_CACHE:
            self.cache[token] = found
        return found

    def score(self, problem: int, words: float, focus: float, row_quantities: set[str]) -> ParaphraseMatch:
        """The score of one (row, problem) pair from its word coverage and focus."""
        numbers = self.problem_quantities[problem]
        number_cov = sum(w for q, w in numbers.items() if q in row_quantities) / sum(numbers.values())
        score = combine(words, number_cov, focus, sum(numbers.values()))
        return ParaphraseMatch(problem, round(score, 4), round(words, 4), round(number_cov, 4), round(focus, 4))

    def check(self, texts: list[str], threshold: float | None = None,
              features: "tuple[np.ndarray, np.ndarray] | None" = None) -> list[ParaphraseMatch | None]:
        """The best match of each text at or above `threshold` (default the index's), else
        None. `features`: (text index, word feature id) of every token, when the caller
        has looked them up (`BenchmarkIndex.check`); else the texts are read here."""
        import numpy as np
        import scipy.sparse

        from skyeval.curation.normalize import words as normalized_words

        threshold = self.threshold if threshold is None else threshold
        results: list[ParaphraseMatch | None] = [None] * len(texts)
        if not self.retrieval.nnz or not texts:
            return results
        if features is None:
            tokens = [normalized_words(t) for t in texts]
            lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
            flat = [t for ts in tokens for t in ts]
            ids = np.fromiter(map(self.cache.get, flat, repeat(-2)), dtype=np.int64, count=len(flat))
            for position in np.flatnonzero(ids == -2).tolist():  # tokens not seen yet in this process
                ids[position] = self._cached_feature_id(flat[position])
            rows = np.repeat(np.arange(len(texts)), lengths)
            features = (rows[ids >= 0], ids[ids >= 0])
        rows, ids = features
        query = scipy.sparse.csr_matrix((np.ones(len(ids), np.float32), (rows, ids)),
                                        shape=(len(texts), len(self.feature_ids)))
        query.sum_duplicates()
        query.data[:] = 1.0
        row_weight = query @ self.word_weights
        hits = (query @ self.retrieval).tocoo()  # weight of each problem's words the row holds
        words = hits.data / self.word_totals[hits.col]
        focus = np.minimum(1.0, hits.data / np.maximum(row_weight[hits.row], 1e-9))
        # the quantity coverage adds at most 1: pairs that cannot reach the threshold are dropped
        bound = (words + 1) / 2 * np.minimum(1.0, focus / FOCUS)
        keep = np.flatnonzero(bound >= threshold)
        keep = keep[np.lexsort((-bound[keep], hits.row[keep]))]  # by row, best bound first
        ranks = np.arange(len(keep)) - np.searchsorted(hits.row[keep], hits.row[keep], side="left")
        keep = keep[ranks < TOP_K]
        row_quantities: dict[int, set[str]] = {}
        for row, problem, w, f in zip(hits.row[keep].tolist(), hits.col[keep].tolist(), words[keep].tolist(),
                                      focus[keep].tolist()):
            if row not in row_quantities:
                row_quantities[row] = quantities(texts[row])
            match = self.score(problem, w, f, row_quantities[row])
            best = results[row]
            if match.score >= threshold and (best is None or match.score > best.score):
                results[row] = match
        return results
