"""Decontamination with planted contamination: real benchmark problems (the local mirror)
planted into clean rows with the perturbations real datasets show, and clean rows of
other datasets that must not be flagged."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from skyeval.curation.decontaminate import BenchmarkIndex, benchmark_names, decontaminate
from skyeval.curation.normalize import normalize
from skyeval.envs.registry import SkyEnvBuilder
from tests.conftest import REPO

MATH_AND_CODE = ["aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench",
                 "humaneval", "mbpp", "leetcode", "codeforces", "code_contests", "apps"]
CLEAN = ["mmlu", "mmlu_pro", "arc_c", "gpqa_diamond"]  # other datasets: not indexed here
CURATE = str(REPO / "scripts" / "curate.py")


@pytest.fixture(scope="module")
def index(data_dir) -> BenchmarkIndex:
    return BenchmarkIndex.from_envs(MATH_AND_CODE)


def problems(name: str) -> list[dict]:
    return list(SkyEnvBuilder.build(name).iter_problems())


def reformat_latex(text: str) -> str:
    text = re.sub(r"\$([^$]+)\$", r"\\(\1\\)", text)
    return text.replace("\\frac", "\\dfrac").replace("(", "\\left(").replace("=", "\\,=\\,")


def change_number(text: str) -> str | None:
    """The text with its middle number changed (None without a number)."""
    numbers = list(re.finditer(r"\d+", text))
    if not numbers:
        return None
    m = numbers[len(numbers) // 2]
    return text[:m.start()] + str(int(m.group()) + 7) + text[m.end():]


PERTURBATIONS = {
    "verbatim": lambda t: t,
    "latex": reformat_latex,
    "numbering": lambda t: f"Problem {random.Random(t).randint(1, 40)}. {t}",
    "prefix": lambda t: f"Solve the following competition problem carefully. {t}",
    "suffix": lambda t: f"{t}\nPut your final answer in a box and explain each step.",
    "case_space": lambda t: "  ".join(t.upper().split()),
    "number": change_number,
}


def planted_rows() -> list[dict]:
    rng = random.Random(0)
    rows = []
    for name in MATH_AND_CODE:
        chosen = problems(name)
        rng.shuffle(chosen)
        for problem in chosen[:15]:
            for kind, perturb in PERTURBATIONS.items():
                text = perturb(problem["question"])
                if text is not None:
                    rows.append({"problem": text, "benchmark": name, "problem_id": str(problem["id"]), "kind": kind})
    return rows


def test_planted_problems_are_found_and_a_changed_number_is_a_near_match(index, tmp_path):
    rows = planted_rows()
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = decontaminate(tmp_path / "in.jsonl", tmp_path / "out", index, workers=1)
    removed = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    found = {(r["benchmark"], r["problem_id"], r["kind"]): r["contamination"] for r in removed}
    missed = [r for r in rows if (r["benchmark"], r["problem_id"], r["kind"]) not in found]
    print(f"\nplanted {len(rows)}, found {len(found)}, missed {len(missed)}")
    assert not missed, [(r["benchmark"], r["kind"], r["problem"][:80]) for r in missed]
    assert report["removed"] == len(rows) and report["kept"] == 0
    for (benchmark, problem_id, kind), matches in found.items():
        own = [m for m in matches if m["benchmark"] == benchmark and m["problem_id"] == problem_id]
        assert own, (benchmark, problem_id, kind, matches)
        expected = {"verbatim": "exact", "latex": "exact", "numbering": "exact", "case_space": "exact",
                    "prefix": "contains", "suffix": "contains", "number": "near"}[kind]
        assert own[0]["match"] == expected, (benchmark, problem_id, kind, own)
        if own[0]["ngram"] is not None:
            assert own[0]["ngram"] in normalize(next(r["problem"] for r in rows if r["problem_id"] == problem_id
                                                     and r["kind"] == kind and r["benchmark"] == benchmark))


def test_clean_rows_of_other_datasets_are_not_flagged(index, tmp_path):
    rows = [{"problem": p["question"], "source": name} for name in CLEAN for p in problems(name)]
    (tmp_path / "clean.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = decontaminate(tmp_path / "clean.jsonl", tmp_path / "out", index, workers=2, chunk_rows=3000)
    flagged = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    # the n-gram checks (exact, near, contains) and the meaning-level one (paraphrase) apart
    by_ngram = [r for r in flagged if any(m["match"] != "paraphrase" for m in r["contamination"])]
    by_paraphrase = [r for r in flagged if r not in by_ngram]
    rate = len(by_ngram) / len(rows)
    # MMLU and MMLU-Pro hold a few MATH-500 problems verbatim: those rows hold every
    # distinctive n-gram of the problem (overlap 1) and are real copies, not false positives
    copies = [r for r in by_ngram if any(m["overlap"] == 1.0 for m in r["contamination"])]
    false_positives = len(by_ngram) - len(copies)
    print(f"\nclean rows {len(rows)}, flagged by n-grams {len(by_ngram)} ({rate:.4%}): real copies {len(copies)}, "
          f"false positives {false_positives}; by paraphrase only {len(by_paraphrase)}")
    for row in flagged:
        print("  ", row["source"], row["problem"][:70].replace("\n", " "), "->",
              [(m["benchmark"], m["match"], m["overlap"], m["score"]) for m in row["contamination"]])
    assert report["rows_in"] == len(rows) > 25_000
    assert report["kept"] + report["removed"] == len(rows) == report["kept"] + len(flagged)
    assert rate <= 0.001 and false_positives == 0
    assert {m["benchmark"] for r in copies for m in r["contamination"]} <= {"math500"}
    # other domains than the benchmarks' (MMLU's math vs MATH-500's): a few paraphrase flags,
    # some of them MATH-500 problems with other numbers (docs/curation.md)
    assert len(by_paraphrase) <= 0.0005 * len(rows)  # 6 (0.02%) measured


def test_generations_are_checked_with_fields(index, tmp_path):
    problem = problems("aime24")[3]["question"]
    rows = [{"problem": "Compute 2 + 2.", "generation": f"We restate: {problem} The answer is 4."},
            {"problem": "Compute 2 + 2.", "generation": "Two and two make four."}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    only_problem = decontaminate(tmp_path / "in.jsonl", None, index, workers=1)
    both = decontaminate(tmp_path / "in.jsonl", None, index, fields=["problem", "generation"], workers=1)
    assert only_problem["removed"] == 0 and only_problem["fields"] == ["problem"]
    assert both["removed"] == 1 and both["removed_by_benchmark"] == {"aime24": 1}


def test_boilerplate_and_short_shared_phrases_do_not_match():
    index = BenchmarkIndex.build({"bench": [
        *[(f"b{i}", f"Return your final answer within the box below please. Compute {i} squared plus {i}.")
          for i in range(20)],
        ("short", "What is 2 + 3?"),
        ("count", "Sum the list 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 of integers."),
        ("long", " ".join(f"word{i}" for i in range(60))),
    ]})
    rows = [[("t", "Return your final answer within the box below please. Compute the area of a circle.")],
            [("t", "what is 2 + 3 ?")],
            [("t", "what is 2 + 4?")],
            [("t", " ".join(f"word{i}" for i in range(10)) + " and then something else entirely")],
            [("t", " ".join(f"word{i}" for i in range(22)) + " and more")],
            [("t", "Options: 1 2 3 4 5 6 7 8 9 10 11 12, pick one.")]]
    found = index.check(rows)
    assert found[0] == []  # boilerplate shared by 20 problems is not in the index
    assert [m.match for m in found[1]] == ["exact"]
    assert found[2] == []  # a short problem matches only exactly
    assert found[3] == []  # 3 of 53 n-grams: below min_overlap
    assert [(m.problem_id, m.match) for m in found[4]] == [("long", "near")]  # 15 of 53 >= 25%
    assert found[5] == []  # n-grams of numbers alone are not indexed


def test_default_benchmarks_are_the_evaluation_envs(data_dir):
    names = benchmark_names()
    assert "numina" not in names and "olympiadbench_math_en" not in names
    assert {"aime24", "math500", "humaneval", "mmlu", "livecodebench", "taco", "omni_math"} <= set(names)


def test_cli_report_only_parquet_and_unknown_benchmark(tmp_path, data_dir):
    problem = problems("amc23")[0]["question"]
    rows = [{"question": problem, "k": 1}, {"question": "An unrelated question about cats and dogs.", "k": 2}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def curate(*args):
        return subprocess.run([sys.executable, CURATE, "decontaminate", str(tmp_path / "in.jsonl"), *args],
                              capture_output=True, text=True, timeout=600, cwd=REPO)

    proc = curate("--against", "amc23,aime24", "--report-only", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["report.json"]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert (report["rows_in"], report["removed"], report["fields"]) == (2, 1, ["question"])
    assert "amc23" in proc.stdout and "rows in 2, kept 1, removed 1" in proc.stdout

    proc = curate("--against", "amc23", "--out", str(tmp_path / "p"), "--format", "parquet")
    assert proc.returncode == 0, proc.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "p" / "kept.parquet").to_pylist() == [rows[1]]
    removed = pq.read_table(tmp_path / "p" / "removed.parquet").to_pylist()
    assert removed[0]["k"] == 1 and removed[0]["contamination"][0]["benchmark"] == "amc23"

    proc = curate("--against", "amc24", "--report-only")
    assert proc.returncode != 0 and "amc24" in proc.stderr and "amc23" in proc.stderr


def test_a_run_folder_is_checked_on_its_prompts(index, tmp_path):
    """A run folder's generations/ part files; read as samples (`prompt` and `generation`),
    checked on their prompt (the user turns), which holds the templated problem: a
    benchmark problem is found inside it."""
    problem = problems("aime24")[5]["question"]
    (tmp_path / "run" / "generations").mkdir(parents=True)
    with (tmp_path / "run" / "generations" / "part-00000.jsonl").open("w") as fh:
        for idx, question in enumerate([problem, "How many legs do three spiders have?"]):
            prompt = [{"role": "system", "content": "Think step by step."},
                      {"role": "user", "content": f"Return your final response within \\boxed{{}}. {question}"}]
            fh.write(json.dumps({"id": f"p{idx}", "sample_idx": 0, "prompt": prompt, "generation": "42"}) + "\n")
    report = decontaminate(tmp_path / "run", tmp_path / "out", index, workers=1)
    (removed,) = [json.loads(line) for line in (tmp_path / "out" / "removed.jsonl").open()]
    assert report["fields"] == ["prompt", "generation"] and report["on"] == "prompt"
    assert (removed["id"], removed["sample_idx"]) == ("p0", 0)
    assert removed["contamination"][0]["benchmark"] == "aime24" and removed["contamination"][0]["match"] == "contains"


def test_the_qwen_math_suite_and_ifeval_are_indexed_and_found(data_dir):
    suite = ["college_math", "gaokao2023en", "gaokao2024_I", "gaokao2024_II", "gaokao2024_mix", "gaokao_math_cloze",
             "gaokao_math_qa", "cmath", "cn_middle_school", "svamp", "asdiv", "mawps", "carp_en", "sat_math",
             "mmlu_stem", "aqua", "ifeval"]
    assert set(suite) <= set(benchmark_names())  # the default index covers them
    picked = ["svamp", "ifeval", "cmath", "aqua"]
    idx = BenchmarkIndex.from_envs(picked)
    texts = [f"Here is a task for you. {problems(name)[7]['question']} Answer carefully." for name in picked]
    found = idx.check([[("problem", text)] for text in texts + ["A question about the colour of the sky at noon."]])
    assert [sorted({m.benchmark for m in f}) for f in found] == [[name] for name in picked] + [[]]
