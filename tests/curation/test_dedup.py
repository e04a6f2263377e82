"""Deduplication: planted exact and near duplicates of real problems are found, distinct
problems are left alone."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from skyeval.curation.dedup import DedupConfig, dedup
from skyeval.curation.normalize import normalize
from skyeval.envs.registry import SkyEnvBuilder
from tests.conftest import REPO


@pytest.fixture(scope="module")
def distinct(data_dir) -> list[str]:
    """MATH-500, GSM8K and OlympiadBench problems, one per normalized text. A few are
    near duplicates of each other already (OlympiadBench's parts of one shared context)."""
    texts = {}
    for name in ("math500", "gsm8k", "olympiadbench"):
        for problem in SkyEnvBuilder.build(name).iter_problems():
            texts.setdefault(normalize(problem["question"]), problem["question"])
    return list(texts.values())


def jaccard(a: str, b: str, shingle: int = 3) -> float:
    """The true Jaccard similarity of two texts' word shingles (what MinHash estimates)."""
    def grams(text: str) -> set[str]:
        ws = normalize(text).split()
        return {" ".join(ws[j:j + shingle]) for j in range(max(1, len(ws) - shingle + 1))}
    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y)


def near_copy(text: str, rng: random.Random) -> str | None:
    """An edited copy, case and spacing changed too: one middle word replaced (texts of
    100+ words) or a closing word added (40+ words), so its true Jaccard stays >= 0.95.
    None for shorter texts: any edit of them is no longer a near duplicate at 0.8."""
    words = text.split()
    if len(words) >= 100:
        words[len(words) // 2] = "something"
    elif len(words) >= 40:
        words.append("Explain.")
    else:
        return None
    return "  ".join(words).upper() if rng.random() < 0.5 else " ".join(words)


def test_planted_near_duplicates_are_found_and_distinct_problems_kept(distinct, tmp_path):
    rng = random.Random(0)
    rows = [{"problem": t, "origin": i} for i, t in enumerate(distinct)]
    planted = rng.sample(range(len(distinct)), 300)
    for i in planted:
        rows.append({"problem": "  ".join(distinct[i].upper().split()), "origin": i, "planted": "exact"})
        near = near_copy(distinct[i], rng)
        if near is not None:
            rows.append({"problem": near, "origin": i, "planted": "near"})
    planted_rows = [r for r in rows if "planted" in r]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = dedup(tmp_path / "in.jsonl", tmp_path / "out", workers=2, chunk_rows=250)
    kept = [json.loads(line) for line in (tmp_path / "out" / "kept.jsonl").open()]
    dups = [json.loads(line) for line in (tmp_path / "out" / "duplicates.jsonl").open()]
    source_dups = [d for d in dups if "planted" not in d]
    similarity = [jaccard(d["problem"], rows[d["duplicate_of"]]["problem"]) for d in source_dups]
    false_positives = [(d["problem"][:60], s) for d, s in zip(source_dups, similarity) if s < 0.6]
    missed = [r for r in kept if "planted" in r]
    planted_found = [d for d in dups if "planted" in d]
    near_planted = [r for r in planted_rows if r["planted"] == "near"]
    print(f"\n{len(distinct)} distinct + {len(planted_rows)} planted ({len(near_planted)} near, true Jaccard min "
          f"{min(jaccard(r['problem'], distinct[r['origin']]) for r in near_planted):.3f}): found "
          f"{len(planted_found)}, missed {len(missed)}; near duplicates already in the sources {len(source_dups)} "
          f"(true Jaccard min {min(similarity, default=1):.2f}), false positives {len(false_positives)}")
    assert len(near_planted) > 50
    assert not [r for r in missed if r["planted"] == "exact"]
    assert len(planted_found) >= len(planted_rows) - 0.01 * len(near_planted)  # LSH finds J>=0.95 pairs 99.8% of the time
    assert not false_positives  # every removal is a real near duplicate of its cluster's first row
    assert len(source_dups) < 0.02 * len(distinct)
    assert [r["origin"] for r in kept if "planted" not in r] == sorted(
        set(range(len(distinct))) - {d["origin"] for d in source_dups})
    removed_origins = {d["origin"]: d["duplicate_of"] for d in source_dups}
    for d in planted_found:  # the cluster is named by its first row
        if d["origin"] in removed_origins:  # its original was itself a near duplicate of an earlier row
            assert d["duplicate_of"] == removed_origins[d["origin"]]
        else:
            assert d["duplicate_of"] == d["origin"]
            assert d["match"] == "exact" if d["planted"] == "exact" else d["match"] == "near"
    assert report["exact_duplicates"] == sum(d["match"] == "exact" for d in dups) >= len(planted) - len(source_dups)
    assert report["rows_in"] == len(rows) and report["kept"] == len(kept) == len(rows) - len(dups)


def test_threshold_is_configurable_and_cli_writes_parquet(tmp_path):
    base = "Let x and y be positive real numbers such that x plus y equals ten. Find the largest value of x times y."
    edited = base.replace("ten", "twelve")
    rows = [{"text": base}, {"text": edited}, {"text": "A completely different question about graph coloring."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loose = dedup(tmp_path / "in.jsonl", tmp_path / "loose", config=DedupConfig(threshold=0.5), workers=1)
    strict = dedup(tmp_path / "in.jsonl", tmp_path / "strict", config=DedupConfig(threshold=0.95), workers=1)
    assert (loose["near_duplicates"], strict["near_duplicates"]) == (1, 0)
    assert (loose["fields"], loose["on"]) == (["text"], "prompt")

    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "curate.py"), "dedup", str(tmp_path / "in.jsonl"),
                           "--out", str(tmp_path / "cli"), "--format", "parquet", "--threshold", "0.5",
                           "--num-perm", "64"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "rows in 3, kept 2, exact duplicates 0, near duplicates 1" in proc.stdout
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "cli" / "kept.parquet").column("text").to_pylist() == [base, rows[2]["text"]]
    assert pq.read_table(tmp_path / "cli" / "duplicates.parquet").to_pylist()[0]["duplicate_of"] == 0


def test_on_the_conversation_a_long_shared_prompt_never_makes_distinct_responses_alike(tmp_path):
    """The same long prompt with two different short responses: two conversations (the
    whole texts share ~90% of their shingles); the same response lightly edited: one."""
    prompt = " ".join(f"word{i}" for i in range(300)) + " What is the total?"
    steps = "First I add the first two numbers, then I add the third one to that sum, and I check the result " \
            "against the question once more before I write it down, which gives"
    responses = [f"{steps} 42.", "Counting backwards from the end gives 42.",
                 f"{steps} 42 in the end."]  # the third: the first, lightly edited
    rows = [{"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": r}]}
            for r in responses]
    rows.append({"messages": [{"role": "user", "content": prompt + " Answer in words."},
                              {"role": "assistant", "content": responses[0]}]})  # another prompt: kept
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = dedup(tmp_path / "in.jsonl", tmp_path / "out", config=DedupConfig(threshold=0.5), workers=1)
    assert report["on"] == "conversation" and report["kept"] == 3 and report["near_duplicates"] == 1
    (dup,) = [json.loads(line) for line in (tmp_path / "out" / "duplicates.jsonl").open()]
    assert dup["messages"][1]["content"] == responses[2] and dup["duplicate_of"] == 0
