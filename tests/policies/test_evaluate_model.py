"""The batched lap runner drives exactly the laps of ``S3BeamNG-v0`` on the stand-in.

The same short laps (Putnam, asphalt and ice, each with 2 ice patches) are driven by the
scripted expert and the shipped ddm policy through the real beamngpy client and the stand-in
server, and as cars of one batch of the stand-in's vehicle model in-process. Both run the float64
eager reference physics (``fast=False``: no compilation in the default test run).

Tolerance: the physics and the task are the same code in the same dtypes; what differs is the
wire (the pose goes through yaw -> quaternion -> direction vector -> yaw, msgpack floats) and the
order of a few float32 task reductions. Measured over 150 steps: positions within 2e-8 m (float64
physics) and 5e-7 m (float32 compiled), metrics within 2e-8 (float64) and 2e-6 (float32) of
each other. The checks allow ``rel 1e-5`` / ``abs 1e-6`` (float64) and ``rel 1e-4`` / ``abs 1e-5``
(float32): far below what a different start, layout or driver changes (the swapped pairs below
differ by 1e-2 or more).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from policies.evaluate import METRICS, RunResult, evaluate_beamng
from policies.evaluate_model import MODEL_ENV, Lap, evaluate_model, lap_grid
from policies.expert_driver import EXPERT
from policies.rollouts import resolve_policy

pytest.importorskip("beamngpy")

SURFACES, PATCHES, STEPS = ("asphalt", "ice"), (2,), 40


def mismatch(a: RunResult, b: RunResult, rel: float, abs_: float) -> list[str]:
    """What differs between two runs of the same lap beyond the tolerance (empty: the same)."""
    out = (
        [f"end {a.terminated_by} vs {b.terminated_by}"]
        if a.terminated_by != b.terminated_by
        else []
    )
    for k in METRICS:
        x, y = a.metrics[k], b.metrics[k]
        if abs(x - y) > abs_ + rel * abs(x):
            out.append(f"{k}: {x:.9g} vs {y:.9g}")
    if a.trajectory.shape != b.trajectory.shape:
        out.append(f"trajectory {a.trajectory.shape} vs {b.trajectory.shape}")
    elif np.abs(a.trajectory - b.trajectory).max() > 1e3 * abs_:
        out.append(f"trajectory off by {np.abs(a.trajectory - b.trajectory).max():.3g} m")
    return out


@pytest.fixture(scope="module")
def ddm():
    """The shipped ddm policy (default observations)."""
    return resolve_policy("ddm")[1]


@pytest.fixture(scope="module")
def both(ddm):
    """``(env rows, model rows)`` of the same laps, expert and ddm, float64 physics."""
    env = evaluate_beamng(ddm, surfaces=SURFACES, ice_patches=PATCHES, max_steps=STEPS,
                          fast=False, progress=False)  # fmt: skip
    model = evaluate_model([("policy", ddm)], lap_grid(["putnam"], SURFACES, PATCHES),
                           max_steps=STEPS, fast=False, progress=False)  # fmt: skip
    return env, model


def test_batched_laps_match_the_standin_env_lap_for_lap(both):
    """Every row (lap x driver) of the batch is the env's row within the tolerance."""
    env, model = both
    assert [(r.condition, r.driver) for r in env] == [(r.condition, r.driver) for r in model]
    assert {r.driver for r in model} == {EXPERT, "policy"} and all(
        r.env == MODEL_ENV for r in model
    )
    for a, b in zip(env, model, strict=True):
        assert not mismatch(a, b, 1e-5, 1e-6), (a.describe(), a.driver, mismatch(a, b, 1e-5, 1e-6))
        assert b.metrics["steps"] == STEPS and b.terminated_by == "running"
        assert len(b.cte) == len(b.s) == len(b.speed) == len(b.target) == STEPS
        np.testing.assert_allclose(b.cte, a.cte, atol=1e-5)
        # both record the action each car was given at every step, and the same ones
        assert a.actions.shape == b.actions.shape == (STEPS, 2)
        np.testing.assert_allclose(b.actions, a.actions, atol=1e-4)
    # the expert's and the policy's actions on the same lap are told apart
    assert np.abs(model[0].actions - model[1].actions).max() > 1e-2
    # the policy rows carry their ratio to the expert of the same lap, as in the env's table
    for a, b in zip(env, model, strict=True):
        assert a.vs_expert.keys() == b.vs_expert.keys()


