"""Build the math grader's verdict snapshot (tests/scorers/grading_snapshot/verdicts.jsonl.xz).

    python scripts/build_grading_snapshot.py --mirror /work/.mirror --baseline COMMIT [--previous COMMIT]

Rows are (env, question, gold, output) from public per-sample outputs (each repository's
snapshot as `fetch` stores it under --mirror, at the commits PROVENANCE.md names) and rows
of our own (every math env's gold self-check and cross-wired answers, bare golds, the hack
corpus, the labelled corpus and the dev set). Each row is graded by the code of --baseline
(the release the gate starts from; `scripts/grading_diff.py`'s grading, as a run grades) and,
for the record, of --previous; an output longer than CUT_ABOVE characters is cut to its last
CUT_TO characters when both give that cut the same verdict and extracted answer as the whole.
Rows that time out (60 s) or whose gold the env refuses are left out. Seeded: the same
inputs give the same file.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import lzma
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grading_diff import REPO, SNAPSHOT, grade_at  # noqa: E402

SEED = 47
CAPS = {"rl_sft": 2500, "theoremqa": 800}  # rows kept per source: the gate must grade in tens of seconds
CUT_ABOVE, CUT_TO = 6000, 2500
QUESTION_CHARS = 1500  # the asked subproblem and a stated precision are at the end

# source key -> (repository, commit): PROVENANCE.md says what each is and its licence
SOURCES = {
    "theoremqa": ("TIGER-AI-Lab/TheoremQA", "acfc968"),
    "mmlu_pro": ("TIGER-AI-Lab/MMLU-Pro", "f418b11"),
    "zero_shot_cot": ("kojima-takeshi188/zero_shot_cot", "5ef330f"),
    "abel": ("GAIR-NLP/abel", "3a24ef2"),
    "qwq_math500": ("Dongximing/semantic", "c8dd39a"),
    "rl_sft": ("XinghanLi66/rl-sft", "c981ccd"),
}


def git_show(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=True).stdout


def git_files(repo: Path, commit: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit], capture_output=True,
                         check=True, text=True).stdout
    return out.splitlines()


def question_tail(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= QUESTION_CHARS else text[-QUESTION_CHARS:]


def row(source: str, key: str, kind: str, env: str, question: str | None, expected, generation: str) -> dict:
    return {"id": f"{source}:{key}", "source": source, "kind": kind, "env": env,
            "question": question_tail(question), "expected": expected, "generation": generation}


# ---- public per-sample outputs --------------------------------------------------------------

def theoremqa(repo: Path, commit: str, rng: random.Random, per_file: int = 350) -> list[dict]:
    """TheoremQA (STEM, numeric answers): base models, 5-shot, "The answer is x" (Minerva's env)."""
    out = []
    for path in sorted(p for p in git_files(repo, commit) if p.startswith("outputs/") and p.endswith(".jsonl")):
        lines = git_show(repo, commit, path).decode().splitlines()
        model = Path(path).stem
        for i in sorted(rng.sample(range(len(lines)), min(per_file, len(lines)))):
            r = json.loads(lines[i])
            out.append(row("theoremqa", f"{model}:{i}", "base_few_shot", "minervamath", r["question"],
                           str(r["correct"][0]), r["solution"]))
    return out


def mmlu_pro(repo: Path, commit: str, rng: random.Random, per_model: int = 150) -> list[dict]:
    """MMLU-Pro math questions, 5-shot CoT of base and instruct models: multiple-choice letters,
    graded as NuminaMath grades an AMC answer (the box, its value and its letter)."""
    from skyeval.envs.math import answer_forms

    models = ["Llama-2-7b-hf", "Mistral-7B-v0.1", "gemma-7b", "Yi-6B", "Meta-Llama-3_1-8B-Instruct",
              "Phi-3-mini-4k-instruct", "mathstral-7B", "Qwen1.5-7B-Chat"]
    out = []
    for model in models:
        archive = zipfile.ZipFile(io.BytesIO(git_show(repo, commit, f"eval_results/model_outputs_{model}_5shots.zip")))
        items = json.loads(archive.read(next(n for n in archive.namelist() if n.endswith(".json"))))
        math = [r for r in items if r["category"] == "math" and r["answer"] in "ABCDE" and r.get("generated_text")]
        for r in sorted(rng.sample(math, min(per_model, len(math))), key=lambda r: int(r["question_id"])):
            options = ast.literal_eval(r["options"]) if isinstance(r["options"], str) else r["options"]
            letters = "ABCDEFGHIJ"
            question = r["question"] + "\n" + "\n".join(f"({letters[i]}) {o}" for i, o in enumerate(options))
            value = str(options[letters.index(r["answer"])])
            gold = answer_forms(f"\\textbf{{({r['answer']})}}\\ {value}")
            out.append(row("mmlu_pro", f"{model}:{r['question_id']}", "multiple_choice", "numina", question, gold,
                           r["generated_text"]))
    return out


_KOJIMA_BLOCK = re.compile(r"\nQ: (?P<q>.*?)\nA: (?P<a>.*?)\npred_before :.*?\nGT : (?P<gt>[^\n]*)", re.S)
_TRIGGERS = ("Let's think step by step.", "The answer (arabic numerals) is", "Among A through E, the answer is")
_CHOICES = re.compile(r"\(([A-E])\)\s*(.*?)(?=\s*\([A-E]\)|$)")


def zero_shot_cot(repo: Path, commit: str, rng: random.Random) -> list[dict]:
    """GPT-3 (text-davinci-002) zero-shot: bare short answers after "The answer (arabic
    numerals) is", and zero-shot CoT; arithmetic word problems (GSM8K's env) and AQuA
    (multiple-choice letters, NuminaMath's grading)."""
    from skyeval.envs.math import answer_forms

    sizes = {"gsm8k": 350, "svamp": 250, "multiarith": 150, "addsub": 120, "singleeq": 120, "aqua": 254}
    out = []
    for dataset, size in sizes.items():
        for method in ("zero_shot", "zero_shot_cot"):
            text = git_show(repo, commit, f"log/{dataset}_{method}.log").decode()
            blocks = list(_KOJIMA_BLOCK.finditer(text))
            for i in sorted(rng.sample(range(len(blocks)), min(size, len(blocks)))):
                block = blocks[i]
                answer = block["a"]
                for trigger in _TRIGGERS:
                    if answer.lstrip().startswith(trigger):
                        answer = answer.lstrip()[len(trigger):]
                        break
                gt = block["gt"].strip()
                if dataset == "aqua":
                    choices = dict(_CHOICES.findall(block["q"].split("Answer Choices:")[-1]))
                    if gt not in choices:
                        continue
                    expected, env = answer_forms(f"\\textbf{{({gt})}}\\ {choices[gt].strip()}"), "numina"
                else:
                    expected, env = gt, "gsm8k"
                kind = "bare_short_answer" if method == "zero_shot" else "short_cot"
                out.append(row("zero_shot_cot", f"{dataset}:{method}:{i}", kind, env, block["q"], expected, answer))
    return out


def abel(repo: Path, commit: str, rng: random.Random) -> list[dict]:
    """Abel (Llama-2 SFT for maths) on GSM8K and its robust variant: CoT ending in "#### x"."""
    out = []
    for folder, size in (("gsm8k", 300), ("gsm8k_robust", 100)):
        for model in ("7b", "13b", "70b"):
            lines = git_show(repo, commit, f"outputs/{folder}/{model}.jsonl").decode().splitlines()
            for i in sorted(rng.sample(range(len(lines)), size)):
                r = json.loads(lines[i])
                question = r["prompt"].removeprefix("Question:\n").split("\nAnswer:\n")[0]
                out.append(row("abel", f"{folder}:{model}:{r['id']}", "sft_cot", "gsm8k", question, str(r["gold"]),
                               r["response"]))
    return out


def qwq_math500(repo: Path, commit: str) -> list[dict]:
    """QwQ-32B on MATH-500 (seed 123): long thinking traces closed by `</think>` (the prompt
    opened the thought), then a boxed answer."""
    blob = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{commit}:h100_QwQ-32B_math-500_seed123.tar.gz"],
                          capture_output=True, text=True, check=True).stdout.strip()
    data = subprocess.run(["git", "-C", str(repo), "cat-file", "-p", blob], capture_output=True, check=True).stdout
    out = []
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.name.endswith("generation.json"):
                r = json.load(tar.extractfile(member))[0]
                key = member.name.split("_")[-1].split("/")[0]
                out.append(row("qwq_math500", key, "long_thinking", "math500", r["input_text"], r["answer"],
                               r["real_answer"]))
    return out


