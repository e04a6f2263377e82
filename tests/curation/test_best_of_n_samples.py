"""`curate.py best-of-n` writes the chosen sample of each question, by the run's grades, a
reward model over HTTP (`serve-reward` on loopback) or the project's judge, with the
per-question statistics beside them; model replies are cached."""

from __future__ import annotations

from tests.backends.fault_server import FaultServer
from tests.conftest import read_jsonl
from tests.curation.conftest import N, PROBLEMS, curate_main, gsm8k_samples
from tests.reward.test_server import reward_server


def expected_best(problem: dict) -> int:
    """The shortest correct sample (completion tokens: words) of a problem of the run."""
    words = [w for _, _, w in gsm8k_samples(problem)]
    return min(range(N - 1), key=lambda i: (words[i], i))


def problems() -> dict[str, dict]:
    from skyeval.envs.registry import SkyEnvBuilder

    return {p["id"]: p for p in SkyEnvBuilder.build("gsm8k", {"limit": PROBLEMS}).load_problems()}


def test_best_by_the_run_grades_writes_the_chosen_samples_and_the_statistics(gsm8k_run, tmp_path):
    out = tmp_path / "best.jsonl"
    summary = curate_main()(["best-of-n", str(gsm8k_run), "--ks", "1,4", "--out", str(out), "--format", "sharegpt"])
    rows, stats = read_jsonl(out), read_jsonl(tmp_path / "best.stats.jsonl")
    by_id = problems()
    assert len(rows) == len(stats) == PROBLEMS and summary["rows"] == PROBLEMS
    for row in rows:
        assert row["sample_idx"] == expected_best(by_id[row["id"]])
        assert [t["from"] for t in row["conversations"]] == ["human", "gpt"]
        assert row["conversations"][-1]["value"].startswith("<think>\n")
        assert row["metadata"]["best_of_n"] == {"by": "score", "value": 1.0, "samples": N}
        assert row["metadata"]["score"] == 1.0 and row["metadata"]["gold"] == by_id[row["id"]]["expected"]
    for stat in stats:
        assert (stat["samples"], stat["correct"], stat["pass@1"], stat["pass@4"]) == (N, N - 1, 0.75, 1.0)
        assert stat["by"] == "score" and stat["best_value"] == 1.0
    assert summary["steps"][-1]["step"] == "best by score"


def test_best_by_a_reward_model_over_http_is_cached(gsm8k_run, tmp_path, capsys):
    main, out, cache = curate_main(), tmp_path / "best.jsonl", tmp_path / "cache"
    with reward_server("+env=gsm8k") as (_, port):
        args = ["best-of-n", str(gsm8k_run), "--by", "reward", "--reward-url", f"http://127.0.0.1:{port}/get_reward",
                "--cache", str(cache), "--out", str(out), "--min-score", "1"]
        main(args)
        first = capsys.readouterr().out
        main(args)
        again = capsys.readouterr().out
    assert f"reward model: 1 requests sent, 0 rewards from the cache" in first
    assert f"reward model: 0 requests sent, {PROBLEMS * N} rewards from the cache" in again
    rows, stats, by_id = read_jsonl(out), read_jsonl(tmp_path / "best.stats.jsonl"), problems()
    assert len(rows) == PROBLEMS  # serve-reward grades like the run: the wrong sample scores 0
    assert all(r["sample_idx"] == expected_best(by_id[r["id"]]) and r["metadata"]["best_of_n"]["value"] == 1.0
               for r in rows)
    assert all(s["by"] == "reward" and s["best_value"] == 1.0 for s in stats)


def test_best_by_the_judge_is_cached(gsm8k_run, tmp_path, capsys):
    by_id = problems()
    unsolved = list(by_id.values())[2]  # the judge finds no answer of this one right
    table = {f"<candidate>\n{unsolved['expected']}\n</candidate>": "Not the same.\nVerdict: different"}
    table.update({f"<candidate>\n{int(p['expected']) + 1}\n</candidate>": "Off by one.\nVerdict: different"
                  for p in by_id.values()})
    main, out = curate_main(), tmp_path / "best.jsonl"
    with FaultServer(answer_template="The same number.\nVerdict: equivalent", answer_table=table) as server:
        args = ["best-of-n", str(gsm8k_run), "--by", "judge", "--judge-model", "judge", "--judge-set",
                f"api_url={server.url}", "--judge-set", "api_key_env=null", "--cache", str(tmp_path / "cache"),
                "--out", str(out), "--min-score", "1"]
        main(args)
        asked = len(server.log)
        main(args)
        assert len(server.log) == asked == 2 * PROBLEMS  # one per distinct (problem, answer): right and off by one
    assert "judge: 0 requests sent, 48 verdicts from the cache" in capsys.readouterr().out
    rows = read_jsonl(out)
    assert sorted(r["id"] for r in rows) == sorted(set(by_id) - {unsolved["id"]})
    assert all(r["sample_idx"] == expected_best(by_id[r["id"]]) for r in rows)
    stats = {s["id"]: s for s in read_jsonl(tmp_path / "best.stats.jsonl")}
    assert stats[unsolved["id"]]["best_value"] == 0.0 and stats[unsolved["id"]]["by"] == "judge"
