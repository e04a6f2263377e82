"""The optional model stage of decontamination (off by default; docs/curation.md).

An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM `--task embed`, TEI ...)
embeds every benchmark problem and every row the local checks kept; the `top_k` problems
nearest a row (cosine) at or above `min_similarity` are candidates. With a `judge_model`,
each candidate is confirmed by one chat completion that answers whether the two texts are
the same problem (the llm-decontaminator recipe); without one, the nearest candidate is
the match. A confirmed row gets `match: "model"`, `score` = the cosine similarity.

Every embedding and every verdict is cached in an SQLite file keyed by the model and the
text(s), so a re-run (or a second input checked against the same benchmarks) sends no
request for what it has seen. `ModelStage.cost` counts requests and tokens, and how many
texts came from the cache.

The confirm call is self-contained (the openai SDK); the project's model judge
(`grading` config) can replace it once it exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

JUDGE_PROMPT = (
    "Are these two math or programming problems the same problem, perhaps reworded, reordered, translated "
    "or with irrelevant sentences added? Numbers written as words count as the same numbers; a problem "
    "with different numbers or a different question is a different problem.\n\nProblem A:\n{row}\n\n"
    "Problem B:\n{problem}\n\nAnswer with one word: True or False.")
_VERDICT = re.compile(r"\b(true|false)\b", re.IGNORECASE)


@dataclass
class ModelStageConfig:
    """Where the model stage's models are and how candidates are chosen."""

    api_url: str  # base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    embedding_model: str
    judge_model: str | None = None  # None: the nearest problem above min_similarity is the match
    api_key_env: str | None = "OPENAI_API_KEY"  # None or unset: no key (a local server)
    top_k: int = 3
    min_similarity: float = 0.8
    batch_size: int = 64
    cache: str = str(Path.home() / ".cache" / "skyeval" / "decontaminate.sqlite")
    timeout_s: float = 60.0


@dataclass
class ModelCost:
    """What the model stage sent, and what the cache saved."""

    embedding_requests: int = 0
    embedding_tokens: int = 0
    embedded: int = 0
    embeddings_cached: int = 0
    judge_requests: int = 0
    judge_prompt_tokens: int = 0
    judge_completion_tokens: int = 0
    verdicts_cached: int = 0

    def line(self) -> str:
        return (f"model stage: {self.embedded} texts embedded ({self.embedding_tokens} tokens, "
                f"{self.embedding_requests} requests), {self.embeddings_cached} from the cache; judge "
                f"{self.judge_requests} calls ({self.judge_prompt_tokens} prompt + {self.judge_completion_tokens} "
                f"completion tokens), {self.verdicts_cached} verdicts from the cache")


