"""Deduplication of training rows, streamed: exact and near duplicates (docs/curation.md).

- exact: the same normalized text (`skyeval.curation.normalize`) as an earlier row;
- near: a MinHash LSH candidate (`datasketch.MinHashLSH`, default threshold 0.8, 128
  permutations) over word `shingle`-grams (default 3) of the normalized text.

The first row of each cluster is kept; a later row goes to `duplicates` with
`duplicate_of` (the input position of the kept row) and `match` (exact | near). Only kept
rows enter the LSH, so a cluster is named by its first row. MinHash signatures are
computed in worker processes (vectorized, datasketch's own permutations), the LSH lives
in this process.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from skyeval.curation.normalize import words

if TYPE_CHECKING:
    import numpy as np


SCHEME = "affine32"  # datasketch's permutation scheme (2.0's default), computed here vectorized


@dataclass
class DedupConfig:
    """Knobs of `dedup`."""

    threshold: float = 0.8  # estimated Jaccard similarity of near duplicates
    num_perm: int = 128
    shingle: int = 3  # words per shingle
    seed: int = 1


def signatures(texts: list[str], config: DedupConfig) -> tuple[list[str], "np.ndarray"]:
    """(normalized texts, MinHash hash values: one row of `num_perm` uint64 per text)."""
    import numpy as np
    from datasketch import MinHash
    from datasketch.minhash import _fmix

    a, b = MinHash(config.num_perm, seed=config.seed, scheme=SCHEME).permutations
    normalized, out = [], np.full((len(texts), config.num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    for i, text in enumerate(texts):
        ws = words(text)
        normalized.append(" ".join(ws))
        grams = {" ".join(ws[j:j + config.shingle]) for j in range(max(1, len(ws) - config.shingle + 1))}
        hv = np.fromiter((zlib.crc32(g.encode()) for g in grams), dtype=np.uint32, count=len(grams))
        if len(hv):
            out[i] = (_fmix(hv, 32)[:, None] * a + b).min(axis=0)
    return normalized, out


def _chunk_signatures(rows: list[Any], field: str, config: DedupConfig) -> tuple[list[str], "np.ndarray"]:
    from skyeval.curation.decontaminate import field_text
    from skyeval.curation.streams import as_dict

    return signatures([field_text(as_dict(r).get(field)) for r in rows], config)


def stream_signatures(chunks: Iterator[list[Any]], field: str, config: DedupConfig,
                      workers: int = 0) -> Iterator[tuple[list[Any], tuple[list[str], "np.ndarray"]]]:
    """(chunk, its signatures) in input order, computed on `workers` processes."""
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        for chunk in chunks:
            yield chunk, _chunk_signatures(chunk, field, config)
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque = deque()
        for chunk in chunks:
            pending.append((chunk, pool.submit(_chunk_signatures, chunk, field, config)))
            if len(pending) >= 2 * workers:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()


def dedup(source: str | os.PathLike, out_dir: str | os.PathLike, *, field: str | None = None,
          config: DedupConfig | None = None, format: str = "jsonl", workers: int = 0,
          chunk_rows: int = 2000) -> dict[str, Any]:
    """Stream `source` into `out_dir/kept.<format>` and `out_dir/duplicates.<format>`, and
    write `out_dir/report.json` (rows in, kept, exact and near duplicates, clusters)."""
    import hashlib
    import time
    from itertools import chain
    from pathlib import Path

    from datasketch import MinHash, MinHashLSH

    from skyeval.curation.streams import RowWriter, as_dict, default_fields, read_chunks
    from skyeval.results import write_json

    config = config or DedupConfig()
    start = time.perf_counter()
    chunks = read_chunks(source, chunk_rows)
    first = next(chunks, [])
    field = field or (default_fields(first[0])[0] if first else "problem")
    lsh = MinHashLSH(threshold=config.threshold, num_perm=config.num_perm)
    seen: dict[bytes, int] = {}
    out = Path(out_dir)
    position = exact = near = 0
    clusters: set[int] = set()
    with RowWriter(out / f"kept.{format}", format) as kept, RowWriter(out / f"duplicates.{format}", format) as dups:
        for chunk, (normalized, hashvalues) in stream_signatures(chain([first], chunks) if first else iter(()),
                                                                 field, config, workers):
            keep, duplicates = [], []
            for row, text, hv in zip(chunk, normalized, hashvalues):
                digest = hashlib.blake2b(text.encode(), digest_size=12).digest()
                original, kind = seen.get(digest), "exact"
                if original is None:
                    minhash = MinHash(config.num_perm, seed=config.seed, hashvalues=hv, scheme=SCHEME)
                    candidates = lsh.query(minhash)
                    if candidates:
                        original, kind = min(candidates), "near"
                    else:
                        seen[digest] = position
                        lsh.insert(position, minhash, check_duplication=False)
                if original is None:
                    keep.append(row)
                else:
                    exact += kind == "exact"
                    near += kind == "near"
                    clusters.add(original)
                    duplicates.append({**as_dict(row), "duplicate_of": original, "match": kind})
                position += 1
            kept.write_many(keep)
            dups.write_many(duplicates)
    seconds = time.perf_counter() - start
    report = {"source": str(source), "field": field, "rows_in": position, "kept": position - exact - near,
              "exact_duplicates": exact, "near_duplicates": near, "clusters_with_duplicates": len(clusters),
              "threshold": config.threshold, "num_perm": config.num_perm, "shingle": config.shingle,
              "seconds": round(seconds, 3), "rows_per_second": round(position / seconds) if seconds else None}
    write_json(out / "report.json", report)
    return report
