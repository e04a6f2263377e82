"""Deduplication of training rows, streamed: exact and near duplicates (docs/curation.md).

- exact: the same normalized text (`skyeval.curation.normalize`) as an earlier row;
- near: a MinHash LSH candidate (datasketch's MinHash permutations and its choice of
  bands x rows for the threshold: default 0.8 with 128 permutations gives 9 x 13) over word
  `shingle`-grams (default 3) of the normalized text: a row whose key in any band equals
  a kept row's.

Rows are compared on part `on` of their text (`skyeval.curation.conversations`): `prompt`
(user turns), `response` (assistant turns, reasoning included) or `conversation` (the
default for conversation files and run folders, `prompt` for problem files): the same
prompt (normalized) and a near-duplicate response, so the distinct responses of one problem
are kept apart however long the prompt they share. The first row of each cluster is kept; a later row goes to `duplicates` with
`duplicate_of` (the input position of the kept row) and `match` (exact | near). Only kept
rows enter the index, so a cluster is named by its first row. Signatures and band keys
are computed in worker processes (vectorized over blocks of rows); this process keeps
one dict of band key -> first row (one uint64 per band, ~1 GB for 1M rows, where
`datasketch.MinHashLSH`'s own storage took 3.9 GB).
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
    """(normalized texts, MinHash hash values: one row of `num_perm` uint32 per text).

    A shingle's hash combines its words' CRC32s; each permutation is datasketch's own
    (`fmix(h) * a + b`, uint32), applied to a block of rows at once."""
    import numpy as np
    from datasketch import MinHash
    from datasketch.minhash import _fmix

    a, b = MinHash(config.num_perm, seed=config.seed, scheme=SCHEME).permutations
    k = config.shingle
    normalized, vocab, ids, lengths = [], {}, [], []
    for text in texts:
        ws = words(text)
        normalized.append(" ".join(ws))
        ids.extend([vocab.setdefault(w, len(vocab)) for w in ws])
        lengths.append(len(ws))
    word_hashes = np.fromiter((zlib.crc32(w.encode()) for w in vocab), dtype=np.uint32, count=len(vocab))
    hashes = word_hashes[np.array(ids, dtype=np.int64)]
    out = np.full((len(texts), config.num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    with np.errstate(over="ignore"):
        shingles = np.zeros(max(len(hashes) - k + 1, 0), dtype=np.uint32)
        for j in range(k):  # the shingle starting at each word (windows across rows are not used)
            shingles = shingles * np.uint32(0x01000193) + hashes[j:len(hashes) - k + 1 + j]
        for first in range(0, len(texts), _BLOCK_ROWS):
            rows = range(first, min(first + _BLOCK_ROWS, len(texts)))
            segments = [(starts[r], starts[r] + max(lengths[r] - k + 1, 0)) for r in rows]
            full = [r for r, (lo, hi) in zip(rows, segments) if hi > lo]
            if full:
                take = np.concatenate([np.arange(*segments[r - first]) for r in full])
                values = a[:, None] * _fmix(shingles[take], 32)[None, :] + b[:, None]  # permutations x shingles
                bounds = np.cumsum([0] + [segments[r - first][1] - segments[r - first][0] for r in full])[:-1]
                out[full] = np.minimum.reduceat(values, bounds, axis=1).T
            for r in rows:  # shorter than a shingle: the words' hash as one shingle
                if 0 < lengths[r] < k:
                    h = np.uint32(0)
                    for value in hashes[starts[r]:starts[r + 1]]:
                        h = h * np.uint32(0x01000193) + value
                    out[r] = _fmix(np.array([h], dtype=np.uint32), 32) * a + b
    return normalized, out


_BLOCK_ROWS = 200  # rows whose shingles x permutations are one array (~20 MB for 1 KB rows)


def band_keys(hashvalues: "np.ndarray", bands: int, rows: int) -> "np.ndarray":
    """One uint64 key per LSH band of each signature (band index folded in): two texts are
    candidates when any key is equal."""
    import numpy as np

    keys = np.zeros((len(hashvalues), bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for band in range(bands):
            h = np.full(len(hashvalues), band + 1, dtype=np.uint64)
            for j in range(band * rows, (band + 1) * rows):
                h = h * np.uint64(0x100000001B3) + hashvalues[:, j].astype(np.uint64)
            keys[:, band] = h
    return keys


def _chunk_keys(rows: list[Any], fields: list[str], on: str, config: DedupConfig, bands: int,
                band_rows: int) -> tuple[list[bytes], list[list[int]]]:
    """(digest of each normalized text, its band keys) for a chunk, in a worker. On the
    conversation, the band keys are the response's, each folded with the digest of the
    normalized prompt: rows are near duplicates when their prompts are the same and their
    responses near duplicates (a long shared prompt never makes distinct responses alike)."""
    import hashlib

    import numpy as np

    from skyeval.curation.conversations import part_text, row_messages, text
    from skyeval.curation.normalize import normalize
    from skyeval.curation.streams import as_dict

    def digest(value: str, size: int = 12) -> bytes:
        return hashlib.blake2b(value.encode(), digest_size=size).digest()

    if on != "conversation":
        normalized, hashvalues = signatures([text(as_dict(r), fields, on, i) for i, r in enumerate(rows)], config)
        return [digest(t) for t in normalized], band_keys(hashvalues, bands, band_rows).tolist()
    prompts, responses = [], []
    for i, row in enumerate(rows):
        row = as_dict(row)
        text(row, fields, on, i)  # an EmptyRowError when the conversation has no text at all
        turns = row_messages(row, fields)
        prompts.append(normalize(part_text(turns, "prompt")))
        responses.append(part_text(turns, "response"))
    normalized, hashvalues = signatures(responses, config)
    folded = np.frombuffer(b"".join(digest(p, 8) for p in prompts), dtype=np.uint64).reshape(-1, 1)
    with np.errstate(over="ignore"):
        keys = band_keys(hashvalues, bands, band_rows) * np.uint64(0x9E3779B97F4A7C15) + folded
    return [digest(f"{p}\x00{r}") for p, r in zip(prompts, normalized)], keys.tolist()


def stream_keys(chunks: Iterator[list[Any]], fields: list[str], on: str, config: DedupConfig, bands: int,
                band_rows: int, workers: int = 0) -> Iterator[tuple[list[Any], tuple[list[bytes], list[list[int]]]]]:
    """(chunk, its digests and band keys) in input order, computed on `workers` processes."""
    from skyeval.curation.streams import map_chunks

    return map_chunks(_chunk_keys, chunks, fields, on, config, bands, band_rows, workers=workers)


def default_part(row: dict[str, Any], fields: list[str]) -> str:
    """`conversation` for rows that hold a response (a conversation, a sample), else `prompt`."""
    from skyeval.curation.conversations import has_response

    return "conversation" if has_response(row, fields) else "prompt"


def dedup(source: str | os.PathLike, out_dir: str | os.PathLike, *, fields: list[str] | None = None,
          on: str | None = None, config: DedupConfig | None = None, format: str = "jsonl", workers: int = 0,
          chunk_rows: int = 2000, progress: str | None = None) -> dict[str, Any]:
    """Stream `source` into `out_dir/kept.<format>` and `out_dir/duplicates.<format>`, and
    write `out_dir/report.json` (rows in, kept, exact and near duplicates, clusters),
    comparing part `on` of `fields` (defaults: `conversations.default_fields` and
    `default_part` of the first row). `progress` names a bar shown on a terminal."""
    import time
    from itertools import chain
    from pathlib import Path

    from datasketch import MinHashLSH

    from skyeval.curation.conversations import default_fields
    from skyeval.curation.streams import RowWriter, as_dict, read_chunks
    from skyeval.envs.local import progress_bar
    from skyeval.results import write_json

    config = config or DedupConfig()
    start = time.perf_counter()
    chunks = read_chunks(source, chunk_rows)
    first = next(chunks, [])
    fields = fields or (default_fields(as_dict(first[0])) if first else ["problem"])
    on = on or (default_part(as_dict(first[0]), fields) if first else "prompt")
    tuned = MinHashLSH(threshold=config.threshold, num_perm=config.num_perm)  # datasketch's (bands, rows) choice
    seen: dict[bytes, int] = {}  # digest of a kept text -> its position
    buckets: dict[int, int] = {}  # band key of a kept row -> its position
    out = Path(out_dir)
    position = exact = near = 0
    clusters: set[int] = set()
    with RowWriter(out / f"kept.{format}", format) as kept, RowWriter(out / f"duplicates.{format}", format) as dups, \
            progress_bar(progress, None, unit="row") as bar:
        for chunk, (digests, keys) in stream_keys(chain([first], chunks) if first else iter(()), fields, on, config,
                                                  tuned.b, tuned.r, workers):
            bar.update(len(chunk))
            keep, duplicates = [], []
            for row, digest, row_keys in zip(chunk, digests, keys):
                original, kind = seen.get(digest), "exact"
                if original is None:
                    candidates = [buckets[k] for k in row_keys if k in buckets]
                    if candidates:
                        original, kind = min(candidates), "near"
                    else:
                        seen[digest] = position
                        for k in row_keys:
                            buckets[k] = position
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
    report = {"source": str(source), "fields": fields, "on": on, "rows_in": position, "kept": position - exact - near,
              "exact_duplicates": exact, "near_duplicates": near, "clusters_with_duplicates": len(clusters),
              "threshold": config.threshold, "num_perm": config.num_perm, "shingle": config.shingle,
              "seconds": round(seconds, 3), "rows_per_second": round(position / seconds) if seconds else None}
    write_json(out / "report.json", report)
    return report
