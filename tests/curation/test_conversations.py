"""The one reader of conversation rows (`skyeval.curation.conversations`): every layout a
training file comes in, an error for a row without text, and decontamination and dedup of
our own SFT exports in both formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skyeval.curation.conversations import EmptyRowError, default_fields, messages, text
from skyeval.curation.decontaminate import BenchmarkIndex, decontaminate
from tests.conftest import read_jsonl
from tests.curation.conftest import N, PROBLEMS, curate_main

TURNS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 1+1?"},
         {"role": "assistant", "content": "It is 2."}]


def test_every_layout_reads_as_the_same_messages():
    sharegpt = [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "What is 1+1?"},
                {"from": "gpt", "value": "It is 2."}]
    parts = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
             {"role": "user", "content": [{"type": "text", "text": "What is"}, {"type": "image_url", "image_url": {}},
                                          {"type": "text", "text": "1+1?"}]},
             {"role": "assistant", "content": "It is 2."}]
    assert messages(sharegpt) == TURNS
    assert messages(parts)[1] == {"role": "user", "content": "What is\n1+1?"}
    for layout in (TURNS, sharegpt):
        row = {"conversations": layout}
        assert text(row, ["conversations"], "prompt") == "What is 1+1?"
        assert text(row, ["conversations"], "response") == "It is 2."
        assert text(row, ["conversations"], "conversation") == "What is 1+1?\nIt is 2."
    sample = {"prompt": TURNS[:2], "generation": "It is 2.", "reasoning": "One and one."}
    assert default_fields(sample) == ["prompt", "generation"]
    assert text(sample, default_fields(sample), "response") == "One and one.\nIt is 2."
    assert default_fields({"id": 1, "question": "Q?", "answer": "2"}) == ["question"]


def test_a_row_whose_fields_give_no_text_is_an_error_naming_it():
    with pytest.raises(EmptyRowError) as err:
        text({"id": "q7", "messages": TURNS}, ["conversations"], "prompt", index=6)
    assert str(err.value).startswith("row 7 (id q7): conversations give no prompt text (the row's keys: id, messages)")
    with pytest.raises(EmptyRowError, match="row 1: problem give no response text"):
        text({"problem": "Q?"}, ["problem"], "response")
    with pytest.raises(EmptyRowError, match="give no prompt text"):
        text({"conversations": [{"from": "human", "value": "  "}, {"from": "gpt", "value": "x"}]}, ["conversations"])


@pytest.fixture(scope="module")
def math500_index(data_dir) -> BenchmarkIndex:
    return BenchmarkIndex.from_envs(["math500"], paraphrase=None)


def sft_export(run_dir: Path, tmp_path: Path, format: str) -> tuple[Path, list[dict]]:
    out = tmp_path / f"sft-{format}.jsonl"
    curate_main()(["sft", str(run_dir), "--format", format, "--out", str(out)])
    return out, read_jsonl(out)


def planted(rows: list[dict], key: str, copies: list[str]) -> tuple[list[dict], set[tuple[str, int]]]:
    """The rows with a MATH-500 problem copied into the user turn of three of them."""
    user = "content" if key == "messages" else "value"
    marks = set()
    for row, problem in zip(rows[5::11], copies):
        turn = next(t for t in row[key] if t.get("role", t.get("from")) in ("user", "human"))
        turn[user] = f"Solve this one too. {problem}"
        marks.add((row["id"], row["sample_idx"]))
    return rows, marks


@pytest.mark.parametrize("format, key", [("messages", "messages"), ("sharegpt", "conversations")])
def test_our_own_sft_export_is_decontaminated_in_both_formats(gsm8k_run, math500_index, tmp_path, format, key):
    """Before, `--fields conversations` read every ShareGPT turn as "" and removed 0 of 3."""
    from skyeval.envs.registry import SkyEnvBuilder

    out, rows = sft_export(gsm8k_run, tmp_path, format)
    assert len(rows) == PROBLEMS * 3 and all(key in r for r in rows)
    copies = [p["question"] for p in SkyEnvBuilder.build("math500", {"limit": 30}).load_problems()[10:13]]
    rows, marks = planted(rows, key, copies)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for fields in ([key], None):  # named as the user names them, and found by default
        report = decontaminate(tmp_path / "train.jsonl", tmp_path / "clean", math500_index, fields=fields, workers=1)
        removed = read_jsonl(tmp_path / "clean" / "removed.jsonl")
        assert report["rows_in"] == len(rows) and report["removed"] == 3 and report["fields"] == [key]
        assert {(r["id"], r["sample_idx"]) for r in removed} == marks
        assert all(m["benchmark"] == "math500" for r in removed for m in r["contamination"])
    summary = curate_main()(["sft", str(gsm8k_run), "--exclude", str(tmp_path / "clean" / "removed.jsonl"),
                             "--out", str(tmp_path / "final.jsonl")])
    assert summary["rows"] == len(rows) - 3 and summary["steps"][1]["rows_kept"] == PROBLEMS * N - 3


def test_dedup_keeps_distinct_responses_and_compares_what_the_user_asks(gsm8k_run, tmp_path):
    """Three correct responses per problem, each its own: kept on the conversation (the
    default) and on the response; one per problem on the prompt. Before, the user turns
    alone were compared (and a ShareGPT file read as "": one row kept)."""
    from skyeval.curation.dedup import dedup

    for format in ("messages", "sharegpt"):
        out, rows = sft_export(gsm8k_run, tmp_path, format)
        (tmp_path / "twice.jsonl").write_text(out.read_text() + json.dumps(rows[4]) + "\n")  # one exact copy
        found = {on: dedup(tmp_path / "twice.jsonl", tmp_path / f"{format}-{on}", on=on, workers=1)
                 for on in (None, "conversation", "response", "prompt")}
        assert found[None]["on"] == "conversation"
        for on in (None, "conversation", "response"):
            assert (found[on]["kept"], found[on]["exact_duplicates"], found[on]["near_duplicates"]) == (len(rows), 1, 0)
        assert found["prompt"]["kept"] == PROBLEMS and found["prompt"]["exact_duplicates"] == len(rows) + 1 - PROBLEMS
        (dup,) = read_jsonl(tmp_path / f"{format}-conversation" / "duplicates.jsonl")
        assert dup["duplicate_of"] == 4 and dup["match"] == "exact"


def test_a_run_folder_dedups_its_samples_as_conversations(gsm8k_run, tmp_path):
    from skyeval.curation.dedup import dedup

    report = dedup(gsm8k_run, tmp_path / "d", workers=1)
    assert report["fields"] == ["prompt", "generation"] and report["on"] == "conversation"
    assert report["kept"] == PROBLEMS * N and report["exact_duplicates"] == report["near_duplicates"] == 0


def test_a_row_without_text_stops_the_run_naming_it(tmp_path, math500_index, capsys):
    """A later row: a data error (exit 1) naming the row wherever its chunk was checked; the
    first row: a usage error (exit 2) before any benchmark index is built."""
    rows = [{"id": f"q{i}", "conversations": [{"from": "human", "value": f"Question {i}?"}, {"from": "gpt", "value": "4"}]}
            for i in range(9)]
    rows[6]["conversations"] = [{"from": "gpt", "value": "an answer without its question"}]
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for workers in (1, 2):
        with pytest.raises(EmptyRowError, match=r"^row 7 \(id q6\): conversations give no prompt text"):
            decontaminate(tmp_path / "bad.jsonl", tmp_path / f"out{workers}", math500_index, workers=workers,
                          chunk_rows=2)
    main = curate_main()
    with pytest.raises(SystemExit, match=r"row 7 \(id q6\)") as stop:
        main(["decontaminate", str(tmp_path / "bad.jsonl"), "--against", "math500", "--out", str(tmp_path / "o"),
              "--workers", "1", "--no-paraphrase"])
    assert "give no prompt text" in str(stop.value.code)
    for command in (["decontaminate", "--against", "math500"], ["dedup"]):
        with pytest.raises(SystemExit) as stop:
            main([command[0], str(tmp_path / "bad.jsonl"), *command[1:], "--fields", "messages",
                  "--out", str(tmp_path / "o2")])
        assert stop.value.code == 2
        assert "row 1 (id q0): messages give no" in capsys.readouterr().err