_RL_SFT_ENVS = {"minerva_math": "minervamath", "math500": "math500", "olympiadbench": "olympiadbench_math_en",
                "amc23x8": "amc23", "amc23": "amc23", "aime25x8": "aime25", "aime25": "aime25"}


def rl_sft(repo: Path, commit: str, rng: random.Random, dev_ids: set[str], per_file: int = 60) -> list[dict]:
    """Qwen2.5-Math 1.5B/7B after one-shot RL or entropy minimisation (Qwen2.5-Math's harness):
    boxed CoT, base-model continuations that invent new problems, loops. Rows beyond the dev set."""
    files = sorted(p for p in git_files(repo, commit) if p.startswith("one-shot-em/results/") and p.endswith(".jsonl"))
    out = []
    for path in files:
        bench = path.split("/")[3]
        if bench not in _RL_SFT_ENVS:
            continue
        try:
            lines = git_show(repo, commit, path).decode().splitlines()
        except subprocess.CalledProcessError:  # a file too large for the snapshot
            continue
        source = f"XinghanLi66/rl-sft@{commit}:{path}"
        picks = [i for i in range(len(lines))]
        rng.shuffle(picks)
        taken = 0
        for i in picks:
            if taken == per_file:
                break
            r = json.loads(lines[i])
            if f"{source}#{r['idx']}" in dev_ids:
                continue
            code = r["code"]
            generations = ast.literal_eval(code) if isinstance(code, str) and code.startswith("[") else code
            generation = generations[0] if isinstance(generations, list) else generations
            if not isinstance(generation, str) or not generation.strip():
                continue
            out.append(row("rl_sft", f"{path.removeprefix('one-shot-em/results/')}#{r['idx']}:{i}", "boxed_cot",
                           _RL_SFT_ENVS[bench], r["question"], str(r["gt"]), generation))
            taken += 1
    return out


