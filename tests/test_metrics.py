import json
import random
import zlib
from itertools import combinations
from math import comb, isclose

import pytest

from skyeval.errors import ConfigError
from skyeval.metrics import (
    MetricsAccumulator,
    ks_for,
    parse_metrics,
    pass_at_k,
    per_problem,
    summarize,
)
from skyeval.metrics.intervals import INTERVAL_METHOD, Moments, exact, interval


def brute_force_pass_at_k(results: list[bool], k: int) -> float:
    subsets = list(combinations(results, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n,c", [(5, 0), (5, 1), (5, 3), (8, 8), (10, 2)])
def test_pass_at_k_matches_brute_force(n, c):
    results = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        assert isclose(pass_at_k(n, c, k), brute_force_pass_at_k(results, k))


def test_pass_at_k_rejects_k_above_n():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_ks_for():
    assert ks_for(1) == [1]
    assert ks_for(6) == [1, 2, 4, 6]
    assert ks_for(8) == [1, 2, 4, 8]


def records(pid, scores, answers=None, **extra):
    answers = answers or [None] * len(scores)
    return [{"id": pid, "sample_idx": i, "score": s, "extracted": a, **extra}
            for i, (s, a) in enumerate(zip(scores, answers))]


def failures(pid, indices, stage="generate"):
    return [{"id": pid, "sample_idx": i, "stage": stage, "error_type": "Boom"} for i in indices]


def test_accuracy_pass_at_k_and_majority():
    rows = records("a", [1, 0, 0, 0], ["4", "5", "5", "6"]) + records("b", [1, 1, 1, 0], ["2", "2", "2", "3"])
    metrics = summarize(rows, n=4)
    assert metrics["accuracy"] == 0.5 == metrics["accuracy_scored_only"]
    assert metrics["pass@k"] == {"1": 0.5, "2": pytest.approx((0.5 + 1 - comb(1, 2) / comb(4, 2)) / 2), "4": 1.0}
    assert metrics["majority_vote_accuracy"] == 0.5  # a: majority "5" is wrong, b: "2" right
    assert metrics["best_of_n_accuracy"] == 1.0
    assert metrics["pass@k_scored_only"] == metrics["pass@k"]


def test_a_failed_sample_counts_as_wrong_in_the_headline():
    """Issue 12 item 4: the failed sample used to vanish (accuracy 1.0 from the one scored sample)."""
    metrics = summarize(records("a", [1.0]), n=2, failures=failures("a", [1]))
    assert metrics["accuracy"] == 0.5 and metrics["pass@k"]["1"] == 0.5
    assert metrics["accuracy_scored_only"] == 1.0 and metrics["pass@k_scored_only"]["1"] == 1.0
    # a problem whose every sample failed is in the headline too
    metrics = summarize(records("a", [1.0, 1.0]), n=2, failures=failures("b", [0, 1], stage="load"))
    assert metrics["accuracy"] == 0.5 and metrics["best_of_n_accuracy"] == 0.5
    assert metrics["best_of_n_accuracy_scored_only"] == 1.0 and metrics["scored_only_problems"] == 1


def test_pass_at_k_counts_problems_with_failed_samples():
    """Issue 12 item 4: pass@4 was 0.5 but pass@8 0.0, as problem b (4 of 8 failed) left pass@8."""
    scores = records("a", [0.0] * 8) + records("b", [1.0] * 4)
    metrics = summarize(scores, n=8, failures=failures("b", range(4, 8)))
    assert metrics["pass@k"]["4"] == pytest.approx((1 - 1 / comb(8, 4)) / 2)
    assert metrics["pass@k"]["8"] == 0.5
    values = [metrics["pass@k"][k] for k in ("1", "2", "4", "8")]
    assert values == sorted(values)  # pass@k never falls with k
    # scored only: b has 4 scored samples, enough for pass@4 but not pass@8, and says so
    assert metrics["pass@k_scored_only"]["4"] == 0.5 and metrics["pass@k_scored_only"]["8"] == 0.0
    assert metrics["pass@k_scored_only_problems"] == {"1": 2, "2": 2, "4": 2, "8": 1}


def test_failures_outside_the_requested_n_are_not_counted():
    acc = MetricsAccumulator(2)
    for record in records("a", [1.0, 1.0]) + failures("a", [2, 3]):
        (acc.add_failure if "stage" in record else acc.add_score)(record)
    assert acc.counts() == {"problems": 1, "samples": 2, "scored": 2, "failed": 0, "missing": 0}
    assert acc.summary()["accuracy"] == 1.0


def test_open_problems_count_missing_samples_as_wrong():
    acc = MetricsAccumulator(4)
    for record in records("a", [1.0, 1.0]):
        acc.add_score(record)
    assert acc.counts() == {"problems": 1, "samples": 4, "scored": 2, "failed": 0, "missing": 2}
    before = acc.summary()
    assert before["accuracy"] == 0.5 and before["pass@k"]["4"] == 1.0 and before["accuracy_scored_only"] == 1.0
    assert list(acc.drain_problems()) == []  # a is still open
    [row] = acc.drain_problems(final=True)
    assert row == {"id": "a", "samples": 2, "correct": 2, "mean_score": 1.0, "max_score": 1.0,
                   "majority_answer": None, "majority_score": 0.0, "failed": 0, "missing": 2}
    assert acc.summary() == before and acc.held == 0


def test_drain_yields_each_problem_once_when_its_n_outcomes_are_in():
    acc = MetricsAccumulator(3)
    for record in records("a", [1, 0], ["1", "2"]):
        acc.add_score(record)
    acc.add_failure(failures("a", [2])[0])
    for record in records("b", [1]):
        acc.add_score(record)
    [row] = acc.drain_problems()
    assert row == {"id": "a", "samples": 2, "correct": 1, "mean_score": 0.5, "max_score": 1.0,
                   "majority_answer": "1", "majority_score": 1.0, "failed": 1, "missing": 0}
    assert list(acc.drain_problems()) == []
    assert [r["id"] for r in acc.drain_problems(final=True)] == ["b"]


def test_per_problem_rows_of_lists():
    [row] = per_problem(records("a", [1, 0, 1], ["1", "2", "1"]))
    assert row == {"id": "a", "samples": 3, "correct": 2, "mean_score": 2 / 3, "max_score": 1.0,
                   "majority_answer": "1", "majority_score": 1.0, "failed": 0, "missing": 0}


def test_bad_input_is_loud():
    acc = MetricsAccumulator(2)
    acc.add_score(records("a", [1.0])[0])
    with pytest.raises(ValueError, match="a#0 was added twice"):
        acc.add_failure(failures("a", [0])[0])
    with pytest.raises(ValueError, match="not in"):
        acc.add_score({"id": "b", "sample_idx": 0, "score": 2.0})
    with pytest.raises(ValueError, match="different setups"):
        acc.merge(MetricsAccumulator(3))


def test_parse_failures_truncation_and_finished_only_accuracy():
    scored = [
        {"id": "a", "sample_idx": 0, "score": 1.0, "finish_reason": "stop"},
        {"id": "a", "sample_idx": 1, "score": 0.0, "finish_reason": "length", "parse_failed": True},
        {"id": "b", "sample_idx": 0, "score": 1.0, "finish_reason": "length"},  # truncated, yet graded right
        {"id": "b", "sample_idx": 1, "score": 0.0, "finish_reason": "stop"},
    ]
    metrics = summarize(scored, n=2)
    assert metrics["truncated_rate"] == 0.5
    assert metrics["accuracy"] == 0.5 and metrics["accuracy_finished_only"] == 0.5
    assert metrics["parse_failure_rate"] == 0.25
    assert "tokens" not in metrics and "budget_curve" not in metrics
    assert summarize(records("a", [1.0]), n=1)["truncated_rate"] is None  # no backend reported it


def usage_records():
    """a: finished at 10 and 300 tokens (right, wrong); b: cut at 512 (right), finished at 100 (right)."""
    return [
        {"id": "a", "sample_idx": 0, "score": 1.0, "finish_reason": "stop",
         "usage": {"prompt_tokens": 20, "completion_tokens": 10, "reasoning_tokens": 4}},
        {"id": "a", "sample_idx": 1, "score": 0.0, "finish_reason": "stop",
         "usage": {"prompt_tokens": 20, "completion_tokens": 300, "reasoning_tokens": 250}},
        {"id": "b", "sample_idx": 0, "score": 1.0, "finish_reason": "length",
         "usage": {"prompt_tokens": 30, "completion_tokens": 512, "reasoning_tokens": None}},
        {"id": "b", "sample_idx": 1, "score": 1.0, "finish_reason": "stop",
         "usage": {"prompt_tokens": 30, "completion_tokens": 100}},
    ]


def test_token_statistics_are_exact():
    tokens = summarize(usage_records(), n=2, max_tokens=512)["tokens"]
    assert tokens["completion"] == {"samples": 4, "total": 922, "mean": 230.5, "p50": 100, "p95": 512, "max": 512}
    assert tokens["reasoning"] == {"samples": 2, "total": 254, "mean": 127.0, "p50": 4, "p95": 250, "max": 250}
    assert tokens["prompt"] == {"samples": 4, "total": 100}


def test_budget_curve_from_one_run():
    metrics = summarize(usage_records(), n=2, max_tokens=512, failures=failures("c", [0, 1]))
    curve = metrics["budget_curve"]
    assert curve["estimate"].startswith("from one run at max_tokens=512")
    # 6 requested samples; right and finished within b: a#0 (10 tokens) from b=64, b#1 (100) from b=128
    assert curve["points"] == [
        {"max_tokens": 64, "accuracy": 1 / 6, "finished_rate": 1 / 6},
        {"max_tokens": 128, "accuracy": 2 / 6, "finished_rate": 2 / 6},
        {"max_tokens": 256, "accuracy": 2 / 6, "finished_rate": 2 / 6},
        {"max_tokens": 512, "accuracy": 2 / 6, "finished_rate": 3 / 6},
    ]
    assert metrics["accuracy"] == 3 / 6  # the truncated right answer counts at the full budget only as scored
    missing_usage = usage_records()[:3] + [{"id": "b", "sample_idx": 1, "score": 1.0, "finish_reason": "stop"}]
    assert "budget_curve" not in summarize(missing_usage, n=2, max_tokens=512)
    assert "budget_curve" not in summarize(usage_records(), n=2)  # no budget known


def test_user_selected_metrics():
    metrics_config = [{"type": "pass", "k": 1, "n_samples": 4}, {"type": "pass", "k": 2},
                      {"type": "maj", "k": 3}, {"type": "avg", "n_samples": 2}]
    rows = records("a", [0, 1, 1, 0, 0, 0], ["x", "y", "y", "x", "x", "x"])
    metrics = summarize(rows, n=6, metrics=metrics_config)
    assert metrics["pass@k"] == {"1:n=4": 0.5, "2": pytest.approx(1 - comb(4, 2) / comb(6, 2))}
    assert metrics["maj@k"] == {"3": 1.0}  # y wins among the first 3 samples
    assert metrics["majority_vote_accuracy"] == 0.0  # x wins among all 6
    assert metrics["avg@n"] == {"2": 0.5}
    assert set(metrics["intervals"]) >= {"accuracy", "pass@1:n=4", "pass@2", "maj@3", "avg@2"}
    for bad in ([{"type": "pass", "k": 8}], [{"type": "median"}], [{"type": "avg", "n_samples": 0}],
                [{"type": "pass", "k": 1, "samples": 4}]):
        with pytest.raises(ConfigError):
            parse_metrics(bad, 6)
    with pytest.raises(ConfigError):
        MetricsAccumulator(4, ks=[1, 8])


def test_extra_scorer_means():
    rows = [{"id": "a", "sample_idx": 0, "score": 1.0, "readability": 0.5},
            {"id": "a", "sample_idx": 1, "score": 0.0, "readability": None}]
    scorers = summarize(rows, n=4, extra_scores=["readability"])["scorers"]
    assert scorers == {"readability": {"mean": 0.125, "mean_scored_only": 0.5}}


def test_intervals_match_stats_over_problem_values():
    rows = records("a", [1, 1, 0, 0]) + records("b", [1, 0, 0, 0]) + records("c", [1, 1, 1, 1])
    metrics = summarize(rows, n=4)
    assert metrics["interval_method"] == INTERVAL_METHOD
    expected = interval(_moments([0.5, 0.25, 1.0]), units=4)
    found = metrics["intervals"]["accuracy"]
    assert found == {"value": expected.value, "se": expected.se, "ci95": [expected.low, expected.high],
                     "n": 4, "problems": 3, "effective_samples": round(expected.effective, 2)}
    assert all(i["n"] == 4 and i["problems"] == 3 for i in metrics["intervals"].values())
    # pass@4 and majority are one value per problem: an interval over 3 problems, not 12 samples
    assert metrics["intervals"]["pass@4"]["effective_samples"] == 3
    assert metrics["intervals"]["majority_vote_accuracy"]["effective_samples"] == 3


def _moments(values):
    m = Moments()
    for x in values:
        m.add(exact(x))
    return m


def simulated_run(problems=300, n=4, seed=0):
    """Score and failure records of a run with varied scores, answers, tokens, scorer columns and failures."""
    rng = random.Random(seed)
    out = []
    for p in range(problems):
        for i in range(n):
            if rng.random() < 0.1:
                out.append({"id": f"p{p}", "sample_idx": i, "stage": "generate", "error_type": "Timeout"})
                continue
            completion = rng.randrange(1, 4097)
            out.append({"id": f"p{p}", "sample_idx": i, "score": rng.choice([0.0, 1.0, rng.random()]),
                        "extracted": rng.choice(["1", "2", "3", None]), "parse_failed": rng.random() < 0.05,
                        "finish_reason": "length" if completion == 4096 or rng.random() < 0.1 else "stop",
                        "usage": {"prompt_tokens": rng.randrange(50, 200), "completion_tokens": completion,
                                  "reasoning_tokens": rng.randrange(completion)},
                        "readability": rng.random()})
    return out


def feed(acc, records_):
    for record in records_:
        (acc.add_failure if "stage" in record else acc.add_score)(record)
    return acc


def make(n=4):
    return MetricsAccumulator(n, max_tokens=4096, extra_scores=["readability"],
                              metrics=[{"type": "pass", "k": 1}, {"type": "pass", "k": 2, "n_samples": 3},
                                       {"type": "maj", "k": 3}, {"type": "avg", "n_samples": 4}])


def test_merging_shards_gives_the_identical_summary():
    run = simulated_run()
    whole = feed(make(), run)
    shards = [make() for _ in range(4)]
    for record in run:
        feed(shards[zlib.crc32(record["id"].encode()) % 4], [record])
    merged, via_json = make(), make()
    for shard in shards:
        merged.merge(shard)
        via_json.merge(MetricsAccumulator.from_state(json.loads(json.dumps(shard.state()))))
    assert merged.summary() == whole.summary() == via_json.summary()
    assert merged.counts() == whole.counts() == via_json.counts()
    rows = sorted(merged.drain_problems(), key=lambda r: r["id"])
    assert rows == sorted(whole.drain_problems(), key=lambda r: r["id"])


def test_merging_a_problem_split_across_accumulators():
    run = simulated_run(problems=50, seed=1)
    random.Random(2).shuffle(run)
    halves = feed(make(), run[: len(run) // 2]), feed(make(), run[len(run) // 2:])
    assert halves[0].held and halves[1].held  # problems open on both sides
    first = MetricsAccumulator.from_state(json.loads(json.dumps(halves[0].state())))
    first.merge(halves[1])
    assert first.held == 0
    assert first.summary() == feed(make(), run).summary()


def test_memory_stays_bounded_while_samples_stream():
    """10k+ samples arriving roughly in problem order (shuffled within a window of 64):
    the accumulator holds O(window) samples, never O(samples)."""
    run = simulated_run(problems=4000, n=4, seed=3)  # 16,000 samples
    rng = random.Random(4)
    window = 64
    order = sorted(range(len(run)), key=lambda i: i + rng.uniform(0, window))
    acc, most_open, most_held = make(), 0, 0
    for count, i in enumerate(order, 1):
        feed(acc, [run[i]])
        most_open, most_held = max(most_open, len(acc._open)), max(most_held, acc.held)
        if count % 1000 == 0:
            list(acc.drain_problems())
    assert most_held <= 2 * window and most_open <= 2 * window
    assert acc.counts()["samples"] == 16_000 and acc.held == 0


def test_grading_shares_count_merge_and_survive_state():
    """summary.json `scoring.grading`: the share of samples graded isolated / in_process."""
    acc, other = MetricsAccumulator(2), MetricsAccumulator(2)
    for record in records("a", [1, 0], grading="isolated") + records("b", [1, 1], grading="in_process"):
        acc.add_score(record)
    for record in records("c", [0, 0], grading="isolated"):
        other.add_score(record)
    acc.merge(MetricsAccumulator.from_state(json.loads(json.dumps(other.state()))))
    assert acc.grading_summary() == {"grading": {"in_process": 2 / 6, "isolated": 4 / 6, "samples": 6},
                                     "passed_by_tolerance": 0}
    plain = MetricsAccumulator(1)
    plain.add_score(records("a", [1])[0])
    assert plain.grading_summary() == {}


def test_passed_by_tolerance_counts_merge_and_survive_state():
    """summary.json `scoring.passed_by_tolerance`: code samples that passed only by the float
    tolerance (issue 39), streamed and merged across shards."""
    acc, other = MetricsAccumulator(2), MetricsAccumulator(2)
    for record in (records("a", [1, 1], grading="isolated", passed_by_tolerance=True)
                   + records("b", [1, 0], grading="isolated", passed_by_tolerance=False)):
        acc.add_score(record)
    for record in records("c", [1, 0], grading="in_process", passed_by_tolerance=True)[:1]:
        other.add_score(record)
    acc.merge(MetricsAccumulator.from_state(json.loads(json.dumps(other.state()))))
    assert acc.grading_summary()["passed_by_tolerance"] == 3
    assert MetricsAccumulator.from_state(json.loads(json.dumps(acc.state()))).passed_by_tolerance == 3


def test_a_spec_without_n_samples_reads_every_sample_and_its_interval_its_own_n():
    """Issue 25 item 7: `{type: pass, k: 1}` at n=4 is pass@1 over all 4 samples (not the
    first), from Python and from a user's YAML alike; `intervals[*].n` is each metric's own n."""
    rows = records("a", [0, 1, 1, 1], ["x", "y", "y", "y"]) + records("b", [0, 0, 1, 1], ["z", "w", "w", "w"])
    metrics = summarize(rows, n=4, metrics=[{"type": "pass", "k": 1}, {"type": "maj", "k": 2},
                                            {"type": "avg", "n_samples": 3}, {"type": "pass", "k": 1, "n_samples": 2}])
    # (3/4 + 2/4) / 2 over all samples; over the first sample only it would be 0
    assert metrics["pass@k"] == {"1": 0.625, "1:n=2": 0.25}
    assert {name: i["n"] for name, i in metrics["intervals"].items()} == {
        "accuracy": 4, "pass@1": 4, "maj@2": 2, "avg@3": 3, "pass@1:n=2": 2,
        "majority_vote_accuracy": 4, "best_of_n_accuracy": 4}


def test_a_user_file_spec_defaults_to_the_files_sampling_n(tmp_path):
    from skyeval.config.overrides import user_config

    path = tmp_path / "run.yaml"
    path.write_text("env: {name: aime24}\nsampling_params: {n: 64}\nmetrics: [{type: pass, k: 1}]\n")
    data, _ = user_config(path)
    [spec] = parse_metrics(data["metrics"], data["sampling_params"]["n"])
    assert (spec.k, spec.n_samples) == (1, 64)
