import contextlib
import json
import logging
import multiprocessing
import os
import signal

import pytest

from skyeval.config import (
    REDACTED,
    fingerprint,
    is_secret_key,
    redact,
    redact_text,
    safe_name,
)
from skyeval.results import (
    ConfigMismatchError,
    FolderLockedError,
    KeySet,
    PartWriter,
    RunFolder,
    _still_at,
    iter_records,
    read_jsonl,
    write_rows,
)


def test_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"id": "a", "sample_idx": 0}) + '\n{"id": "b", "sampl')  # a crash mid-write
    assert list(read_jsonl(path)) == [{"id": "a", "sample_idx": 0}]


def test_claim_resumes_same_config_and_refuses_another(tmp_path):
    folder = RunFolder(tmp_path / "run")
    assert folder.claim({"model": "a"}) is False
    assert folder.claim({"model": "a"}) is True
    with pytest.raises(ConfigMismatchError, match="model"):
        folder.claim({"model": "b"})
    with folder.writer("generations") as writer:
        writer.write({"id": "x", "sample_idx": 0})
    assert folder.claim({"model": "b"}, overwrite=True) is False
    assert list(folder.records("generations")) == []


def test_parts_rotate_by_size_and_a_new_writer_never_appends_to_an_old_part(tmp_path):
    folder = RunFolder(tmp_path / "run")
    folder.claim({})
    writer = PartWriter(folder.dir("generations"), max_bytes=200, on_close=folder._note_part)
    for i in range(10):
        writer.write({"id": str(i), "sample_idx": 0, "text": "x" * 50})
    writer.close()
    first = folder.parts("generations")
    assert len(first) > 1 and [p.name for p in first][0] == "part-00000.jsonl"
    with first[-1].open("a") as fh:  # a killed run's torn last line
        fh.write('{"id": "torn", "samp')
    with folder.writer("generations") as again:
        again.write({"id": "10", "sample_idx": 0})
    assert [r["id"] for r in folder.records("generations")] == [str(i) for i in range(11)]
    manifest = json.loads(folder.manifest.read_text())
    assert sum(e["records"] for e in manifest["parts"]["generations"]) == 11


def test_older_single_file_folders_still_read(tmp_path):
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "scores.jsonl").write_text('{"id": "a", "sample_idx": 0, "score": 1.0}\n')
    (tmp_path / "scores" / "per_problem.jsonl").write_text('{"id": "a"}\n')
    assert list(iter_records(tmp_path, "scores")) == [{"id": "a", "sample_idx": 0, "score": 1.0}]


def test_key_set_holds_hashes_not_records():
    keys = KeySet((str(i), j) for i in range(1000) for j in range(4))
    assert len(keys) == 4000 and keys._sorted.nbytes == 8 * 4000
    assert ("999", 3) in keys and ("999", 4) not in keys and ("1000", 0) not in keys


def _hold_lock(path, ready, release):
    with RunFolder(path).lock():
        ready.set()
        release.wait(30)