# ---- rows of our own -------------------------------------------------------------------------

MATH_ENVS = ["aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench_math_en", "liveaops"]
FIXTURE_ENVS = ["omni_math", "numina"]
SELFCHECK_SIZE = 300


def env_problems(name: str) -> tuple[object, list[dict]]:
    from skyeval import SkyEnvBuilder

    knobs = {}
    if name in FIXTURE_ENVS:
        knobs = {"data_dir": str(REPO / "tests" / "fixtures"), "local_files": f"{name}.jsonl"}
    env = SkyEnvBuilder.build(name, knobs)
    return env, env.load_problems()


def _crossed(problems: list[dict]) -> list:
    n = len(problems)
    return [next(q["expected"] for k in range(1, n) if str((q := problems[(i + k) % n])["expected"]) != str(p["expected"]))
            for i, p in enumerate(problems)]


def selfcheck(rng: random.Random) -> list[dict]:
    """Every math env's gold self-check (the reference solutions) and the same cross-wired."""
    out = []
    for name in MATH_ENVS + FIXTURE_ENVS:
        env, problems = env_problems(name)
        crossed = _crossed(problems)
        picks = sorted(rng.sample(range(len(problems)), min(SELFCHECK_SIZE, len(problems))))
        for i in picks:
            p = problems[i]
            generation = env.reference_generation(p)
            if not generation or p["expected"] is None:
                continue
            out.append(row("selfcheck", f"{name}:{p['id']}", "gold_selfcheck", name, p["question"], p["expected"], generation))
            out.append(row("selfcheck", f"{name}:{p['id']}:crossed", "cross_wired", name, p["question"], crossed[i], generation))
    return out


