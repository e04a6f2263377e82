"""The meaning-level check: a benchmark problem restated in other words, with the same
quantities (docs/curation.md, "paraphrase").

A text becomes content words, stemmed and folded onto a small synonym table (`purchased`
= `bought` = `buy`), and quantities parsed from the raw text (`five` = `5`, `$1,200` =
`1200`, `50%` = `0.5`, `twice` = `2`, `three quarters` = `0.75`). Each weighs its idf over
the benchmark problems.

1. Retrieval (vectorized, every row): the inverted index holds each problem's rare words
   (those of at most `MAX_DF` of the problems, and at most `MAX_POSTINGS`) and its
   `RETRIEVAL_WORDS` rarest ones. A row is scored against the problems whose indexed words
   it shares, `RETRIEVAL` of their weight at least, and whose score could still reach the
   threshold; the `TOP_K` best of a row on those words.
2. Scoring (those pairs): `combine` = the problem's word coverage (idf-weighted share of
   its words the row holds) x its quantity coverage (idf-weighted share of its quantities
   found in the row) x its `trust` (how much its quantities and words carry: "2 and 3",
   or a few words, match other texts by chance), scaled down when less than `FOCUS` of the
   row's word weight is the problem's (a long text covering a problem's words by chance)
   and when the row holds quantities the problem has not. A row matches at `threshold`
   (default `DEFAULT_THRESHOLD`, chosen on the development set of tests/curation/data:
   docs/curation.md gives its precision and recall).

Problems with fewer than `MIN_FEATURES` words or no quantity (a one-line "Simplify
$\\sqrt{242}$") are left to the n-gram check: a paraphrase of them is not told apart from
chance. A problem found under several names (the same normalized text, as ASDiv and MAWPS
share problems, or MMLU-STEM's questions in MMLU once its `Answer Choices:` header is set
aside: `problem_key`) is indexed once; `same_problems` lists them all.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from itertools import repeat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import scipy.sparse

DEFAULT_THRESHOLD = 0.18  # chosen on the development set (docs/curation.md)
TOP_K = 10  # pairs scored per row (those of the highest bound)
RETRIEVAL_WORDS = 3  # a problem's rarest words always in the inverted index
RETRIEVAL = 0.1  # share of a problem's rare word weight a row must hold to be scored against it
MIN_FEATURES = 4
FOCUS = 0.2  # share of a row's word weight that must be the problem's for a full score
# a problem is fully trusted when its quantities carry this much information and its words
# this much (summed idf, in units of the idf of a feature of one problem alone)
QUANTITY_INFORMATION = 1.2  # a number of its own, or several common ones ("2 and 3" carry ~0.3)
WORD_INFORMATION = 4.4
EXTRA = 0.8  # how much quantities of the row that the problem has not lower the score
MAX_DF = 0.05  # words of more than this share of the problems are common: not in the inverted index,
MAX_POSTINGS = 100  # nor those of more problems than this (bounds the retrieval's work per row)
MAX_CACHE = 500_000  # tokens remembered per process when texts are read here (check without features)

_NUMBER_TOKEN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?$")
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
# a number (1,200  2.5  3/4  50%  50 percent); `quantities` looks at the character before it
_DIGITS = re.compile(r"(\d+(?:,\d{3})*(?:\.\d+)?)(?:\s*/\s*(\d+))?(\s*%|\s+percent)?")
_LEADING_DIGITS = re.compile(r"\d+")
_GLYPH = re.compile("[½⅓⅔¼¾]")
# runs of ASCII letters become words, digits "#" (a number between two number words parts them)
_LETTER_RUNS = bytes(c if chr(c).isalpha() else 35 if chr(c).isdigit() else 32 for c in range(128)) + bytes(range(128, 256))
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
    if isinstance(value, int):
        return str(value)
    value = value.limit_denominator(10**6)
    if value.denominator == 1:
        return str(value.numerator)
    return f"{float(value):.6f}".rstrip("0")


def word_feature(token: str) -> str | None:
    """The feature of one word: its stem, folded onto `SYNONYMS`; None for a stop word or a
    number (numbers are `quantities`, read from the raw text)."""
    if token in STOP or len(token) < 2 or token in NUMBER_WORDS or _NUMBER_TOKEN.match(token):
        return None
    root = stem(token)
    return _SYNONYM_OF.get(root, root)


def features(text: str) -> set[str]:
    """The word features of a text's normalized words (as rows are read: `normalize.words`)."""
    from skyeval.curation.normalize import words

    return {f for f in map(word_feature, words(text)) if f}