def test_the_tolerance_tells_laps_and_drivers_apart(both):
    """Pairing a lap with another lap's or driver's row fails the check (the test can fail)."""
    env, model = both
    asphalt_expert, asphalt_policy, ice_expert, ice_policy = model
    assert mismatch(env[0], ice_expert, 1e-5, 1e-6)  # another layout, same driver
    assert mismatch(env[2], asphalt_expert, 1e-5, 1e-6)
    assert mismatch(env[1], asphalt_expert, 1e-5, 1e-6)  # another driver, same lap
    # 0.1 % of a metric, or ten times the absolute tolerance where the metric is under 1 cm (a
    # policy that holds the line for 40 steps can have a mean cte under 1 mm)
    cte = ice_policy.metrics["cte_mean"]
    nudged = {**ice_policy.metrics, "cte_mean": cte + max(1e-3 * abs(cte), 1e-5)}
    assert mismatch(env[3], replace(ice_policy, metrics=nudged), 1e-5, 1e-6)


def test_a_car_drives_the_same_lap_whatever_else_is_in_its_batch(both, ddm):
    """Reordered laps and an extra track in the batch give every lap the same row."""
    _, model = both
    laps = [Lap("procedural:201", "snow", 0), *reversed(lap_grid(["putnam"], SURFACES, PATCHES))]
    again = evaluate_model([("policy", ddm)], laps, max_steps=STEPS, fast=False, progress=False)
    by_lap = {(repr(r.condition), r.driver): r for r in again}
    for r in model:
        assert not mismatch(r, by_lap[repr(r.condition), r.driver], 1e-6, 1e-7)
    assert {r.condition["track"] for r in again} == {"putnam", "procedural:201"}


def test_laps_with_their_own_patch_seeds_share_a_batch(both, ddm):
    """Laps that differ only in their patch seed drive in one batch as in one batch per seed."""
    _, model = both  # seed 0
    other = evaluate_model([("policy", ddm)], lap_grid(["putnam"], SURFACES, PATCHES), seed=3,
                           max_steps=STEPS, fast=False, progress=False)  # fmt: skip
    laps = [replace(lap, seed=seed) for seed in (0, 3)
            for lap in lap_grid(["putnam"], SURFACES, PATCHES)]  # fmt: skip
    joint = evaluate_model([("policy", ddm)], laps, max_steps=STEPS, fast=False, progress=False)
    assert [r.condition["seed"] for r in joint] == [0] * len(model) + [3] * len(other)
    for alone, together in zip([*model, *other], joint, strict=True):
        assert {**alone.condition, "seed": together.condition["seed"]} == together.condition
        assert not mismatch(alone, together, 1e-6, 1e-7), together.describe()
        assert together.layout == alone.layout
    assert model[0].layout != other[0].layout  # the seed moves the patches


def test_default_drivers_ride_in_a_wider_batch_and_names_must_differ(ddm):
    """The expert and default policies join the first wider mode's batch.

    The table keeps its order: the expert, the default policies, then the others.
    """
    from gym_s3.errors import ConfigError
    from policies.evaluate_model import _batches, _drivers_by_mode

    oracle = resolve_policy("oracle")[1]
    groups = _drivers_by_mode([("oracle", oracle), ("ddm", ddm)], expert=True)
    assert {m: [n for n, _ in g] for m, g in groups.items()} == {
        "default": [EXPERT, "ddm"], "oracle": ["oracle"]}  # fmt: skip
    assert {m: [n for n, _ in g] for m, g in _batches(groups).items()} == {
        "oracle": [EXPERT, "ddm", "oracle"]}  # fmt: skip
    alone = _drivers_by_mode([("ddm", ddm)], expert=True)
    assert {m: [n for n, _ in g] for m, g in _batches(alone).items()} == {
        "default": [EXPERT, "ddm"]}  # fmt: skip
    with pytest.raises(ConfigError, match="names must differ"):
        _drivers_by_mode([("ddm", ddm), ("ddm", ddm)], expert=False)