BARE_FORMS = ("{}", "${}$", "${} $", "$ {} $", "\\({}\\)", "$${}$$", "\\[{}\\]", "**{}**")
BARE_SIZES = {"math500": 200, "aime24": 30, "amc23": 40, "gsm8k": 100, "minervamath": 80,
              "olympiadbench_math_en": 100, "liveaops": 80, "omni_math": 20, "numina": 20}


def bare(rng: random.Random) -> list[dict]:
    """The whole output is the answer: each gold written alone (bare, in `$…$` with and without
    spaces, `\\(…\\)`, `$$…$$`, bold), and another problem's gold the same way (cross-wired)."""
    out = []
    for name, size in BARE_SIZES.items():
        _, problems = env_problems(name)
        crossed = _crossed(problems)
        for i in sorted(rng.sample(range(len(problems)), min(size, len(problems)))):
            p = problems[i]
            gold = p["expected"][0] if isinstance(p["expected"], list) else p["expected"]
            if not gold:
                continue
            for form in ("{}", rng.choice(BARE_FORMS[1:])):
                out.append(row("bare", f"{name}:{p['id']}:{form}", "bare_gold", name, p["question"], p["expected"],
                               form.format(gold)))
            other = crossed[i][0] if isinstance(crossed[i], list) else crossed[i]
            form = rng.choice(BARE_FORMS)
            out.append(row("bare", f"{name}:{p['id']}:crossed:{form}", "bare_cross_wired", name, p["question"],
                           p["expected"], form.format(other)))
    return out


HACK_SIZES = {"math500": 60, "aime24": 30, "gsm8k": 60, "amc23": 20, "minervamath": 20, "olympiadbench_math_en": 20,
              "liveaops": 20, "omni_math": 10, "numina": 10}


def hack_rows(rng: random.Random, per_gold: int = 8) -> list[dict]:
    """A sample of the hack corpus (tests/scorers/math_hacks.py) on each math env's golds."""
    sys.path.insert(0, str(REPO))
    from skyeval.scorers.math.equivalence import is_answer_set
    from tests.scorers.math_hacks import hacks

    out = []
    for name, size in HACK_SIZES.items():
        _, problems = env_problems(name)
        crossed = _crossed(problems)
        singles = [i for i, p in enumerate(problems)
                   if isinstance(p["expected"], str) and p["expected"] and not is_answer_set(p["expected"])]
        for i in sorted(rng.sample(singles, min(size, len(singles)))):
            p = problems[i]
            others = [str(crossed[i]), str(crossed[(i + 1) % len(problems)])]
            found = hacks(p["expected"], others)
            for j in sorted(rng.sample(range(len(found)), min(per_gold, len(found)))):
                kind, generation = found[j]
                out.append(row("hacks", f"{name}:{p['id']}:{j}", f"hack_{kind}", name, p["question"], p["expected"],
                               generation))
    return out


def labelled(dev_rows: list[dict]) -> list[dict]:
    """The dev set (real outputs, human verdicts) and the labelled corpus of issue 18."""
    sys.path.insert(0, str(REPO))
    from tests.scorers.math_corpus import CASES

    envs = {"minervamath": "minervamath", "math500": "math500", "olympiadbench": "olympiadbench_math_en"}
    out = [row("dev_set", f"{r['source'].split(':')[-1]}#{r['id']}", "dev_set", envs[r["benchmark"]], r["question"],
               r["gold"], r["generation"]) for r in dev_rows]
    out += [row("corpus", f"{i}", f"corpus_{cls}", "math500", None, gold, generation)
            for i, (cls, generation, gold, _) in enumerate(CASES)]
    return out


