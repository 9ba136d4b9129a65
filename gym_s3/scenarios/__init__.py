"""Scenario pools: reference paths with surface layouts, target speeds, starts and labels."""

from gym_s3.scenarios.labels import LABELS, LabelThresholds, label_mask, label_names, label_windows
from gym_s3.scenarios.pool import PoolConfig, ScenarioPool
from gym_s3.tracks.bank import PathBank

__all__ = [
    "LABELS",
    "LabelThresholds",
    "PathBank",
    "PoolConfig",
    "ScenarioPool",
    "label_mask",
    "label_names",
    "label_windows",
]
