"""``tools/lap_agreement.py``: how each lap ends in two environments, per policy."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(_TOOLS))
_SPEC = importlib.util.spec_from_file_location("lap_agreement", _TOOLS / "lap_agreement.py")
lap_agreement = importlib.util.module_from_spec(_SPEC)
sys.modules["lap_agreement"] = lap_agreement  # dataclasses look their module up
_SPEC.loader.exec_module(lap_agreement)


def _lap(driver, track, end="completed", cte=0.05):
    """One ``results.json`` row on ice; the expert's mean error is 0.05 m."""
    return {
        "driver": driver,
        "condition": {"track": track, "surface": "ice", "ice_patches": 0},
        "terminated_by": end,
        "metrics": {"cte_mean": cte, "cte_max": 0.3,
                    "completion": 1.0 if end == "completed" else 0.5},
        "vs_expert": None if driver == "expert" else {"cte_mean": cte / 0.05, "lap_time": 1.0},
    }  # fmt: skip


def test_counts_agreement_and_the_direction_of_each_disagreement():
    """The first env passing a lap the second fails is optimistic; the reverse pessimistic."""
    first = [_lap("expert", f"town:{i}") for i in range(4)] + [
        _lap("p", "town:0"),  # both pass
        _lap("p", "town:1"),  # first passes, second off the road: optimistic end and strict
        _lap("p", "town:2", cte=0.1),  # first completes loosely, second passes: pessimistic strict
        _lap("p", "town:3", end="stalled"),  # both fail to finish
        _lap("q", "town:0"),
    ]
    second = [
        _lap("p", "town:0"), _lap("p", "town:1", end="off_track"), _lap("p", "town:2"),
        _lap("p", "town:3", end="off_track"), _lap("expert", "town:0"), _lap("r", "town:0"),
    ]  # fmt: skip
    got = lap_agreement.agree(first, second)
    assert set(got) == {"p"}  # q and r drove in one table only
    p = got["p"]
    assert (p.laps, p.completed, p.strict) == (4, (3, 2), (2, 2))
    assert (p.same_end, p.same_strict) == (3, 2)
    assert [kind for kind, _ in p.optimistic] == ["end", "strict"]
    assert [x.split(":")[1] for _, x in p.optimistic] == ["1 ice (end)", "1 ice (strict)"]
    assert "second off_track at 50 %" in p.optimistic[0][1]
    assert len(p.pessimistic) == 1 and p.pessimistic[0][1].startswith("town:2 ice (strict)")
    text = lap_agreement.report(got)
    assert "| p | 4 | 3 / 2 | 2 / 2 | 3 | 2 | 1, 1 | 0, 1 |" in text


def test_tables_without_a_shared_lap_or_with_a_lap_twice_are_refused(tmp_path, capsys):
    """Disjoint tables say which policies each holds; a duplicated lap is not counted.

    A completed lap without the expert's ratios (a table driven with ``--no-expert``, or a
    distilled table whose expert drove another backend) is refused: counted as failed, it would
    read as a real miss.
    """
    with pytest.raises(KeyError, match="no policy drove the same lap"):
        lap_agreement.agree([_lap("p", "town:0")], [_lap("p", "town:1")])
    bare = {**_lap("p", "town:0"), "vs_expert": None, "env": "S3Distilled-v0/trans"}
    with pytest.raises(ValueError, match="'p' on town:0 ice in S3Distilled-v0/trans has no ratio"):
        lap_agreement.agree([bare], [_lap("p", "town:0")])
    (tmp_path / "bare.json").write_text(json.dumps({"runs": [bare]}))
    with pytest.raises(SystemExit):
        lap_agreement.main(["--first", str(tmp_path / "bare.json"), "--second",
                            str(tmp_path / "bare.json")])  # fmt: skip
    assert "has no ratio to the expert" in capsys.readouterr().err
    with pytest.raises(ValueError, match="twice"):
        lap_agreement.agree([_lap("p", "town:0")] * 2, [_lap("p", "town:0")])
    for name, rows in (("a", [_lap("p", "town:0")]), ("b", [_lap("p", "town:0", end="stalled")])):
        (tmp_path / f"{name}.json").write_text(json.dumps({"runs": rows}))
    out = tmp_path / "agree.md"
    assert lap_agreement.main(["--first", str(tmp_path / "a.json"), "--second",
                               str(tmp_path / "b.json"), "--out", str(out)]) == 0  # fmt: skip
    assert "| p | 1 | 1 / 0 |" in capsys.readouterr().out and out.is_file()