def test_a_default_policy_reads_the_same_observation_in_an_oracle_batch(both, ddm):
    """Beside an oracle policy the expert and ddm give the rows of their own default batch.

    In the one oracle-mode batch they read the oracle observation's first columns, which are the
    default observation.
    """
    from gym_s3.errors import ConfigError
    from policies.evaluate_model import run_lap_batch

    _, model = both
    oracle = resolve_policy("oracle")[1]
    mixed = evaluate_model([("oracle", oracle), ("policy", ddm)],
                           lap_grid(["putnam"], SURFACES, PATCHES), max_steps=STEPS, fast=False,
                           progress=False)  # fmt: skip
    by_lap = {(repr(r.condition), r.driver): r for r in mixed}
    for r in model:
        assert not mismatch(r, by_lap[repr(r.condition), r.driver], 1e-6, 1e-7), r.describe()
    assert [r.driver for r in mixed[:3]] == [EXPERT, "policy", "oracle"]  # the table's order
    with pytest.raises(ConfigError, match="not a prefix"):  # an oracle policy in a default batch
        run_lap_batch(
            lap_grid(["putnam"], ("asphalt",), (0,)),
            [("oracle", oracle)],
            obs_mode="default",
            seed=0,
            max_steps=1,
            time_limit_s=None,
            fast=False,
        )


@pytest.mark.slow
def test_batched_laps_match_the_fast_standin(ddm):
    """float32 physics through torch.compile on both sides (what ``s3 evaluate`` runs)."""
    env = evaluate_beamng(ddm, surfaces=SURFACES, ice_patches=PATCHES, max_steps=150,
                          fast=True, progress=False)  # fmt: skip
    model = evaluate_model([("policy", ddm)], lap_grid(["putnam"], SURFACES, PATCHES),
                           max_steps=150, fast=True, progress=False)  # fmt: skip
    for a, b in zip(env, model, strict=True):
        assert not mismatch(a, b, 1e-4, 1e-5), (a.describe(), a.driver, mismatch(a, b, 1e-4, 1e-5))


@pytest.mark.slow  # ~8 s; the lap-for-lap equivalence test stays in the default run
def test_cli_drives_several_policies_tracks_and_conditions_in_the_model(tmp_path, capsys):
    """``s3 evaluate ddm oracle --simulator model --tracks ... --conditions ...``: one table."""
    import json

    from gym_s3.cli import main

    out = tmp_path / "eval"
    rc = main(["evaluate", "ddm", "oracle", "--simulator", "model", "--reference-physics",
               "--tracks", "putnam,procedural:201", "--conditions", "asphalt>ice",
               "--max-steps", "5", "--out", str(out)])  # fmt: skip
    assert rc == 0
    summary = json.loads((out / "results.json").read_text())
    runs = summary["runs"]
    assert MODEL_ENV in summary["title"] and {r["env"] for r in runs} == {MODEL_ENV}
    assert [(r["condition"]["track"], r["condition"]["surface"], r["driver"]) for r in runs] == [
        (t, s, d) for t in ("putnam", "procedural:201") for s in ("asphalt>ice",)
        for d in (EXPERT, "ddm", "oracle")]  # fmt: skip
    assert all(r["vs_expert"] for r in runs if r["driver"] != EXPERT)
    assert (out / "trajectory_procedural-201_asphalt-to-ice_p0_oracle.png").stat().st_size > 0
    assert MODEL_ENV in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--simulator", "model", "--env", "distilled"], "--env distilled"),
        (["--simulator", "model", "--labels", "sharp_turn"], "--labels"),
        (["--simulator", "model", "--gif-every", "5"], "--gif-every"),
        (["--simulator", "beamng", "--env", "distilled"], "--env beamng"),
        (["--simulator", "model", "--beamng"], "--beamng"),
        (["--tracks", "putnam", "--track", "procedural:3"], "not both"),
        (["--conditions", "asphalt+x"], "SURFACE+PATCHES"),
        (["--conditions", "lava"], "lava"),
    ],
)
def test_cli_refuses_what_the_model_path_does_not_take(tmp_path, capsys, extra, match):
    """Option mistakes exit with status 2 and a message naming the option."""
    from gym_s3.cli import main

    rc = main(["evaluate", "ddm", "--out", str(tmp_path / "e"), *extra])
    assert rc == 2 and match in capsys.readouterr().err
    assert not (tmp_path / "e").exists()
