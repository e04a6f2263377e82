"""ScorerPool: the one pool of scoring processes (skyeval/scorers/pool.py): persistent,
thread-safe, a bound per item, a worker that dies once replaced and its item tried again,
workers that cannot start an InfrastructureError (never a score), and the streaming side
the run pipeline uses (submit, wait_for_room, held_back, drain, close(cancel=True))."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from skyeval.errors import InfrastructureError
from skyeval.scorers.pool import ItemFailure, ScorerPool


def work(item):
    """What the workers run (importable, so spawned workers find it)."""
    kind, value = item
    if kind == "sleep":
        time.sleep(value)
    elif kind == "die":
        os._exit(value)
    elif kind == "die_once":  # the first worker to take it dies; the retry scores it
        flag = Path(value)
        if not flag.exists():
            flag.touch()
            os._exit(9)
        return {"value": "retried", "pid": os.getpid()}
    elif kind == "gate":  # wait (up to 120 s) for a file
        deadline = time.monotonic() + 120
        while not Path(value).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    elif kind == "raise":
        raise ValueError(f"bad item {value}\nsecond line")
    elif kind == "meet":  # wait (up to 120 s) until two items are being scored at once
        folder, name = value
        Path(folder, name).touch()
        deadline = time.monotonic() + 120
        while len(os.listdir(folder)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        return {"value": len(os.listdir(folder)), "pid": os.getpid()}
    return {"value": value, "pid": os.getpid()}


def _refuse_to_load():
    raise RuntimeError("this scorer cannot be loaded in a worker")


class Unloadable:
    """Pickles fine here, fails to unpickle in a worker: the workers cannot start."""

    def __reduce__(self):
        return (_refuse_to_load, ())

    def __call__(self, item):
        return item


@pytest.fixture(scope="module")
def pool():
    with ScorerPool(work, 2, item_timeout_s=5.0, chunk_size=4) as p:
        yield p


def test_results_come_back_in_order_from_workers_reused_across_calls(pool):
    first = pool.map([("ok", i) for i in range(40)])
    second = pool.map([("ok", i) for i in range(40)])
    assert [r["value"] for r in first] == list(range(40)) == [r["value"] for r in second]
    pids = {r["pid"] for r in first} | {r["pid"] for r in second}
    assert len(pids) <= 2 and os.getpid() not in pids  # the same two workers on both calls, none re-spawned
    assert pool.map([]) == []


def test_items_are_scored_in_parallel(tmp_path):
    with ScorerPool(work, 2, item_timeout_s=300.0) as p:  # each item waits until the other one runs too
        results = p.map([("meet", (str(tmp_path), "a")), ("meet", (str(tmp_path), "b"))])
    assert [r["value"] for r in results] == [2, 2] and results[0]["pid"] != results[1]["pid"]


def test_an_item_past_the_bound_fails_with_timeout_and_its_worker_is_replaced(pool):
    before = pool.replaced
    results = pool.map([("ok", 1), ("sleep", 600), ("ok", 2), ("ok", 3)])
    assert isinstance(results[1], ItemFailure) and results[1].reason.startswith("timeout")
    assert [results[i]["value"] for i in (0, 2, 3)] == [1, 2, 3]  # the rest of its chunk still scored
    assert pool.replaced == before + 1
    assert [r["value"] for r in pool.map([("ok", i) for i in range(6)])] == list(range(6))


def test_an_item_within_the_bound_is_never_timed_out(pool):
    before = pool.replaced
    results = pool.map([("sleep", 0.2), ("sleep", 0.2), ("ok", 7)])  # 25x under the bound
    assert not any(isinstance(r, ItemFailure) for r in results)
    assert pool.replaced == before


def test_a_dying_worker_or_a_raising_fn_fails_only_its_item(pool):
    results = pool.map([("ok", 1), ("die", 7), ("raise", 3), ("ok", 4)])
    assert results[0]["value"] == 1 and results[3]["value"] == 4
    assert results[1] == ItemFailure("worker died twice while scoring this item (exit code 7)")
    assert not results[1].infrastructure  # died twice running on it: the item's fault
    assert results[2] == ItemFailure("ValueError: bad item 3")  # one line


def test_a_worker_that_dies_once_is_replaced_and_its_item_scored_on_the_new_one(pool, tmp_path):
    before = pool.replaced
    results = pool.map([("ok", 1), ("die_once", str(tmp_path / "died")), ("ok", 3)])
    assert [r["value"] for r in results] == [1, "retried", 3]
    assert (tmp_path / "died").exists() and pool.replaced == before + 1


def test_workers_that_cannot_start_raise_never_score():
    with ScorerPool(Unloadable(), 2, item_timeout_s=30) as p:
        with pytest.raises(InfrastructureError, match="cannot be loaded in a worker"):
            p.map([1, 2, 3])
        assert p.closed and "cannot be loaded" in p.broken  # env.scorer_pool makes a new one
        got: list = []
        p.submit(4, lambda item, result: got.append((item, result)))
        p.drain()
    assert got[0][0] == 4 and isinstance(got[0][1], ItemFailure) and got[0][1].infrastructure


def test_a_function_of_the_main_script_goes_by_value_and_an_unpicklable_one_is_a_clear_error():
    import __main__

    offset = 10

    def scorer(item):  # as if defined in a notebook cell: no worker can import it
        return item + offset

    scorer.__module__ = __main__.__name__
    with ScorerPool(scorer, 1) as p:
        assert p.map([1, 2]) == [11, 12]
    lock = threading.Lock()

    def locked(item):
        with lock:
            return item

    with pytest.raises(TypeError, match=r"ScorerPool: cannot send tests\.reward\.test_pool\..*locked to a worker "
                                        r"process: cannot pickle '_thread\.lock' object"):
        ScorerPool(locked, 1)


def test_submit_never_blocks_wait_for_room_holds_back_and_drain_waits_for_every_item(tmp_path):
    """Back-pressure is the caller's, before it starts new work: `submit` (recording what was
    already produced) never waits; `wait_for_room` does while the queue is full."""
    gate = tmp_path / "gate"
    got: list = []
    with ScorerPool(work, 1, item_timeout_s=300, queue_size=3) as p:
        for i in range(6):  # twice the queue, the first item blocked: submitted at once
            p.submit(("gate", str(gate)) if i == 0 else ("ok", i), lambda item, result: got.append(result))
        stop = threading.Event()
        waiter = threading.Thread(target=p.wait_for_room, args=(stop,))
        waiter.start()
        assert p.held_back.wait(120)  # 6 items in flight, the first blocked: no room
        assert got == [] and waiter.is_alive()
        stop.set()  # a stopping run stops waiting
        waiter.join(120)
        assert not waiter.is_alive() and not p.held_back.is_set()
        waiter = threading.Thread(target=p.wait_for_room)
        waiter.start()
        gate.touch()
        waiter.join(120)  # room again once the scorer caught up
        assert not waiter.is_alive()
        p.drain()
    assert [r["value"] for r in got] == [str(gate), 1, 2, 3, 4, 5]  # one worker: in order, none lost


def test_close_with_cancel_stops_a_busy_worker_at_once_and_drops_the_queue(tmp_path):
    got: list = []
    p = ScorerPool(work, 1, item_timeout_s=300)
    pid = p.map([("ok", 0)])[0]["pid"]
    p.submit(("sleep", 600), lambda item, result: got.append(result))
    p.submit(("ok", 1), lambda item, result: got.append(result))
    deadline = time.monotonic() + 60
    while p._tasks.qsize() > 1 and time.monotonic() < deadline:  # the worker took the sleeper; ('ok', 1) waits
        time.sleep(0.01)
    p.close(cancel=True)  # returns without waiting 600 s
    assert got == []  # abandoned, not reported: a re-run scores them
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_calls_from_many_threads_each_get_their_own_results(pool):
    out: dict[int, list] = {}

    def call(n: int) -> None:
        out[n] = [r["value"] for r in pool.map([("ok", n * 1000 + i) for i in range(25)])]

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert out == {n: [n * 1000 + i for i in range(25)] for n in range(8)}


def test_a_closed_pool_refuses_work_and_stops_its_workers():
    p = ScorerPool(work, 1, item_timeout_s=30)
    pid = p.map([("ok", 0)])[0]["pid"]
    p.close()
    p.close()
    with pytest.raises(RuntimeError, match="closed"):
        p.map([("ok", 1)])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="item_timeout_s"):
        ScorerPool(work, 1, item_timeout_s=0)
    with pytest.raises(ValueError, match="chunk_size"):
        ScorerPool(work, 1, chunk_size=0)
