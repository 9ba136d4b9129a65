"""``tools/paired_laps.py``: two policies lap by lap, the discordant laps and the sign test."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "tools" / "paired_laps.py"
_SPEC = importlib.util.spec_from_file_location("paired_laps", _PATH)
paired_laps = importlib.util.module_from_spec(_SPEC)
sys.modules["paired_laps"] = paired_laps  # dataclasses look their module up
_SPEC.loader.exec_module(paired_laps)


def _lap(driver, track, surface, end="completed", cte=0.05):
    """One ``results.json`` row; the expert's mean error is 0.05 m on every lap."""
    return {
        "driver": driver,
        "condition": {"track": track, "surface": surface, "ice_patches": 0},
        "terminated_by": end,
        "metrics": {"cte_mean": cte, "cte_max": 0.3,
                    "completion": 1.0 if end == "completed" else 0.6},
        "vs_expert": None if driver == "expert" else {"cte_mean": cte / 0.05, "lap_time": 1.0},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [(0, 0, 1.0), (5, 0, 1 / 32), (9, 1, 11 / 1024), (1, 9, 1023 / 1024), (3, 3, 42 / 64)],
)
def test_sign_test_is_the_binomial_tail(wins, losses, p):
    """P(X >= wins) for X ~ Binomial(wins + losses, 1/2), by hand for small cases."""
    assert paired_laps.sign_test(wins, losses) == pytest.approx(p)


def test_the_rule_thresholds_quoted_in_experiments_md_are_right():
    """9 of 10, 12 of 15 and 15 of 20 discordant laps reach p <= 0.05; one fewer does not."""
    for wins, n in ((9, 10), (12, 15), (15, 20)):
        assert paired_laps.sign_test(wins, n - wins) <= 0.05
        assert paired_laps.sign_test(wins - 1, n - wins + 1) > 0.05
    assert math.isclose(paired_laps.sign_test(12, 3), 576 / 32768)


def test_pairs_laps_by_condition_and_counts_only_discordant_ones():
    """Laps both pass or both fail tell nothing; each discordant lap names what the other did."""
    runs = [_lap("expert", f"town:{i}", "ice") for i in range(5)]
    runs += [
        _lap("a", "town:0", "ice"), _lap("b", "town:0", "ice"),  # both pass
        _lap("a", "town:1", "ice"), _lap("b", "town:1", "ice", cte=0.1),  # only a
        _lap("a", "town:2", "ice"), _lap("b", "town:2", "ice", end="off_track"),  # only a
        _lap("a", "town:3", "ice", end="stalled"), _lap("b", "town:3", "ice"),  # only b
        _lap("a", "town:4", "ice", cte=0.2), _lap("b", "town:4", "ice", cte=0.3),  # neither
    ]  # fmt: skip
    p = paired_laps.pair(list(reversed(runs)), "a", "b")  # row order does not matter
    assert (p.laps, p.completed_a, p.completed_b, p.strict_a, p.strict_b) == (5, 4, 4, 3, 2)
    assert len(p.only_a) == 2 and len(p.only_b) == 1
    assert p.only_a[1].startswith("town:2 ice: b off_track at 60 %")
    assert p.only_b[0].startswith("town:3 ice: a stalled")
    assert p.p_value == pytest.approx(0.5)  # 2 of 3
    text = paired_laps.report(p, "a", "b")
    assert "| a | 4 | 3 | 2 |" in text and "p = 0.5000" in text


def test_refuses_missing_drivers_other_laps_and_duplicates():
    """A wrong name, unequal lap sets or one lap given twice are said plainly, not counted."""
    runs = [_lap("a", "town:0", "ice"), _lap("b", "town:0", "ice"), _lap("a", "town:1", "ice")]
    with pytest.raises(KeyError, match="'c' drove no lap"):
        paired_laps.pair(runs, "a", "c")
    with pytest.raises(KeyError, match="drove different laps"):
        paired_laps.pair(runs, "a", "b")
    with pytest.raises(ValueError, match="twice"):
        paired_laps.pair(runs[:2] + runs[:2], "a", "b")
    bare = {**runs[1], "vs_expert": None}  # completed, but no expert drove this lap
    with pytest.raises(ValueError, match="'b' on town:0 ice in \\? has no ratio to the expert"):
        paired_laps.pair([runs[0], bare], "a", "b")


def test_a_missing_or_foreign_results_file_is_named(tmp_path, capsys):
    """A wrong path or a file that is not an s3 evaluate table exits 2 naming the file."""
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    for name in ("missing.json", "other.json"):
        with pytest.raises(SystemExit) as exit_info:
            paired_laps.main([str(tmp_path / name), "--a", "a", "--b", "b"])
        assert exit_info.value.code == 2
        assert f"{name}: not a readable results.json" in capsys.readouterr().err


def test_main_reads_several_tables_and_writes_the_report(tmp_path, capsys):
    """Two results.json files (e.g. two runs of one set) are paired as one set of laps."""
    for name, track in (("one", "town:0"), ("two", "procedural:0")):
        runs = [_lap(d, track, "snow") for d in ("expert", "a")] + [_lap("b", track, "snow", cte=1)]
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps({"runs": runs}))
    out = tmp_path / "paired.md"
    files = [str(tmp_path / n / "results.json") for n in ("one", "two")]
    assert paired_laps.main([*files, "--a", "a", "--b", "b", "--out", str(out)]) == 0
    assert "p = 0.2500" in capsys.readouterr().out
    assert "| b | 2 | 0 | 0 |" in out.read_text()