# ---- grading and cutting ---------------------------------------------------------------------

def capped(rows: list[dict]) -> list[dict]:
    """At most CAPS[source] rows of a source (a seeded sample of its ids), in the same order."""
    keep = set()
    for source, cap in CAPS.items():
        ids = sorted(r["id"] for r in rows if r["source"] == source)
        keep |= set(random.Random(SEED).sample(ids, min(cap, len(ids))))
    return [r for r in rows if r["source"] not in CAPS or r["id"] in keep]


def graded(rows: list[dict], ref: str, workers: int | None) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return grade_at(ref, path, workers)


def _same(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in ("score", "verdict", "extracted", "timed_out"))


def cut(text: str) -> str:
    """The last CUT_TO characters, from a line start when one is near."""
    tail = text[-CUT_TO:]
    newline = tail.find("\n")
    return tail[newline + 1 :] if 0 <= newline < 400 else tail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--baseline", required=True, help="the commit whose verdicts the snapshot holds")
    parser.add_argument("--previous", help="an earlier release, graded for the record")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--out", type=Path, default=SNAPSHOT / "verdicts.jsonl.xz")
    args = parser.parse_args()

    rng = random.Random(SEED)
    mirror = lambda name: args.mirror / SOURCES[name][0].replace("/", "+") / "repo"  # noqa: E731
    commit = lambda name: SOURCES[name][1]  # noqa: E731
    dev_rows = [json.loads(x) for x in (REPO / "tests/scorers/data/math_dev.jsonl").read_text().splitlines() if x.strip()]
    dev_ids = {f"{r['source']}#{r['id']}".replace("c981ccd10c5d", "c981ccd") for r in dev_rows}
    rows = (theoremqa(mirror("theoremqa"), commit("theoremqa"), rng)
            + mmlu_pro(mirror("mmlu_pro"), commit("mmlu_pro"), rng)
            + zero_shot_cot(mirror("zero_shot_cot"), commit("zero_shot_cot"), rng)
            + abel(mirror("abel"), commit("abel"), rng)
            + qwq_math500(mirror("qwq_math500"), commit("qwq_math500"))
            + rl_sft(mirror("rl_sft"), commit("rl_sft"), rng, dev_ids)
            + selfcheck(rng) + bare(rng) + hack_rows(rng) + labelled(dev_rows))
    rows = capped(rows)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "row ids must be unique"
    print(f"{len(rows)} rows; grading with {args.baseline} ...", flush=True)
    base = graded(rows, args.baseline, args.workers)
    previous = graded(rows, args.previous, args.workers) if args.previous else {}
    long_rows = [r for r in rows if len(r["generation"]) > CUT_ABOVE]
    cuts = [{**r, "generation": cut(r["generation"])} for r in long_rows]
    cut_base = graded(cuts, args.baseline, args.workers)
    cut_previous = graded(cuts, args.previous, args.workers) if args.previous else {}
    shorter = {c["id"]: c["generation"] for c in cuts
               if _same(cut_base[c["id"]], base[c["id"]])
               and (not previous or _same(cut_previous[c["id"]], previous[c["id"]]))}
    kept = []
    for r in rows:
        verdict = base[r["id"]]
        if verdict["score"] is None or verdict.get("timed_out"):
            continue  # a gold the env refuses, or a row slower than 60 s: no stable verdict
        if r["id"] in shorter:
            r = {**r, "generation": shorter[r["id"]], "cut_from": len(r["generation"])}
        r["baseline"] = {k: verdict.get(k) for k in ("score", "verdict", "extracted")}
        if previous:
            r["previous"] = {k: previous[r["id"]].get(k) for k in ("score", "verdict", "extracted")}
        kept.append(r)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(args.out, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as f:
        for r in kept:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {len(kept)} rows ({len(rows) - len(kept)} left out; {len(shorter)} of {len(long_rows)} long "
          f"outputs cut) to {args.out}: {args.out.stat().st_size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
