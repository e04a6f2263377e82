"""Rows are read lazily: streamed per format, in slices that know their global row index."""

import csv
import gzip
import json
import zipfile
from pathlib import Path

import pytest

from skyeval.envs.data import RowSource, read_records, read_slice
from skyeval.envs.math import MathEnv
from skyeval.envs.registry import SkyEnvBuilder
from skyeval.errors import DataNotFoundError

ROWS = [{"problem": f"What is {i}+1?", "answer": str(i + 1), "solution": f"It is \\boxed{{{i + 1}}}."} for i in range(40)]


def bytes_read_by_this_thread() -> int:
    """rchar of /proc/thread-self/io: bytes this thread passed through read(2) and friends."""
    io_file = Path("/proc/thread-self/io")
    if not io_file.exists():
        pytest.skip("needs Linux /proc/thread-self/io")
    return int(dict(line.split(": ") for line in io_file.read_text().splitlines())["rchar"])


def write_jsonl(path: Path, count: int) -> Path:
    with (gzip.open(path, "wt") if path.name.endswith(".gz") else path.open("w")) as fh:
        for i in range(count):
            fh.write(json.dumps({"problem": f"Compute {i} * 2 and explain every step. " * 2, "answer": str(2 * i)}) + "\n")
    return path


@pytest.mark.parametrize("name", ["big.jsonl", "big.jsonl.gz"])
def test_first_problems_of_a_200k_line_file_read_only_its_start(tmp_path, name):
    path = write_jsonl(tmp_path / name, 200_000)
    env = MathEnv(data_dir=str(tmp_path), local_files=name, solution_field=None)
    problems = env.iter_problems()
    before = bytes_read_by_this_thread()
    first = [next(problems) for _ in range(10)]
    consumed = bytes_read_by_this_thread() - before
    problems.close()
    assert [p["expected"] for p in first] == [str(2 * i) for i in range(10)]
    assert consumed < path.stat().st_size / 50, f"read {consumed} of {path.stat().st_size} bytes for 10 problems"
    limited = MathEnv(data_dir=str(tmp_path), local_files=name, solution_field=None, limit=10)
    before = bytes_read_by_this_thread()
    assert limited.load_problems() == first
    assert bytes_read_by_this_thread() - before < path.stat().st_size / 50


def test_load_rows_is_an_iterator_and_missing_files_raise_at_once(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", 3)
    rows = MathEnv(data_dir=str(tmp_path), local_files="a.jsonl").load_rows()
    assert iter(rows) is rows and len(list(rows)) == 3
    with pytest.raises(DataNotFoundError, match="nope.jsonl"):
        MathEnv(data_dir=str(tmp_path), local_files="nope.jsonl").load_rows()


def _write_all_formats(folder: Path) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    lines = "".join(json.dumps(r) + "\n" + ("\n" if i % 7 == 0 else "") for i, r in enumerate(ROWS))  # blank lines too
    paths = {
        "jsonl": folder / "rows.jsonl",
        "gz": folder / "rows.jsonl.gz",
        "json": folder / "rows.json",
        "csv": folder / "rows.csv",
        "parquet": folder / "rows.parquet",
        "zip": folder / "rows.zip",
    }
    paths["jsonl"].write_text(lines)
    paths["gz"].write_bytes(gzip.compress(lines.encode()))
    paths["json"].write_text(json.dumps(ROWS))
    with paths["csv"].open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROWS[0]))
        writer.writeheader()
        writer.writerows(ROWS)
    pq.write_table(pa.Table.from_pylist(ROWS), paths["parquet"], row_group_size=6)
    with zipfile.ZipFile(paths["zip"], "w") as archive:
        archive.writestr("inner/rows.json", json.dumps(ROWS))
    return paths


def test_every_format_streams_the_same_rows(tmp_path):
    for kind, path in _write_all_formats(tmp_path).items():
        rows = read_records(path)
        assert not isinstance(rows, list), kind
        assert list(rows) == ROWS, kind


def test_slices_cover_every_row_once_with_its_global_index(tmp_path):
    paths = list(_write_all_formats(tmp_path).values())
    source = RowSource(paths=paths)
    expected = list(source.rows())
    assert len(expected) == 6 * len(ROWS)
    slices = source.slices(rows_per_slice=9)
    assert sum(s.count for s in slices) == len(expected)
    assert {s.kind for s in slices} == {"jsonl", "parquet", "file"}
    assert sum(s.kind == "jsonl" for s in slices) == 5  # 40 rows, 9 per slice, blank lines skipped
    assert sum(s.kind == "parquet" for s in slices) == 4  # row groups of 6, grouped to >= 9 rows
    for piece in slices:
        rows = list(read_slice(piece))
        assert len(rows) == piece.count
        assert rows == expected[piece.start : piece.start + piece.count]