@contextlib.contextmanager
def logged(name: str):
    """The records logged on `name` in the block (whatever handlers earlier tests left)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger(name).addHandler(handler)
    try:
        yield records
    finally:
        logging.getLogger(name).removeHandler(handler)


def test_one_writer_per_folder_and_a_killed_holder_never_blocks(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(tmp_path / "run", ready, release))
    holder.start()
    assert ready.wait(30)
    with pytest.raises(FolderLockedError, match=rf"pid {holder.pid} on .* since "):
        with RunFolder(tmp_path / "run").lock():
            pass
    os.kill(holder.pid, signal.SIGKILL)  # the lock dies with its holder
    holder.join()
    with logged("skyeval.results") as records:
        with RunFolder(tmp_path / "run").lock():
            pass
    (line,) = [r.getMessage() for r in records]  # its file, naming it, is taken over with one line
    assert f"pid {holder.pid} on " in line and line.endswith("taken over")
    assert not (tmp_path / "run" / ".lock-run").exists()


def test_the_lock_file_goes_when_its_block_ends_however_it_ends(tmp_path):
    folder = RunFolder(tmp_path / "run")
    with logged("skyeval.results") as records, folder.lock():
        assert (tmp_path / "run" / ".lock-run").read_text().startswith(f"pid {os.getpid()} on ")
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C, or SIGTERM as the CLI turns it
        with folder.lock("shard-3"):
            raise KeyboardInterrupt
    with pytest.raises(ZeroDivisionError):
        with folder.lock():
            1 / 0
    assert list((tmp_path / "run").iterdir()) == [] and not records


def test_a_lock_file_removed_as_it_was_opened_is_not_the_lock(tmp_path):
    """A holder removes its file, then releases it: a process that opened the old file
    before that must not take it for the folder's lock (`RunFolder.lock` opens the new one)."""
    path = tmp_path / ".lock-run"
    path.write_text("")
    with path.open("a+") as opened:
        assert _still_at(opened, path)
        path.unlink()
        assert not _still_at(opened, path)
        path.write_text("")  # another process's new lock file
        assert not _still_at(opened, path)


def test_write_rows_formats(tmp_path):
    rows = [{"id": "a", "score": 1.0}, {"id": "b", "score": 0.0}]
    assert list(read_jsonl(write_rows(rows, tmp_path / "r.jsonl"))) == rows
    assert json.loads(write_rows(rows, tmp_path / "r.json", "json").read_text()) == rows
    import pyarrow.parquet as pq

    assert pq.read_table(write_rows(rows, tmp_path / "r.parquet", "parquet")).to_pylist() == rows
    with pytest.raises(ValueError):
        write_rows(rows, tmp_path / "r.csv", "csv")


@pytest.mark.parametrize("key", ["max_tokens", "tokenizer", "max_num_batched_tokens", "tokens_per_minute",
                                 "reasoning_tokens", "pad_token", "eos_token", "api_key_env", "keyword"])
def test_words_containing_secret_words_are_not_secrets(key):
    assert not is_secret_key(key)
    assert redact({key: 5}) == {key: 5}


@pytest.mark.parametrize("key", ["api_key", "apikey", "hf_token", "access_token", "password", "db_password",
                                 "secret", "client_secret", "authorization", "token", "OPENAI_API_KEY"])
def test_secret_keys_are_redacted(key):
    assert is_secret_key(key)
    assert redact({key: "s3cr3t-value"}) == {key: REDACTED}


def test_redact_env_values_and_assignments(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-1234567890")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false-but-long")  # not a secret's name
    obj = {"api_key": "x", "nested": {"token": "t"}, "cmd": "run with sk-test-1234567890", "api_key_env": "OPENAI_API_KEY",
           "note": "false-but-long"}
    out = redact(obj)
    assert out["api_key"] == REDACTED and out["nested"]["token"] == REDACTED
    assert "sk-test" not in json.dumps(out) and out["note"] == "false-but-long"
    assert redact_text("a model_config.api_key=abc sampling_params.max_tokens=64") == \
        f"a model_config.api_key={REDACTED} sampling_params.max_tokens=64"


def test_fingerprint_has_real_values_and_no_secrets():
    resolved = {"env": {"name": "aime24", "limit": 5}, "template": None,
                "model_config": {"model_source": "m", "api_key": "sk-secret", "max_num_batched_tokens": 2048},
                "sampling_params": {"max_tokens": 128, "n": 4, "seed": 0}}
    fp = fingerprint(resolved)
    assert fp["sampling"] == {"max_tokens": 128, "seed": 0}
    assert fp["model"] == {"model_source": "m", "max_num_batched_tokens": 2048}
    assert "sk-secret" not in json.dumps(fp) and REDACTED not in json.dumps(fp)
    other = fingerprint({**resolved, "sampling_params": {"max_tokens": 256, "n": 4, "seed": 0}})
    assert other != fp


def test_safe_name():
    assert safe_name("math500_Qwen/Qwen2.5-7B_t0.6") == "math500_Qwen_Qwen2.5-7B_t0.6"
