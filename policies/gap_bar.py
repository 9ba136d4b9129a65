"""How a gap report is judged: did the distilled env predict how each lap ended, and the bar.

:func:`gap_ends` compares the laps' ends on both sides; :func:`gap_bar` checks the ratios of the
laps issue #20 names (asphalt with six ice patches, snow, ice) against its band. Both read a
report of :func:`policies.gap.measure_gap` (its ``runs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def gap_ends(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Whether the distilled env predicted how each lap ended (``runs``: :func:`gap_entry` s).

    Returns:
        ``laps`` (count), ``agree`` (laps ending the same way in both), ``optimistic`` (the
        conditions the distilled env completed and the high-fidelity side did not) and
        ``pessimistic`` (the reverse), each a list of condition descriptions.
    """
    from policies.evaluate import describe_condition

    def done(side: dict[str, Any]) -> bool:
        return side["end"] == "completed"

    return {
        "laps": len(runs),
        "agree": sum(r["distilled"]["end"] == r["highfi"]["end"] for r in runs),
        "optimistic": [describe_condition(r["condition"]) for r in runs
                       if done(r["distilled"]) and not done(r["highfi"])],
        "pessimistic": [describe_condition(r["condition"]) for r in runs
                        if done(r["highfi"]) and not done(r["distilled"])],
    }  # fmt: skip


def ends_line(ends: dict[str, Any]) -> str:
    """One sentence on :func:`gap_ends`."""
    line = (f"Ends agree on {ends['agree']} of {ends['laps']} laps; the distilled env completed "
            f"{len(ends['optimistic'])} the high-fidelity side failed (optimistic) and failed "
            f"{len(ends['pessimistic'])} it completed (pessimistic).")  # fmt: skip
    if ends["optimistic"]:
        line += f" Optimistic: {', '.join(ends['optimistic'])}."
    if ends["pessimistic"]:
        line += f" Pessimistic: {', '.join(ends['pessimistic'])}."
    return line


#: Issue #20's bar: the conditions it names (surface, ice patches), the band every ratio of
#: :data:`BAR_RATIOS` must lie in, and the largest relative difference of the progress after
#: 120 s on full ice.
BAR_CONDITIONS: tuple[tuple[str, int], ...] = (("asphalt", 6), ("snow", 0), ("ice", 0))
BAR_RATIOS: tuple[str, ...] = ("cte_mean", "cte_max", "lap_time")
BAR_BAND: tuple[float, float] = (0.8, 1.25)
BAR_ICE_PROGRESS: float = 0.10


def gap_bar(report: Mapping[str, Any]) -> dict[str, Any]:
    """Which laps of ``report`` meet the gap bar, for the conditions the bar names.

    A lap (a *cell*: track and condition) meets it when the ratios of :data:`BAR_RATIOS` lie in
    :data:`BAR_BAND` (a missing ratio, e.g. the lap time of a lap one side did not complete,
    misses) and, on full ice, the progress after 120 s differs by at most
    :data:`BAR_ICE_PROGRESS` (relative).

    Returns:
        ``cells``: per named lap, ``track``, ``condition`` (text), ``within`` and ``misses``
        (``"metric ratio"`` strings); ``within``: their count; ``band``, ``ice_progress``.
    """
    from policies.evaluate import describe_condition

    lo, hi = BAR_BAND
    cells = []
    for run in report["runs"]:
        cond = run["condition"]
        if (cond.get("surface"), cond.get("ice_patches", 0)) not in BAR_CONDITIONS:
            continue
        ratio = run["ratio"]
        misses = [f"{k} {'-' if ratio[k] is None else f'{ratio[k]:.2f}'}" for k in BAR_RATIOS
                  if ratio[k] is None or not lo <= ratio[k] <= hi]  # fmt: skip
        progress = ratio["progress_120s"]
        if cond["surface"] == "ice" and (progress is None
                                         or abs(progress - 1.0) > BAR_ICE_PROGRESS):  # fmt: skip
            misses.append(f"progress_120s {'-' if progress is None else f'{progress:.2f}'}")
        cells.append({"track": cond.get("track", "putnam"), "condition": describe_condition(cond),
                      "within": not misses, "misses": misses})  # fmt: skip
    return {"cells": cells, "within": sum(c["within"] for c in cells), "band": list(BAR_BAND),
            "ice_progress": BAR_ICE_PROGRESS}  # fmt: skip


def bar_line(bar: dict[str, Any]) -> str:
    """One sentence on :func:`gap_bar`: the count and each miss."""
    lo, hi = bar["band"]
    line = (f"Gap bar (ratios of mean and max cross-track error and lap time in [{lo}, {hi}]; "
            f"progress after 120 s on ice within {bar['ice_progress']:.0%}): "
            f"{bar['within']} / {len(bar['cells'])} cells within.")  # fmt: skip
    misses = [f"{c['condition']} ({', '.join(c['misses'])})" for c in bar["cells"]
              if not c["within"]]  # fmt: skip
    return line + (f" Misses: {'; '.join(misses)}." if misses else "")