def test_a_malformed_jsonl_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"problem": "a", "answer": "1"}\n{"problem": \n')
    with pytest.raises(ValueError, match="bad.jsonl, line 2"):
        list(read_records(path))


def test_hub_rows_stream_from_the_memory_mapped_split(tmp_path, monkeypatch):
    """A hub id is anything `datasets.load_dataset` takes; a local parquet folder works offline."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    (tmp_path / "hub" / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "hub" / "data" / "test-00000-of-00001.parquet")
    monkeypatch.delenv("SKYEVAL_DATA_DIR", raising=False)
    env = MathEnv(hf_id=str(tmp_path / "hub"), split="test", local_files="unused.jsonl")
    rows = env.load_rows()
    assert not isinstance(rows, list) and list(rows) == ROWS
    source = RowSource(hub=(str(tmp_path / "hub"), "test", None))
    dataset = datasets.load_dataset(str(tmp_path / "hub"), split="test")
    slices = source.slices(16, dataset)
    assert [(s.start, s.count) for s in slices] == [(0, 16), (16, 16), (32, 8)]
    assert [r for s in slices for r in read_slice(s, dataset)] == ROWS


HUB_DRIVER = """
import sys
from skyeval.envs.data import load_hub
from skyeval.errors import DataNotFoundError
try:
    load_hub("HuggingFaceH4/aime_2024", "train")
except DataNotFoundError as err:
    print("ERROR", err)
"""


def test_an_unreachable_hub_fails_at_once_from_the_cache_not_after_retries(tmp_path):
    """Issue 25 item 16: no connection to the hub -> the cache only, one clear error, no
    `Retrying in 8s` from the hub client."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SKYEVAL_DATA_DIR"))}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(Path(__file__).parents[2]))
    proc = subprocess.run([sys.executable, "-c", HUB_DRIVER], env=env, capture_output=True, text=True, timeout=600)
    assert "ERROR cannot load 'HuggingFaceH4/aime_2024' from the Hugging Face hub (no connection to 127.0.0.1:9" \
        in proc.stdout, proc.stdout + proc.stderr
    assert "not in the local cache" in proc.stdout and "Retrying" not in proc.stderr


def test_a_reachable_hub_or_offline_flag_is_told_apart(monkeypatch):
    import socket

    from skyeval.envs.data import hub_unreachable

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub_unreachable() is None
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        assert hub_unreachable() == "HF_HUB_OFFLINE is set"


def test_livecodebench_says_what_the_local_copy_lacks_and_how_to_get_it(data_dir):
    """The shared mirror's livecodebench folder holds QwQ's prompts without tests: the error
    named no local copy at all, though the folder is there."""
    env = SkyEnvBuilder.build("livecodebench", {"data_dir": str(data_dir)})
    with pytest.raises(DataNotFoundError) as found:
        next(env.load_rows())
    message = str(found.value)
    assert message.startswith(f"env 'livecodebench' reads livecodebench/test.jsonl, livecodebench/test2.jsonl, "
                              f"livecodebench/test3.jsonl, livecodebench/test4.jsonl, livecodebench/test5.jsonl "
                              f"under {data_dir}; missing: all of them. ")
    assert (f"{data_dir / 'livecodebench'} holds qwq_livecodebench_v5_prompts_only.jsonl, whose rows lack "
            "question_content, public_test_cases, private_test_cases, difficulty.") in message
    assert (f"Get them with: hf download livecodebench/code_generation_lite test.jsonl test2.jsonl test3.jsonl "
            f"test4.jsonl test5.jsonl --repo-type dataset --local-dir {data_dir}/livecodebench") in message
    with pytest.raises(DataNotFoundError, match="missing: all of them"):
        env.check_data()  # what a run checks before claiming a folder


def test_a_copy_in_place_is_read(tmp_path):
    """Files where the message says (hub rows) are what the env reads."""
    lcb = (Path(__file__).resolve().parents[1] / "fixtures" / "code" / "livecodebench.jsonl").read_text()
    (tmp_path / "livecodebench").mkdir()
    for name in ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl"):
        (tmp_path / "livecodebench" / name).write_text(lcb if name == "test.jsonl" else "")
    problems = SkyEnvBuilder.build("livecodebench", {"data_dir": str(tmp_path)}).load_problems()
    assert len(problems) == len(lcb.splitlines()) > 0
