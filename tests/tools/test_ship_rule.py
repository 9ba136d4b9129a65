"""``tools/ship_rule.py``: the 318 laps of the ship rule, the counts and the decision."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from policies.config import PRESETS

_PATH = Path(__file__).resolve().parents[2] / "tools" / "ship_rule.py"
_SPEC = importlib.util.spec_from_file_location("ship_rule", _PATH)
ship_rule = importlib.util.module_from_spec(_SPEC)
sys.modules["ship_rule"] = ship_rule  # dataclasses look their module up
_SPEC.loader.exec_module(ship_rule)
Count = ship_rule.Count


def test_the_laps_are_the_readme_318_and_held_out_but_putnam():
    """128 town, 160 open-circuit and 30 transition laps; no training pool holds one but Putnam."""
    sizes: dict[str, int] = {}
    for part in ship_rule.PARTS:
        sizes[part.group] = sizes.get(part.group, 0) + part.laps
    assert sizes == {"towns": 128, "Putnam and procedural": 160, "transition set": 30}
    assert ship_rule.TOTAL_LAPS == 318
    towns, open_circuits, transitions_towns, transitions_open = ship_rule.PARTS
    towns_seeds = (*range(50, 54), *range(60, 64), *range(70, 74), *range(100, 104))
    assert towns.tracks == tuple(f"town:{i}" for i in towns_seeds)
    seeds = (*range(201, 207), *range(301, 304), *range(401, 407), *range(601, 605))
    assert open_circuits.tracks == ("putnam", *(f"procedural:{i}" for i in seeds))
    assert transitions_towns.tracks == ("town:140", "town:141", "town:142")
    assert transitions_open.tracks == ("procedural:811", "procedural:812", "procedural:813")
    assert (
        towns.conditions
        == open_circuits.conditions
        == ("asphalt,asphalt_wet,gravel,dirt,snow,ice,asphalt+6,asphalt>ice")
    )
    transitions = "ice>asphalt,ice>gravel,ice>dirt,dirt>ice,asphalt_wet>ice"
    assert transitions_towns.conditions == transitions_open.conditions == transitions
    tracks = {t for part in ship_rule.PARTS for t in part.tracks}
    pools = {t for cfg in PRESETS.values() for t in cfg.tracks}
    assert tracks & pools == {"putnam"}


@pytest.mark.parametrize(
    ("candidate", "shipped", "ships"),
    [
        (Count(318, 318, 284), Count(318, 318, 283), True),  # one more strict
        (Count(318, 317, 283), Count(318, 316, 283), True),  # one more completed
        (Count(318, 318, 283), Count(318, 318, 283), False),  # a tie ships nothing
        (Count(318, 317, 300), Count(318, 318, 283), False),  # fewer completed
        (Count(318, 318, 282), Count(318, 317, 283), False),  # fewer strict
    ],
)
def test_verdict_needs_no_loss_and_one_gain(candidate, shipped, ships):
    """At least as many completed and strict laps, one of the two strictly more."""
    assert ship_rule.verdict(candidate, shipped) is ships


def test_verdict_refuses_unequal_lap_sets():
    """Counts over different numbers of laps are not compared."""
    with pytest.raises(ValueError, match="unequal"):
        ship_rule.verdict(Count(317, 317, 300), Count(318, 316, 283))


def _lap(driver, track, surface, end="completed", cte=0.05, cte_max=0.3, time_ratio=1.0):
    """One ``results.json`` row (the expert's rows give the ratios, as in ``s3 evaluate``)."""
    expert = driver == "expert"
    return {
        "driver": driver,
        "condition": {"track": track, "surface": surface, "ice_patches": 0},
        "terminated_by": end,
        "metrics": {
            "cte_mean": cte,
            "cte_max": cte_max,
            "completion": 1.0 if end == "completed" else 0.4,
        },  # fmt: skip
        "vs_expert": None if expert else {"cte_mean": cte / 0.05, "lap_time": time_ratio},
    }


def test_counts_apply_the_strict_bar_and_skip_the_expert():
    """Completed laps over the bar count as completed, not strict; off-road laps as neither."""
    runs = [
        _lap("expert", "town:50", "ice"),
        _lap("cand", "town:50", "ice"),  # passes
        _lap("cand", "town:51", "ice", cte=0.08),  # 1.6x the expert: completed, not strict
        _lap("cand", "town:52", "ice", cte_max=2.6),  # 2.6 m excursion
        _lap("cand", "town:53", "ice", time_ratio=1.2),  # too slow
        _lap("cand", "town:60", "ice", end="off_track"),
    ]
    counts, misses = ship_rule.count_runs(runs)
    assert set(counts) == {"cand"}
    assert counts["cand"] == Count(5, 4, 1)
    assert [m.split(":")[1] for m in misses["cand"]] == ["51 ice", "52 ice", "53 ice", "60 ice"]
    assert "off_track at 40 %" in misses["cand"][-1]


def _write_parts(out: Path, candidate_off_road: int, candidate_loose: int) -> None:
    """Results of every part: the shipped policy passes every lap; the candidate misses some."""
    left_off, left_loose = candidate_off_road, candidate_loose
    for part in ship_rule.PARTS:
        runs = []
        for track in part.tracks:
            for surface in part.conditions.split(","):
                runs += [_lap("expert", track, surface), _lap("shipped", track, surface)]
                if left_off:
                    runs.append(_lap("cand", track, surface, end="off_track"))
                    left_off -= 1
                elif left_loose:
                    runs.append(_lap("cand", track, surface, cte=0.1))
                    left_loose -= 1
                else:
                    runs.append(_lap("cand", track, surface))
        (out / part.name).mkdir(parents=True)
        (out / part.name / "results.json").write_text(json.dumps({"runs": runs}))


def test_judge_counts_every_part_and_decides(tmp_path):
    """The table adds the parts up by group; a candidate that loses one lap does not ship."""
    _write_parts(tmp_path, candidate_off_road=1, candidate_loose=2)
    ships, text = ship_rule.judge(tmp_path, "cand", "shipped")
    assert not ships
    assert "| shipped | 128 / 128 | 160 / 160 | 30 / 30 | **318 / 318** |" in text
    assert "| cand | 127 / 125 | 160 / 160 | 30 / 30 | **317 / 315** |" in text
    assert "cand misses the bar on 3 laps:" in text
    ships, text = ship_rule.judge(tmp_path, "shipped", "cand")
    assert ships and "shipped ships against cand" in text


def test_judge_names_a_missing_part_and_a_missing_driver(tmp_path):
    """An unfinished run or a wrong driver name is said plainly."""
    with pytest.raises(FileNotFoundError, match="towns/results.json is missing"):
        ship_rule.judge(tmp_path, "cand", "shipped")
    _write_parts(tmp_path, 0, 0)
    with pytest.raises(KeyError, match="'dytr' did not drive"):
        ship_rule.judge(tmp_path, "cand", "dytr")


def test_judge_refuses_a_part_with_other_laps(tmp_path):
    """A stale or partial results.json (another lap count) is refused, not judged."""
    _write_parts(tmp_path, 0, 0)
    path = tmp_path / "towns" / "results.json"
    runs = json.loads(path.read_text())["runs"]
    path.write_text(json.dumps({"runs": runs[:-3]}))  # the last lap's three rows are missing
    with pytest.raises(ValueError, match="drove 127 laps .* the rule has 128"):
        ship_rule.judge(tmp_path, "cand", "shipped")


def test_driver_names_are_those_of_s3_evaluate(tmp_path):
    """Shipped names stay, paths give their stem; clashing or expert-like names are refused."""
    from gym_s3.errors import ConfigError
    from policies.checkpoint import shipped_policy

    for name in ("T5", "expert"):
        for suffix in (".json", ".safetensors"):
            shutil.copy(shipped_policy("ddm").with_suffix(suffix), tmp_path / f"{name}{suffix}")
    assert ship_rule.driver_names(str(tmp_path / "T5.json"), "dytr") == ("T5", "dytr")
    assert ship_rule.driver_names(str(tmp_path / "T5"), "ddm") == ("T5", "ddm")
    with pytest.raises(ConfigError, match="both named 'dytr'"):
        ship_rule.driver_names("dytr", "dytr")
    with pytest.raises(ConfigError, match="read as the expert"):
        ship_rule.driver_names(str(tmp_path / "expert.json"), "dytr")
    with pytest.raises(ConfigError, match="no policy checkpoint"):
        ship_rule.driver_names(str(tmp_path / "missing.json"), "dytr")