def quantities(text: str) -> set[str]:
    """The quantities of a text: numbers (commas dropped), `50%` as 0.5 (and 50), `3/4`, `¾`,
    number words with compounds (`twenty-five` = 25, `two hundred` = 200, `two thirds`)."""
    text = text.lower()
    found: set[str] = set()
    for m in _DIGITS.finditer(text):
        start, (number, denominator, percent) = m.start(), m.groups()
        before = text[start - 1] if start else " "
        if before.isalnum() or before == "_":  # part of a word: x2
            continue
        if before == ".":  # .5, unless part of a word or a number: v.2, 1.2.3
            if start > 1 and (text[start - 2].isalnum() or text[start - 2] in "._"):
                continue
            number = "." + _LEADING_DIGITS.match(number).group()
        found.update(_number_quantities(number, denominator, percent is not None))
    if not text.isascii():
        found.update(number_text(_GLYPHS[glyph]) for glyph in _GLYPH.findall(text))
    words = text.encode().translate(_LETTER_RUNS).decode().split()
    pending: Fraction | int | None = None  # a number word waiting for its compound
    previous, last = "", -2
    for position, word in [(i, w) for i, w in enumerate(words) if w in NUMBER_WORDS]:
        value = NUMBER_WORDS[word]
        if pending is not None:
            if position != last + 1:  # another word (or a number) in between
                found.add(number_text(pending))
            elif previous in _TENS and isinstance(value, int) and value < 10:
                value = pending + value  # twenty-five
            elif value in (100, 1000, 1000000) and isinstance(pending, int):
                value = pending * value  # two hundred
            elif isinstance(value, Fraction) and isinstance(pending, int) and pending < 10:
                value = pending * value  # three quarters, two thirds
            else:
                found.add(number_text(pending))
        pending, previous, last = value, word, position
    if pending is not None:
        found.add(number_text(pending))
    return found


@lru_cache(maxsize=1 << 16)
def _number_quantities(number: str, denominator: str | None, percent: bool) -> tuple[str, ...]:
    """The quantities of one number as `quantities` reads it (remembered: texts repeat their numbers)."""
    number = number.replace(",", "")
    whole, _, decimals = number.partition(".")
    if not (denominator or percent or len(decimals) > 6):  # 1200, 2.50: written as number_text would
        decimals = decimals.rstrip("0")
        return (f"{int(whole or 0)}.{decimals}" if decimals else str(int(whole or 0)),)
    value = Fraction(number)
    if denominator and int(denominator):
        value /= int(denominator)
    return (number_text(value), number_text(value / 100)) if percent else (number_text(value),)


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


def trust(quantities: dict[str, float], words: float, unit: float) -> float:
    """How far a match on a problem can be trusted, from what its quantities and words
    carry (summed idf): a few common numbers ("2 and 3"), a few words ("Find the sum of
    the digits of 2^4") match other texts by chance."""
    information = sum(quantities.values()) / unit
    return math.sqrt(min(1.0, information / QUANTITY_INFORMATION)) * min(1.0, words / unit / WORD_INFORMATION)


def combine(words, focus, numbers, extra, trusted):  # floats, or numpy arrays of pairs
    """The score of a pair: the problem's word coverage, times its quantity coverage, times
    its `trust`, scaled down when less than `FOCUS` of the row's word weight is the
    problem's and when the row holds quantities the problem has not (`extra`: their share
    of the row's quantity weight)."""
    import numpy as np

    return words * np.minimum(1.0, focus / FOCUS) ** 2 * numbers ** 2 * trusted * (1 - EXTRA * extra)


def problem_key(text: str) -> str:
    """What makes two benchmark problems the same problem: their normalized text, the
    multiple-choice header `Answer Choices:` set aside (the Qwen2.5-Math harness writes
    MMLU's questions with it, MMLU's own copy without)."""
    from skyeval.curation.normalize import normalize

    return normalize(text).replace(" answer choices a ", " a ", 1)


@dataclass
class ParaphraseMatch:
    """A row's best paraphrase candidate: the problem's index and the score's parts."""

    problem: int
    score: float
    words: float  # idf-weighted share of the problem's content words found in the row
    numbers: float  # idf-weighted share of the problem's quantities found in the row
    focus: float  # share of the row's word weight that is the problem's
    extra: float  # share of the row's quantity weight that is not the problem's


