"""Each scenario-label rule at its threshold: a hair above and a hair below flip the label.

Windows start as straight cruising (10 m/s, no acceleration, no curvature, friction 1) and change
one quantity to 2 % above or below a threshold of :class:`LabelThresholds`.
"""

from __future__ import annotations

import pytest
import torch

from gym_s3.scenarios import LabelThresholds, label_names, label_windows

TH = LabelThresholds()
T = 20


def _labels(**changes) -> set[str]:
    """Labels of one 20-sample window; ``changes`` maps a signal to ``(index or slice, value)``."""
    signals = {"speed": torch.full((1, T), 10.0), "accel": torch.zeros(1, T),
               "curvature": torch.zeros(1, T), "mu": torch.ones(1, T)}  # fmt: skip
    for name, (where, value) in changes.items():
        signals[name][0, where] = value
    return set(label_names(int(label_windows(**signals)[0])))


def _around(value: float) -> tuple[float, float]:
    """Values 2 % below and above ``value`` (in magnitude)."""
    return value * 0.98, value * 1.02


def test_the_base_window_is_straight_cruising_only():
    """The unchanged window is straight cruising and nothing else."""
    assert _labels() == {"straight_cruising"}


def test_hard_braking_threshold():
    """Braking harder than ``hard_brake_decel`` is hard braking; accelerating never is."""
    below, above = _around(TH.hard_brake_decel)
    assert "hard_braking" not in _labels(accel=(5, -below))
    assert "hard_braking" in _labels(accel=(5, -above))
    assert "hard_braking" not in _labels(accel=(5, above))  # accelerating hard is not braking


def test_sharp_turn_threshold_either_direction():
    """Curvature beyond ``sharp_turn_curvature`` to either side is a sharp turn."""
    below, above = _around(TH.sharp_turn_curvature)
    assert "sharp_turn" not in _labels(curvature=(slice(None), below))
    assert "sharp_turn" in _labels(curvature=(slice(None), above))
    assert "sharp_turn" in _labels(curvature=(slice(None), -above))  # a right-hander too


def test_high_speed_corner_needs_both_speed_and_lateral_acceleration():
    """Above ``high_speed`` and ``high_speed_lat_acc`` both, and only then."""
    fast = TH.high_speed * 1.02
    lat_below, lat_above = _around(TH.high_speed_lat_acc)
    curve = lambda lat: (slice(None), lat / fast**2)  # noqa: E731
    assert "high_speed_corner" not in _labels(speed=(slice(None), fast), curvature=curve(lat_below))
    assert "high_speed_corner" in _labels(speed=(slice(None), fast), curvature=curve(lat_above))
    slow = TH.high_speed * 0.98  # the same lateral acceleration just below the speed threshold
    kappa = lat_above * 1.5 / slow**2
    assert "high_speed_corner" not in _labels(speed=(slice(None), slow),
                                              curvature=(slice(None), kappa))  # fmt: skip


def test_low_friction_threshold_on_the_window_mean():
    """A mean friction below ``low_mu`` is low friction."""
    below, above = _around(TH.low_mu)
    assert "low_friction" in _labels(mu=(slice(None), below))
    assert "low_friction" not in _labels(mu=(slice(None), above))


def test_friction_transition_threshold():
    """A friction change within the window beyond ``mu_transition`` is a transition."""
    below, above = _around(TH.mu_transition)
    assert "friction_transition" not in _labels(mu=(slice(10, None), 1.0 - below))
    assert "friction_transition" in _labels(mu=(slice(10, None), 1.0 - above))


@pytest.mark.parametrize(
    ("signal", "threshold", "kept_below"),
    [
        ("curvature", TH.straight_curvature, True),
        ("accel", TH.straight_accel, True),
        ("speed", TH.cruise_speed, False),
    ],
)
def test_straight_cruising_thresholds(signal, threshold, kept_below):
    """Cruising needs a straight path, a steady speed and moving faster than ``cruise_speed``."""
    below, above = _around(threshold)
    where = slice(5, 6)  # one sample of the window is enough to break the rule
    assert ("straight_cruising" in _labels(**{signal: (where, below)})) is kept_below
    assert ("straight_cruising" in _labels(**{signal: (where, above)})) is not kept_below


def test_a_parked_car_is_not_straight_cruising():
    """Standing still on a straight road is no label at all."""
    assert _labels(speed=(slice(None), 0.0)) == set()


def _slip_labels(name: str, value: float) -> set[str]:
    """Labels of the base window with one sample of ``name`` (side or wheel slip) at ``value``."""
    slip = torch.zeros(1, T)
    slip[0, 7] = value
    signals = {"speed": torch.full((1, T), 10.0), "accel": torch.zeros(1, T),
               "curvature": torch.zeros(1, T), "mu": torch.ones(1, T), name: slip}  # fmt: skip
    return set(label_names(int(label_windows(**signals)[0])))


@pytest.mark.parametrize(
    ("signal", "label", "threshold"),
    [("side_slip", "sliding", TH.sliding_slip), ("wheel_slip", "wheel_spin", TH.wheel_spin_slip)],
)
def test_slip_thresholds(signal, label, threshold):
    """Side slip beyond ``sliding_slip`` is sliding; wheel slip beyond ``wheel_spin_slip`` spin."""
    below, above = _around(threshold)
    assert label not in _slip_labels(signal, below)
    assert label in _slip_labels(signal, above)
    assert label not in _slip_labels(signal, float("nan"))  # an unreported wheel speed


def test_standing_start_needs_a_stop_and_a_launch():
    """Below ``standstill_speed`` somewhere and accelerating beyond ``launch_accel``."""
    slow_below, slow_above = _around(TH.standstill_speed)
    acc_below, acc_above = _around(TH.launch_accel)
    assert "standing_start" in _labels(speed=(0, slow_below), accel=(3, acc_above))
    assert "standing_start" not in _labels(speed=(0, slow_above), accel=(3, acc_above))
    assert "standing_start" not in _labels(speed=(0, slow_below), accel=(3, acc_below))
    assert "standing_start" not in _labels(speed=(0, slow_below), accel=(3, -acc_above))


def test_log_rows_give_slip_inputs():
    """A log with a sideways-sliding car and a spinning wheel sets both labels, and no others."""
    from gym_s3.data.labelling import episode_labels
    from gym_s3.vehicle.params import SEDAN

    n = 40
    v = torch.full((n,), 10.0)
    cols = {"v_long": v, "v_lat": torch.zeros(n), "ax": torch.zeros(n), "yaw_rate": torch.zeros(n),
            **{f"mu_{w}": torch.ones(n) for w in ("fl", "fr", "rl", "rr")},
            **{f"omega_{w}": v / SEDAN.wheel_radius for w in ("fl", "fr", "rl", "rr")}}  # fmt: skip
    assert set(episode_labels(cols)) == {"straight_cruising"}
    cols["v_lat"] = torch.where(torch.arange(n) == 25, 1.5, 0.0)  # 0.15 side slip
    cols["omega_fl"] = torch.where(torch.arange(n) == 5, 14.0 / SEDAN.wheel_radius, v / 0.32)
    assert {"sliding", "wheel_spin"} <= set(episode_labels(cols))
