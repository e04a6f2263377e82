"""How the development set of this folder was built (run once; see PROVENANCE.md).

    python tests/curation/data/build.py GSM8K_TEST_JSONL [REPHRASE_GSM8K_JSONL GSM8K_VALIDATION_JSONL SVAMP_JSON]

REPHRASE_GSM8K_JSONL is lm-sys/llm-decontaminator's data/rephrase/rephrase_gsm8k.jsonl
(line i rewrites line i of GSM8K's test.jsonl), GSM8K_VALIDATION_JSONL
google-research-datasets/GSM-IC's gsm8k_validation.jsonl (GSM8K train problems),
SVAMP_JSON arkilpatel/SVAMP's SVAMP.json; without them, only the distractors are
rebuilt. Not imported by the tests.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent

# distractor sentences in the style of GSM-IC's templates (Shi et al. 2023): a role from the
# problem (or an outsider) and a number, irrelevant to the question
TEMPLATES = [
    "{name}'s neighbor is {n} years old.", "The shoe size of {name}'s brother is {n}.",
    "{name}'s cousin has {n} stamps in a drawer.", "Last year {name}'s aunt read {n} books.",
    "The height of {name}'s sister is {n} inches.", "{name}'s friend owns {n} pairs of socks.",
    "There are {n} trees on the street where {name} lives.", "{name}'s father drove {n} miles last week.",
    "{name}'s teacher has {n} pencils on the desk.", "The dog of {name}'s neighbor weighs {n} pounds.",
    "Ada bought {n} stickers at the market.", "The library down the road has {n} chairs.",
    "Tom's grandmother planted {n} tulips in her garden.", "A bus in the town carries {n} passengers.",
    "Mia's younger brother scored {n} points in a video game.", "The bakery next door sold {n} pies yesterday.",
]
NOT_NAMES = {"If", "The", "How", "What", "He", "She", "They", "A", "In", "On", "At", "Each", "Every", "It", "There",
             "When", "After", "Then", "His", "Her"}


def write(name: str, rows: list[dict]) -> None:
    (HERE / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(name, len(rows))


def gold(answer: str) -> str:
    return answer.rsplit("####", 1)[1].strip().replace(",", "")


def main(gsm8k_test: str, rephrased: str | None = None, gsm8k_train: str | None = None,
         svamp: str | None = None) -> None:
    rng = random.Random(36)
    test = [json.loads(line) for line in Path(gsm8k_test).open()]
    if rephrased:
        rows = []
        for idx, line in enumerate(Path(rephrased).read_text().splitlines()):
            text = json.loads(line)["text"]
            question = text.split("Question:", 1)[1].rsplit("\nAnswer:", 1)[0].strip()
            if gold(text) == gold(test[idx]["answer"]):  # the rewrite kept the answer: the same problem
                rows.append({"problem": question, "gsm8k_idx": idx, "fold": idx % 2})
        write("reworded_gsm8k.jsonl", rows)
    if gsm8k_train:
        write("clean_gsm8k_train.jsonl", [{"problem": json.loads(line)["question"], "source": "gsm8k-train"}
                                          for line in Path(gsm8k_train).open()])
    if svamp:
        write("clean_svamp.jsonl", [{"problem": f"{d['Body'].strip()} {d['Question'].strip()}", "source": f"svamp/{d['ID']}"}
                                    for d in json.loads(Path(svamp).read_text())])
    distractors = []
    for idx in sorted(rng.sample(range(len(test)), 400)):
        names = [n for n in re.findall(r"\b([A-Z][a-z]+)\b", test[idx]["question"]) if n not in NOT_NAMES]
        template = rng.choice(TEMPLATES)
        n = rng.choice([rng.randint(2, 20), rng.randint(20, 200), rng.randint(200, 5000)])
        distractors.append({"gsm8k_idx": idx, "sentence": template.format(name=names[0] if names else "Sam", n=n)})
    write("distractors_gsm8k.jsonl", distractors)


if __name__ == "__main__":
    main(*sys.argv[1:])