class Cache:
    """Embeddings and verdicts by key, in one SQLite file (safe across runs)."""

    def __init__(self, path: str | os.PathLike) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB)")
        self._db.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, verdict INTEGER)")
        self._db.commit()

    @staticmethod
    def key(*parts: str) -> str:
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()

    def vectors(self, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                marks = ",".join("?" * len(part))
                found.update(self._db.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", part))
        return found

    def put_vectors(self, items: list[tuple[str, bytes]]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?)", items)
            self._db.commit()

    def verdict(self, key: str) -> bool | None:
        with self._lock:
            row = self._db.execute("SELECT verdict FROM verdicts WHERE key = ?", (key,)).fetchone()
        return None if row is None else bool(row[0])

    def put_verdict(self, key: str, verdict: bool) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?)", (key, int(verdict)))
            self._db.commit()

    def close(self) -> None:
        self._db.close()


@dataclass
class ModelMatch:
    problem: int  # index into the stage's problems
    similarity: float
    judged: bool  # a judge confirmed it (False: similarity alone)


@dataclass
class ModelStage:
    """Embedding retrieval (and judge confirmation) of rows against benchmark problems."""

    config: ModelStageConfig
    problems: list[tuple[str, str, str]]  # (benchmark, problem id, text)
    cost: ModelCost = field(default_factory=ModelCost)

    def __post_init__(self) -> None:
        from openai import OpenAI

        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        self._client = OpenAI(base_url=self.config.api_url, api_key=key or "EMPTY", timeout=self.config.timeout_s,
                              max_retries=3)
        self._cache = Cache(self.config.cache)
        self._matrix: "np.ndarray | None" = None

    def close(self) -> None:
        self._cache.close()
        self._client.close()

    def embed(self, texts: list[str]) -> "np.ndarray":
        """Unit vectors of `texts` (rows), from the cache or the endpoint."""
        import numpy as np

        model = self.config.embedding_model
        keys = [Cache.key("embedding", model, t) for t in texts]
        cached = self._cache.vectors(list(dict.fromkeys(keys)))
        self.cost.embeddings_cached += sum(1 for k in keys if k in cached)
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in cached))
        for start in range(0, len(missing), self.config.batch_size):
            batch = missing[start:start + self.config.batch_size]
            response = self._client.embeddings.create(model=model, input=batch)
            self.cost.embedding_requests += 1
            self.cost.embedded += len(batch)
            self.cost.embedding_tokens += getattr(response.usage, "prompt_tokens", 0) or 0
            items = sorted(response.data, key=lambda d: d.index)
            fresh = [(Cache.key("embedding", model, t), np.asarray(d.embedding, dtype=np.float32).tobytes())
                     for t, d in zip(batch, items)]
            self._cache.put_vectors(fresh)
            cached.update(fresh)
        vectors = np.stack([np.frombuffer(cached[k], dtype=np.float32) for k in keys]) if keys else \
            np.zeros((0, 1), np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _benchmark_matrix(self) -> "np.ndarray":
        if self._matrix is None:
            self._matrix = self.embed([text for _, _, text in self.problems])
        return self._matrix

    def judge(self, row: str, problem: str) -> bool:
        """The judge model's verdict on (row, problem): the same problem? Cached."""
        key = Cache.key("verdict", self.config.judge_model or "", row, problem)
        cached = self._cache.verdict(key)
        if cached is not None:
            self.cost.verdicts_cached += 1
            return cached
        response = self._client.chat.completions.create(
            model=self.config.judge_model, temperature=0, max_tokens=8,
            messages=[{"role": "user", "content": JUDGE_PROMPT.format(row=row, problem=problem)}])
        self.cost.judge_requests += 1
        usage = response.usage
        self.cost.judge_prompt_tokens += getattr(usage, "prompt_tokens", 0) or 0
        self.cost.judge_completion_tokens += getattr(usage, "completion_tokens", 0) or 0
        found = _VERDICT.search(response.choices[0].message.content or "")
        verdict = bool(found) and found.group(1).lower() == "true"  # no verdict: not confirmed
        self._cache.put_verdict(key, verdict)
        return verdict

    def check(self, texts: list[str]) -> list[ModelMatch | None]:
        """The confirmed match of each text, or None."""
        import numpy as np

        if not texts or not self.problems:
            return [None] * len(texts)
        matrix = self._benchmark_matrix()
        similarity = self.embed(texts) @ matrix.T
        k = min(self.config.top_k, matrix.shape[0])
        nearest = np.argsort(-similarity, axis=1)[:, :k]
        results: list[ModelMatch | None] = []
        for row, candidates in enumerate(nearest.tolist()):
            found = None
            for problem in candidates:
                score = float(similarity[row, problem])
                if score < self.config.min_similarity:
                    break
                if self.config.judge_model is None:
                    found = ModelMatch(problem, round(score, 4), False)
                    break
                if self.judge(texts[row], self.problems[problem][2]):
                    found = ModelMatch(problem, round(score, 4), True)
                    break
            results.append(found)
        return results

    def describe(self) -> dict[str, Any]:
        c = self.config
        return {"api_url": c.api_url, "embedding_model": c.embedding_model, "judge_model": c.judge_model,
                "top_k": c.top_k, "min_similarity": c.min_similarity, "cache": c.cache}
