"""Date windows (`env.start_date` / `env.end_date`) of dated benchmarks: liveaops' post
months, livecodebench's contest dates, and the errors of bad or empty windows."""

from pathlib import Path

import pytest

from skyeval import SkyEnvBuilder
from skyeval.config.fingerprints import fingerprint
from skyeval.envs.dates import DateWindow, parse_date, problem_date
from skyeval.errors import ConfigError
from tests.conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MONTHS = {"2024-06": 343, "2024-07": 324, "2024-08": 367, "2024-09": 373, "2024-10": 356, "2024-11": 266}


def liveaops(data_dir, **knobs):
    if not (data_dir / "liveaops" / "LiveAoPSBench_v1.0.jsonl").exists():
        pytest.skip("liveaops data not found (set SKYEVAL_DATA_DIR)")
    return SkyEnvBuilder.build("liveaops", knobs)


def dates(env):
    return [p["date"] for p in env.iter_problems()]


def test_a_window_keeps_its_months_inclusive_at_both_ends(data_dir):
    after = dates(liveaops(data_dir, start_date="2024-07"))
    assert len(after) == 1686 and min(after) == "2024-07" and max(after) == "2024-11"
    quarter = dates(liveaops(data_dir, start_date="2024-07", end_date="2024-09"))
    assert len(quarter) == 1064 == MONTHS["2024-07"] + MONTHS["2024-08"] + MONTHS["2024-09"]
    assert dates(liveaops(data_dir, start_date="2024-07", end_date="2024-07")) == ["2024-07"] * MONTHS["2024-07"]
    assert len(dates(liveaops(data_dir, end_date="2024-01"))) == 609  # the first month, open start
    assert len(dates(liveaops(data_dir, start_date="2024-11"))) == MONTHS["2024-11"]  # the last month, open end
    # days: a problem dated to its month is compared by month
    assert len(dates(liveaops(data_dir, start_date="2024-07-15", end_date="2024-09-01"))) == 1064


def test_limit_applies_after_the_window(data_dir):
    env = liveaops(data_dir, start_date="2024-09", end_date="2024-09", limit=5)
    problems = list(env.iter_problems())
    assert [p["date"] for p in problems] == ["2024-09"] * 5
    first_of_september = next(i for i, p in enumerate(liveaops(data_dir).iter_problems()) if p["date"] == "2024-09")
    assert problems[0]["id"] == str(first_of_september)


def test_an_empty_window_is_one_line_naming_the_datas_dates(data_dir):
    env = liveaops(data_dir, start_date="2025-01")
    with pytest.raises(ConfigError) as err:
        env.check_window()
    assert str(err.value) == ("env 'liveaops': no problem in the date window 2025-01 ..; "
                              "the data's dates run 2024-01 .. 2024-11")
    with pytest.raises(ConfigError, match="the data's dates run 2024-01 .. 2024-11"):
        list(liveaops(data_dir, end_date="2023-12-31").iter_problems())
    liveaops(data_dir, start_date="2024-11").check_window()  # a window with problems passes


@pytest.mark.parametrize("value, why", [
    ("2024-13", "there is no month 13"), ("2024-00", "there is no month 0"), ("2024-02-30", "2024-02 has no day 30"),
    ("2024/07", None), ("July 2024", None), ("2024", None), ("2024-7", None),
])
def test_bad_dates_are_one_line_config_errors(value, why):
    with pytest.raises(ConfigError) as err:
        DateWindow.of(start=value)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"env.start_date must be YYYY-MM or YYYY-MM-DD, got {value!r}")
    assert why is None or message.endswith(why)


def test_window_parsing_edges():
    assert parse_date("2024-07") == (2024, 7) and parse_date("2024-02-29") == (2024, 2, 29)
    with pytest.raises(ConfigError, match="env.start_date 2024-09 is after env.end_date 2024-08-31"):
        DateWindow.of("2024-09", "2024-08-31")
    window = DateWindow.of("2024-07", "2024-09")
    assert [window.holds(d) for d in ("2024-06-30", "2024-07-01", "2024-09-30", "2024-10-01", "2024-08", None)] == \
        [False, True, True, False, True, False]
    assert problem_date({"year": 2024, "month": 3}) == "2024-03" and problem_date("2024-08-03T00:00:00") == "2024-08-03"


def test_undated_envs_refuse_a_window_and_livecodebench_uses_it():
    with pytest.raises(ConfigError, match="env 'math500' has no problem dates"):
        SkyEnvBuilder.build("math500", {"start_date": "2024-07"})
    lcb = {"data_dir": str(FIXTURES / "code"), "local_files": "livecodebench.jsonl"}
    window = SkyEnvBuilder.build("livecodebench", {**lcb, "start_date": "2024-08", "end_date": "2025-01"})
    assert [p["contest_date"] for p in window.iter_problems()] == ["2024-08-03", "2025-01-18"]
    with pytest.raises(ConfigError, match="the data's dates run 2023-09-30 .. 2025-01-18"):
        SkyEnvBuilder.build("livecodebench", {**lcb, "start_date": "2025-02"}).check_window()


def test_the_window_is_part_of_the_fingerprint_only_when_set():
    base = {"env": {"name": "liveaops", "answers": "any", "start_date": None, "end_date": None}}
    assert fingerprint(base).values["env"] == {"name": "liveaops", "answers": "any"}  # undated runs keep their fingerprints
    windowed = {"env": {**base["env"], "start_date": "2024-07"}}
    assert fingerprint(windowed).values["env"]["start_date"] == "2024-07"
    assert len({fingerprint(c).digest for c in (base, windowed, {"env": {**windowed["env"], "end_date": "2024-09"}})}) == 3


def test_cli_bad_date_is_one_line_and_exit_2(tmp_path, data_dir):
    proc = run_cli("evaluate", "+env=liveaops", "model_config=reference", "env.start_date=2024-13", cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("skyeval: error: env.start_date must be YYYY-MM or YYYY-MM-DD, got '2024-13': "
                                   "there is no month 13")
    empty = run_cli("evaluate", "+env=liveaops", "model_config=reference", "env.start_date=2025-01", cwd=tmp_path,
                    check=False)
    assert empty.returncode == 2 and empty.stderr.strip().splitlines() == [
        "skyeval: error: env 'liveaops': no problem in the date window 2025-01 ..; the data's dates run 2024-01 .. 2024-11"]
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").iterdir())


def test_read_dataset_applies_the_window_before_limit(data_dir, ray_session):
    ds = liveaops(data_dir, start_date="2024-07", end_date="2024-09").read_dataset()
    assert ds.count() == 1064
    limited = liveaops(data_dir, start_date="2024-11", limit=3).read_dataset().take_all()
    assert [r["date"] for r in limited] == ["2024-11"] * 3
    with pytest.raises(ConfigError, match="no problem in the date window"):
        liveaops(data_dir, start_date="2030-01").read_dataset()