@dataclass
class ParaphraseIndex:
    """An index of benchmark problems' features, for retrieval then scoring."""

    threshold: float
    feature_ids: dict[str, int]  # word features of the problems
    word_weights: "np.ndarray"  # per feature id: its idf
    retrieval: "scipy.sparse.csr_matrix"  # word feature x problem: idf weights of its retrieval words
    common: "scipy.sparse.csr_matrix"  # problem x word feature: idf weights of its other words
    word_totals: "np.ndarray"  # per problem: summed weight of its words (inf: not indexed)
    common_totals: "np.ndarray"  # per problem: summed weight of its other words
    rare_totals: "np.ndarray"  # per problem: summed weight of its retrieval words
    trust: "np.ndarray"  # per problem: its `trust` (0: not indexed)
    problem_quantities: list[dict[str, float]]  # per problem: quantity -> weight ({}: not indexed)
    quantity_weights: dict[str, float]  # every problem quantity -> its idf (others: `unknown_weight`)
    unknown_weight: float  # the idf of a quantity of no problem
    duplicates: dict[int, list[int]] = field(default_factory=dict)  # indexed problem -> the same problem's
    # other indices (`problem_key`; those are not indexed themselves)
    cache: dict[str, int] = field(default_factory=dict, repr=False)  # token -> word feature id or -1
    token_features: "np.ndarray | None" = None  # vocabulary id -> word feature id or -1 (extend_vocabulary)

    def same_problems(self, problem: int) -> list[int]:
        """The indices of a matched problem and of every other copy of it (`problem_key`)."""
        return [problem, *self.duplicates.get(problem, ())]

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
        return self.feature_ids.get(feature, -1) if feature else -1

    @classmethod
    def build(cls, texts: list[str], *, threshold: float = DEFAULT_THRESHOLD, max_df: float = MAX_DF,
              min_features: int = MIN_FEATURES) -> "ParaphraseIndex":
        """The index of `texts` (a problem's index is its position); a problem whose
        `problem_key` an earlier one has is indexed through that one (`same_problems`), and
        idf counts distinct problems."""
        import numpy as np
        import scipy.sparse

        if not 0 < threshold <= 1:
            raise ValueError(f"paraphrase threshold must be in (0, 1], got {threshold}")
        first: dict[str, int] = {}
        duplicates: dict[int, list[int]] = {}
        for problem, text in enumerate(texts):
            seen = first.setdefault(problem_key(text), problem)
            if seen != problem:
                duplicates.setdefault(seen, []).append(problem)
        distinct = sorted(first.values())
        per_problem = {p: features(texts[p]) for p in distinct}
        per_quantities = {p: quantities(texts[p]) for p in distinct}
        count = len(texts)
        df: dict[str, int] = {}
        for problem in distinct:
            for f in per_problem[problem] | {"#" + q for q in per_quantities[problem]}:
                df[f] = df.get(f, 0) + 1
        idf = {f: math.log((len(distinct) + 1) / (n + 0.5)) for f, n in df.items()}
        unit = math.log((len(distinct) + 1) / 1.5)  # the idf of a feature of one problem alone
        rare = max(2, min(int(max_df * len(distinct)), MAX_POSTINGS))  # a word of more problems is common
        kept = sorted(f for f in df if f[0] != "#")  # words (quantities are "#" + their text)
        feature_ids = {f: i for i, f in enumerate(kept)}
        word_weights = np.array([idf[f] for f in kept], dtype=np.float32)
        is_rare = np.array([df[f] <= rare for f in kept], dtype=bool)
        rows, cols, retrieved = [], [], []
        problem_quantities: list[dict[str, float]] = [{} for _ in texts]
        totals = np.full(count, np.inf, dtype=np.float32)
        trusts = np.zeros(count, dtype=np.float32)
        for problem in distinct:
            fs, qs = per_problem[problem], per_quantities[problem]
            ids = sorted((feature_ids[f] for f in fs), key=lambda i: (-word_weights[i], i))  # rarest first
            if len(ids) < min_features or not qs:
                continue
            problem_quantities[problem] = {q: idf["#" + q] for q in sorted(qs)}  # sums in one order: run to run
            rows.extend(ids)
            cols.extend([problem] * len(ids))
            # its rare words, and its `RETRIEVAL_WORDS` rarest ones whatever their count, retrieve it
            retrieved.extend(is_rare[i] or rank < RETRIEVAL_WORDS for rank, i in enumerate(ids))
            totals[problem] = word_weights[ids].sum()
            trusts[problem] = trust(problem_quantities[problem], totals[problem], unit)
        rows_a, cols_a = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
        rare_entry = np.array(retrieved, dtype=bool)
        shape = (len(kept), count)
        retrieval = scipy.sparse.csr_matrix((word_weights[rows_a[rare_entry]], (rows_a[rare_entry],
                                            cols_a[rare_entry])), shape=shape)
        common = scipy.sparse.csr_matrix((word_weights[rows_a[~rare_entry]], (cols_a[~rare_entry],
                                         rows_a[~rare_entry])), shape=shape[::-1])
        common_totals = np.asarray(common.sum(axis=1), dtype=np.float32).ravel()
        rare_totals = np.asarray(retrieval.sum(axis=0), dtype=np.float32).ravel()
        quantity_weights = {f[1:]: w for f, w in idf.items() if f[0] == "#"}
        return cls(threshold, feature_ids, word_weights, retrieval, common, totals, common_totals, rare_totals, trusts,
                   problem_quantities, quantity_weights, math.log((len(distinct) + 1) / 0.5), duplicates)

    def describe(self) -> dict[str, object]:
        return {"threshold": self.threshold, "features": len(self.feature_ids),
                "problems_indexed": sum(1 for q in self.problem_quantities if q),
                "same_problem_copies": sum(map(len, self.duplicates.values()))}

    def _cached_feature_id(self, token: str) -> int:
        found = self._word_feature_id(token)
        if len(self.cache) < MAX_CACHE:
            self.cache[token] = found
        return found

    def score(self, problem: int, words: float, focus: float, row_quantities: set[str]) -> ParaphraseMatch:
        """The score of one (row, problem) pair from its word coverage and focus."""
        numbers = self.problem_quantities[problem]
        found = sum(w for q, w in numbers.items() if q in row_quantities)
        row_total = sum(self.quantity_weights.get(q, self.unknown_weight) for q in sorted(row_quantities))
        extra = 1 - found / row_total if row_total else 0.0
        score = float(combine(words, focus, found / sum(numbers.values()), extra, float(self.trust[problem])))
        return ParaphraseMatch(problem, round(score, 4), round(words, 4), round(found / sum(numbers.values()), 4),
                               round(focus, 4), round(extra, 4))

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
        row_weight = np.maximum(query @ self.word_weights, 1e-9)
        hits = (query @ self.retrieval).tocoo()  # weight of each problem's retrieval words the row holds
        # candidates: pairs sharing `RETRIEVAL` of the problem's retrieval word weight whose
        # score could reach the threshold (were every other word of the problem in the row, all
        # its quantities found and none extra); a row's `TOP_K` best on those words are scored
        retrieved = np.flatnonzero(hits.data >= RETRIEVAL * self.rare_totals[hits.col])
        pair_rows, problems, rare = hits.row[retrieved], hits.col[retrieved], hits.data[retrieved]
        bound = self._partial(rare + self.common_totals[problems], pair_rows, problems, row_weight)
        keep = np.flatnonzero(bound >= threshold)
        rank = self._partial(rare[keep], pair_rows[keep], problems[keep], row_weight)
        keep = keep[np.argsort(pair_rows[keep] * 2.0 - rank, kind="stable")]  # by row, best first
        ranks = np.arange(len(keep)) - np.searchsorted(pair_rows[keep], pair_rows[keep], side="left")
        keep = keep[ranks < TOP_K]
        pair_rows, problems = pair_rows[keep], problems[keep]
        shared = rare[keep] + np.asarray(query[pair_rows].multiply(self.common[problems]).sum(axis=1)).ravel()
        partial = self._partial(shared, pair_rows, problems, row_weight)
        keep = np.flatnonzero(partial >= threshold)
        words = shared[keep] / self.word_totals[problems[keep]]
        focus = np.minimum(1.0, shared[keep] / row_weight[pair_rows[keep]])
        row_quantities: dict[int, set[str]] = {}
        for row, problem, w, f in zip(pair_rows[keep].tolist(), problems[keep].tolist(), words.tolist(),
                                      focus.tolist()):
            if row not in row_quantities:
                row_quantities[row] = quantities(texts[row])
            match = self.score(problem, w, f, row_quantities[row])
            best = results[row]
            if match.score >= threshold and (best is None or match.score > best.score):
                results[row] = match
        return results

    def _partial(self, shared: "np.ndarray", rows: "np.ndarray", problems: "np.ndarray",
                 row_weight: "np.ndarray") -> "np.ndarray":
        """The score of pairs whose shared word weight is `shared`, were every quantity of
        the problem found in the row and none extra (an upper bound of their score)."""
        import numpy as np

        words = np.minimum(1.0, shared / self.word_totals[problems])
        return combine(words, shared / row_weight[rows], 1.0, 0.0, self.trust[problems])
