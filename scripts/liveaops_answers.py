"""How many of LiveAoPSBench's answer lists are forms of one value, and how many hold
different values (the counts behind the env's `answers` rule, docs/benchmarks.md).

    SKYEVAL_DATA_DIR=/path/to/data python scripts/liveaops_answers.py [--out FILE]

Groups each list with `LiveAoPSEnv.value_classes` (LaTeX spacing, then skyeval's
`equivalent`) and prints the counts; `--out` writes the lists of several values as JSONL.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

from skyeval.envs.registry import SkyEnvBuilder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="write the lists that hold several values here (JSONL)")
    args = parser.parse_args()
    env = SkyEnvBuilder.build("liveaops")
    start = time.monotonic()
    problems = list(env.iter_problems())
    several = [p for p in problems if len(p["answers"]) > 1]
    classes = {p["id"]: env.value_classes(p["answers"]) for p in several}
    split = [p for p in several if len(classes[p["id"]]) > 1]
    print(f"{len(problems)} problems; {len(several)} list several answers")
    print(f"  one value (forms of one answer): {len(several) - len(split)}")
    print(f"  several values: {len(split)} (value classes per list: "
          f"{dict(sorted(Counter(len(classes[p['id']]) for p in split).items()))})")
    print(f"  ({time.monotonic() - start:.0f}s)")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for p in split:
                fh.write(json.dumps({"id": p["id"], "date": p["date"], "classes": classes[p["id"]]},
                                    ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
