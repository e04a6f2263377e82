"""Accuracy by month (`metrics.by_month`) of dated benchmarks: streamed per problem,
carried on per-problem rows, and merged across shards into the numbers one run gives."""

import json

import pytest

from skyeval.metrics import MetricsAccumulator

# (problem, date, [(sample_idx, score or None for a failure)]) with n = 2
PROBLEMS = [
    ("p1", "2024-01", [(0, 1.0), (1, 0.0)]),      # 0.5
    ("p2", "2024-01-20", [(0, 1.0), (1, 1.0)]),   # 1.0
    ("p3", "2024-02-10", [(0, 1.0), (1, None)]),  # 0.5: a failed sample counts as wrong
    ("p4", "2024-02", [(0, None), (1, None)]),    # 0.0: no sample scored, still in its month
    ("p5", None, [(0, 1.0), (1, 1.0)]),           # undated: not in by_month
]


def feed(acc, problems, samples=None):
    """Note each problem's date, then add its samples (those in `samples` when given)."""
    for pid, date, outcomes in problems:
        acc.note_date(pid, date)
        for idx, score in outcomes:
            if samples is not None and (pid, idx) not in samples:
                continue
            record = {"id": pid, "sample_idx": idx}
            if score is None:
                acc.add_failure(record)
            else:
                acc.add_score({**record, "score": score, "extracted": str(score)})


def test_by_month_is_the_headline_accuracy_of_each_months_problems():
    acc = MetricsAccumulator(2)
    feed(acc, PROBLEMS)
    by_month = acc.summary()["by_month"]
    assert list(by_month) == ["2024-01", "2024-02"]
    january, february = by_month["2024-01"], by_month["2024-02"]
    assert (january["accuracy"], january["n"], february["accuracy"], february["n"]) == (0.75, 2, 0.25, 2)
    assert january["se"] == pytest.approx(0.25) and february["se"] == pytest.approx(0.25)  # sd 0.3536 / sqrt(2)
    # the headline's interval over each month's problems: one of the two January problems has a failure,
    # too few to estimate the clustering, so its 4 samples count as 2 (Clopper-Pearson of 1.5 of 2)
    assert january["ci95"] == pytest.approx([0.060830, 0.999783], abs=1e-6)
    rows = {r["id"]: r for r in acc.drain_problems(final=True)}
    assert {pid: r.get("date") for pid, r in rows.items()} == {
        "p1": "2024-01", "p2": "2024-01-20", "p3": "2024-02-10", "p4": "2024-02", "p5": None}
    assert "date" not in rows["p5"]  # undated problems' rows are as before


def test_an_undated_run_has_no_by_month():
    acc = MetricsAccumulator(1)
    acc.add_score({"id": "a", "sample_idx": 0, "score": 1.0})
    assert "by_month" not in acc.summary()


def test_a_month_of_one_problem_has_an_interval_but_no_standard_error():
    acc = MetricsAccumulator(1)
    feed(acc, [("a", "2024-03", [(0, 1.0)])])
    assert acc.summary()["by_month"] == {"2024-03": {"accuracy": 1.0, "n": 1, "ci95": [pytest.approx(0.025), 1.0]}}


def test_shards_merge_into_the_numbers_of_one_run():
    whole = MetricsAccumulator(2)
    feed(whole, PROBLEMS)
    # two shards; p3's samples are split between them (an open problem in each state)
    first = {("p1", 0), ("p1", 1), ("p3", 0), ("p5", 0), ("p5", 1)}
    shard_a, shard_b = MetricsAccumulator(2), MetricsAccumulator(2)
    feed(shard_a, [p for p in PROBLEMS if p[0] in {"p1", "p3", "p5"}], samples=first)
    feed(shard_b, [p for p in PROBLEMS if p[0] in {"p2", "p3", "p4"}],
         samples={(pid, i) for pid, _, out in PROBLEMS for i, _ in out} - first)
    states = [json.loads(json.dumps(s.state())) for s in (shard_a, shard_b)]  # as written under shards/
    merged = MetricsAccumulator.from_state(states[0])
    merged.merge(MetricsAccumulator.from_state(states[1]))
    assert merged.summary()["by_month"] == whole.summary()["by_month"]
    assert merged.summary()["accuracy"] == whole.summary()["accuracy"]
    dates = {r["id"]: r.get("date") for r in merged.drain_problems(final=True)}
    assert dates == {r["id"]: r.get("date") for r in whole.drain_problems(final=True)}


def test_summary_mid_run_leaves_the_open_problems_and_their_dates_alone():
    acc = MetricsAccumulator(2)
    feed(acc, PROBLEMS, samples={("p1", 0), ("p2", 0), ("p2", 1)})
    early = acc.summary()["by_month"]  # p1 folded on a copy, with its missing sample as wrong
    assert early["2024-01"]["accuracy"] == 0.75 and acc.dates["p1"] == "2024-01"
    acc.add_score({"id": "p1", "sample_idx": 1, "score": 1.0})
    assert acc.summary()["by_month"]["2024-01"]["accuracy"] == 1.0 and "p1" not in acc.dates
    assert acc.summary()["by_month"]["2024-01"]["n"] == 2
