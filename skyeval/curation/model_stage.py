"""The optional model stage of decontamination (off by default; docs/curation.md).

An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM `--task embed`, TEI ...)
embeds every benchmark problem and every row the local checks kept; the `top_k` problems
nearest a row (cosine) at or above `min_similarity` are candidates. With a `judge`, each
candidate is confirmed by the project's model judge (`skyeval.grading.Judge`, any
backend) with the `same_problem` prompt: "is the row this benchmark problem, restated?"
(the llm-decontaminator recipe). Candidates are asked in rank order, one round per rank
for all rows at once, so a row's later candidates are asked only when its earlier ones
were not confirmed. Without a judge, the nearest candidate is the match. A confirmed row
gets `match: "model"`, `score` = the cosine similarity.

The cache is a folder: embeddings in `embeddings.sqlite` (keyed by model and text), the
judge's replies in `judge/` (a `JudgeCache`, keyed by judge model, prompt, sampling and
the pair), so a re-run (or a second input against the same benchmarks) sends no request
for what it has seen. `ModelStage.cost` counts requests, tokens and cache hits.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyeval.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

PROMPT = "same_problem"  # of skyeval.grading.prompts.PROMPTS


@dataclass
class ModelStageConfig:
    """Where the model stage's models are and how candidates are chosen.

    `judge`: the judge's model config, of any backend (`HTTPConfig`, `VLLMConfig`,
    `RayConfig`), or its fields as a dict whose `_target_` names the class (default the
    openai backend), as `grading.judge` takes it; None: no judge, the nearest problem at or
    above `min_similarity` is the match. `api_url` and `api_key_env` are the embedding
    endpoint's; `cache` is a folder."""

    api_url: str  # base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    embedding_model: str
    judge: Any = None
    api_key_env: str | None = "OPENAI_API_KEY"  # None: no key; unset on a loopback URL: no key
    top_k: int = 3
    min_similarity: float = 0.8
    batch_size: int = 64
    cache: str = str(Path.home() / ".cache" / "skyeval" / "decontaminate")
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        from skyeval.backends.base import ModelConfig
        from skyeval.grading.config import judge_config

        if self.judge is not None:
            self.judge = judge_config(self.judge, required=False, key="judge")
            if not isinstance(self.judge, ModelConfig):
                raise ConfigError("model stage: the judge names no model: set judge.model_source (or judge=None)")


@dataclass
class ModelCost:
    """What the model stage sent, and what the cache saved; `judge` is the judge's
    `summary()` (requests, cached, tokens, cost with a `price`), None without a judge."""

    embedding_requests: int = 0
    embedding_tokens: int = 0
    embedded: int = 0
    embeddings_cached: int = 0
    judge: dict[str, Any] | None = None

    def line(self) -> str:
        text = (f"model stage: {self.embedded} texts embedded ({self.embedding_tokens} tokens, "
                f"{self.embedding_requests} requests), {self.embeddings_cached} from the cache; ")
        j = self.judge
        if j is None:
            return text + "no judge"
        text += (f"judge {j['requests']} calls ({j['tokens']['prompt']} prompt + {j['tokens']['completion']} "
                 f"completion tokens), {j['cached']} verdicts from the cache")
        if j["cost"] is not None:
            text += f", ${j['cost']:.4f}"
        failed = {"unparseable": j["parse_failed"], "failed": j["errors"]}
        return text + "".join(f", {n} {what} (not confirmed)" for what, n in failed.items() if n)


class EmbeddingCache:
    """Embeddings by key, in one SQLite file (safe across runs)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB)")
        self._db.commit()

    @staticmethod
    def key(model: str, text: str) -> str:
        return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()

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

        from skyeval.backends.openai import NO_KEY, read_api_key
        from skyeval.grading import GradingConfig, Judge, JudgeCache

        c = self.config
        key = read_api_key(c.api_key_env, c.api_url)
        self._client = OpenAI(base_url=c.api_url, api_key=key or NO_KEY, timeout=c.timeout_s, max_retries=3)
        self._cache = EmbeddingCache(Path(c.cache) / "embeddings.sqlite")
        self._judge = None
        if c.judge is not None:
            grading = GradingConfig(mode="always", judge=c.judge, prompt=PROMPT)
            self._judge = Judge(grading, JudgeCache(Path(c.cache) / "judge"))
            self.cost.judge = self._judge.summary()
        self._matrix: "np.ndarray | None" = None

    def close(self) -> None:
        self._cache.close()
        self._client.close()
        if self._judge is not None:
            self._judge.close()

    def embed(self, texts: list[str]) -> "np.ndarray":
        """Unit vectors of `texts` (rows), from the cache or the endpoint."""
        import numpy as np

        model = self.config.embedding_model
        keys = [EmbeddingCache.key(model, t) for t in texts]
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
            fresh = [(EmbeddingCache.key(model, t), np.asarray(d.embedding, dtype=np.float32).tobytes())
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

    def check(self, texts: list[str]) -> list[ModelMatch | None]:
        """The confirmed match of each text, or None."""
        import numpy as np

        from skyeval.grading import JudgeItem
        from skyeval.grading.verdicts import EQUIVALENT

        if not texts or not self.problems:
            return [None] * len(texts)
        matrix = self._benchmark_matrix()
        similarity = self.embed(texts) @ matrix.T
        k = min(self.config.top_k, matrix.shape[0])
        nearest = np.argsort(-similarity, axis=1)[:, :k]
        candidates = [[(p, round(float(similarity[row, p]), 4)) for p in ranked
                       if similarity[row, p] >= self.config.min_similarity] for row, ranked in enumerate(nearest.tolist())]
        if self._judge is None:
            return [ModelMatch(found[0][0], found[0][1], False) if found else None for found in candidates]
        results: list[ModelMatch | None] = [None] * len(texts)
        for rank in range(k):  # one round per rank: a row's next candidate only if this one was not confirmed
            asked = [(row, found[rank]) for row, found in enumerate(candidates)
                     if results[row] is None and len(found) > rank]
            if not asked:
                break
            items = [JudgeItem(self.problems[p][2], "", texts[row]) for row, (p, _) in asked]
            for (row, (p, score)), judgement in zip(asked, self._judge.judge(items)):
                if judgement.verdict == EQUIVALENT:  # different, unparseable or failed: not confirmed
                    results[row] = ModelMatch(p, score, True)
        self.cost.judge = self._judge.summary()
        return results

    def describe(self) -> dict[str, Any]:
        c = self.config
        judge = None if c.judge is None else {"model": c.judge.model_source, "backend": type(c.judge).__name__,
                                              "prompt": PROMPT}
        return {"api_url": c.api_url, "embedding_model": c.embedding_model, "judge": judge,
                "top_k": c.top_k, "min_similarity": c.min_similarity, "cache": c.cache}
