"""Rejection sampling in Python: generate, score for correctness + readability, keep the
passing samples, save them as SFT data (role/content messages, TRL's format). Runs offline with the reference backend:

  SKYEVAL_DATA_DIR=../shared/data python scripts/rejection_sampling_example.py --limit 20

Swap `ReferenceConfig()` for `HTTPConfig(...)` or `VLLMConfig(...)` to sample a real model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from skyeval.backends.base import SamplingParams
from skyeval.backends.reference import ReferenceConfig
from skyeval.curation import MathRejectionEnv, keep_passing, sft_row
from skyeval.envs.registry import SkyEnvBuilder, build_from_config
from skyeval.results import write_rows


def main(limit: int, n: int, out: Path) -> int:
    config = {**SkyEnvBuilder.config("math500"), "limit": limit,
              "_target_": f"{MathRejectionEnv.__module__}.{MathRejectionEnv.__qualname__}"}
    env = build_from_config(config)
    env.setup(ReferenceConfig(), sampling_params=SamplingParams(n=n, temperature=0.7))
    scored = env.score(env.generate(env.read_dataset())).materialize()  # one row per sample
    kept = keep_passing(scored)                             # ds.filter on `keep`
    rows = [sft_row(r) for r in kept.take_all()]          # format="sharegpt" for LLaMA-Factory
    write_rows(rows, out)
    print(f"kept {len(rows)} of {scored.count()} samples -> {out}")
    return len(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("outputs/rejection_sampling_example/sft.jsonl"))
    args = parser.parse_args()
    try:
        main(args.limit, args.n, args.out)
    except KeyboardInterrupt:
        sys.exit("rejection_sampling_example: interrupted (the run folder keeps what finished; re-run to resume)")
