"""The scenario pool: what a car is asked to track in an episode.

* A **variant** is a path from the :class:`~gym_s3.tracks.bank.PathBank` with one surface
  layout and the friction-aware target-speed profile computed for that layout.
* A **scenario** is a variant plus a start position and the labels of the driving that follows
  it (over ``horizon_s`` seconds of the target profile).

Everything is precomputed when the pool is built, so drawing an episode is an index lookup and
thousands of cars can reset in one tensor operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor

from gym_s3.errors import ConfigError
from gym_s3.scenarios.labels import LABELS, LabelThresholds, label_mask, label_windows
from gym_s3.tracks.bank import Location, PathBank
from gym_s3.tracks.path import ReferencePath
from gym_s3.tracks.speed_profile import SpeedProfileConfig, speed_profile
from gym_s3.tracks.surfaces import SurfaceBatch, SurfaceLayout, friction_along


@dataclass(frozen=True)
class PoolConfig:
    """How scenarios are cut from variants.

    Attributes:
        start_spacing_m: distance between candidate start positions along a path [m].
        end_margin_m: on open routes, no start closer than this to the end [m].
        horizon_s: duration of target-profile driving used to label a scenario [s].
        speed: target-speed profile limits.
        urban_v_max: top target speed on paths labelled ``town`` [m/s] (50 km/h).
        thresholds: label thresholds.
    """

    start_spacing_m: float = 25.0
    end_margin_m: float = 100.0
    horizon_s: float = 8.0
    speed: SpeedProfileConfig = field(default_factory=SpeedProfileConfig)
    urban_v_max: float = 13.9
    thresholds: LabelThresholds = field(default_factory=LabelThresholds)

    def __post_init__(self) -> None:
        if self.start_spacing_m <= 0 or self.horizon_s <= 0:
            raise ConfigError("start_spacing_m and horizon_s must be positive")
        if self.urban_v_max <= 0:
            raise ConfigError(f"urban_v_max must be positive, got {self.urban_v_max}")

    def speed_for(self, path: ReferencePath) -> SpeedProfileConfig:
        """Speed-profile limits of ``path``: town streets are capped at ``urban_v_max``."""
        if "town" in path.labels and self.urban_v_max < self.speed.v_max:
            return replace(
                self.speed, v_max=self.urban_v_max, v_min=min(self.speed.v_min, self.urban_v_max)
            )
        return self.speed


@dataclass(frozen=True, eq=False)
class ScenarioPool:
    """Precomputed variants and scenarios on one device.

    Attributes:
        bank: the paths.
        layouts: the V surface layouts, one per variant.
        surfaces: the same layouts as a :class:`SurfaceBatch` of V rows.
        variant_path: ``(V,)`` int64 path of each variant.
        speed: ``(V, M)`` target speed at each sample of the variant's path [m/s].
        scenario_variant: ``(S,)`` int64 variant of each scenario.
        scenario_start: ``(S,)`` start arc length [m].
        scenario_labels: ``(S,)`` int64 label bitmask over :data:`LABELS`.
        elapsed: ``(V, M)`` time to reach each sample from the path's first sample when driving
            the variant's target speeds [s] (the reference time, see :meth:`route_time`).
        pass_time: ``(V,)`` time of one pass along the path at the target speeds [s] (a loop
            includes its closing segment).
    """

    bank: PathBank
    layouts: tuple[SurfaceLayout, ...]
    surfaces: SurfaceBatch
    variant_path: Tensor
    speed: Tensor
    scenario_variant: Tensor
    scenario_start: Tensor
    scenario_labels: Tensor
    elapsed: Tensor
    pass_time: Tensor

    # ------------------------------------------------------------------ construction
    @staticmethod
    def build(
        paths: Sequence[ReferencePath],
        layouts: Sequence[Sequence[SurfaceLayout]],
        config: PoolConfig = PoolConfig(),
        *,
        starts: Sequence[Sequence[float]] | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        max_patches: int | None = None,
        speeds: Sequence[np.ndarray | Tensor | None] | None = None,
    ) -> ScenarioPool:
        """Build a pool.

        Args:
            paths: the K reference paths.
            layouts: for each path, the surface layouts of its variants (at least one).
            config: start spacing, label horizon, speed limits.
            starts: optional explicit start positions per path [m] (default: every
                ``start_spacing_m``).
            device: device of the pool tensors.
            dtype: float dtype of the pool tensors.
            max_patches: pad the surface batch to this many patches (default: the most used).
            speeds: optional explicit target speeds per path, ``(M_k,)`` at its samples [m/s]
                (e.g. what an expert drove, :mod:`gym_s3.scenarios.expert`); ``None`` entries
                use the friction-aware speed profile.
        """
        if len(paths) != len(layouts):
            raise ConfigError("ScenarioPool.build needs one list of layouts per path")
        explicit = list(speeds) if speeds is not None else [None] * len(paths)
        if len(explicit) != len(paths):
            raise ConfigError("ScenarioPool.build needs one speeds entry (or None) per path")
        bank = PathBank.from_paths(paths, device=device, dtype=dtype)
        m = bank.xyz.shape[1]
        flat_layouts: list[SurfaceLayout] = []
        variant_path: list[int] = []
        speeds: list[Tensor] = []
        for k, (path, lays) in enumerate(zip(paths, layouts, strict=True)):
            if not lays:
                raise ConfigError(f"path '{path.name}' has no surface layout")
            batch = SurfaceBatch.stack(list(lays), dtype=torch.float64)
            given = explicit[k]
            if given is not None:
                v = torch.as_tensor(given, dtype=torch.float64).reshape(1, -1)
                if v.shape[1] != path.num_samples:
                    raise ConfigError(
                        f"speeds of path '{path.name}' have {v.shape[1]} values for "
                        f"{path.num_samples} samples"
                    )
                v = v.expand(len(lays), -1)
            else:
                mu = friction_along(path, batch)
                v = speed_profile(path, mu, config.speed_for(path))  # (L, M_k)
            pad = m - v.shape[1]
            if pad:
                v = torch.cat([v, v[:, -1:].expand(-1, pad)], dim=1)
            speeds.append(v)
            flat_layouts += list(lays)
            variant_path += [k] * len(lays)
        speed = torch.cat(speeds)
        elapsed, pass_time = _reference_times(speed, bank, torch.tensor(variant_path))
        speed = speed.to(device=device, dtype=dtype)
        surfaces = SurfaceBatch.stack(
            flat_layouts, max_patches=max_patches, device=device, dtype=dtype
        )
        vpath = torch.tensor(variant_path, device=device)
        s_var, s_start = _cut_scenarios(paths, vpath.cpu(), config, starts)
        pool = ScenarioPool(
            bank=bank,
            layouts=tuple(flat_layouts),
            surfaces=surfaces,
            variant_path=vpath,
            speed=speed,
            scenario_variant=s_var.to(device),
            scenario_start=s_start.to(device=device, dtype=dtype),
            scenario_labels=torch.zeros(len(s_var), dtype=torch.int64, device=device),
            elapsed=elapsed.to(device=device, dtype=dtype),
            pass_time=pass_time.to(device=device, dtype=dtype),
        )
        labels = pool._label_scenarios(paths, config)
        return ScenarioPool(**{**pool.__dict__, "scenario_labels": labels})

    # ------------------------------------------------------------------ queries
    @property
    def num_scenarios(self) -> int:
        """Number of scenarios S."""
        return int(self.scenario_variant.shape[0])

    @property
    def num_variants(self) -> int:
        """Number of variants V."""
        return int(self.variant_path.shape[0])

    def target_speed(self, variant: Tensor, s: Tensor, *, loc: Location | None = None) -> Tensor:
        """Target speed [m/s] of each row's variant at arc lengths ``s`` ``(N,)`` or ``(N, J)``.

        ``loc`` is ``bank.locate(variant_path[variant], s)`` when the caller has it already.
        """
        return self.bank.interpolate(self.speed, self.variant_path, variant, s, loc=loc)

    def route_time(self, variant: Tensor, start: Tensor, laps: float = 1.0) -> Tensor:
        """Reference time of each row's route at the target speeds [s] ``(N,)``.

        An open path's route runs from ``start`` [m] to its end; a loop's route is ``laps``
        passes. The time a car may take is derived from it (see ``TaskConfig.time_limit_factor``).
        """
        pid = self.variant_path[variant]
        done = self.bank.interpolate(self.elapsed, self.variant_path, variant, start)
        rest = self.pass_time[variant] - done
        return torch.where(self.bank.closed[pid], laps * self.pass_time[variant], rest)

    def filter(self, labels: Sequence[str] | None = None, *, match: str = "any") -> ScenarioPool:
        """The pool restricted to scenarios with ``any`` (or ``all``) of ``labels``.

        Raises:
            ConfigError: for unknown labels or when no scenario matches (the message lists how
                many scenarios carry each label).
        """
        if not labels:
            return self
        mask = label_mask(labels)
        if match == "any":
            keep = (self.scenario_labels & mask) != 0
        elif match == "all":
            keep = (self.scenario_labels & mask) == mask
        else:
            raise ConfigError(f"match must be 'any' or 'all', got '{match}'")
        if not bool(keep.any()):
            raise ConfigError(
                f"no scenario in the pool has {match} of the labels {list(labels)}; "
                f"scenarios per label: {self.label_counts()}"
            )
        return ScenarioPool(
            **{
                **self.__dict__,
                "scenario_variant": self.scenario_variant[keep],
                "scenario_start": self.scenario_start[keep],
                "scenario_labels": self.scenario_labels[keep],
            }
        )

    def label_counts(self) -> dict[str, int]:
        """Number of scenarios carrying each label."""
        return {name: int(((self.scenario_labels >> i) & 1).sum()) for i, name in enumerate(LABELS)}

    def sample(self, n: int, generator: torch.Generator) -> Tensor:
        """``n`` scenario ids drawn uniformly (``(n,)`` int64 on the pool device)."""
        ids = torch.randint(0, self.num_scenarios, (n,), generator=generator, device="cpu")
        return ids.to(self.scenario_variant.device)

    # ------------------------------------------------------------------ labelling
    def _variant_tables(self, paths: Sequence[ReferencePath]) -> dict[str, Tensor]:
        """Per-variant ``(V, M)`` sample tables the labeller reads.

        Speed, acceleration, curvature, friction, intersection flag and the time to the next
        sample, at every sample of the variant's path.
        """
        pid = self.variant_path
        ds = self.bank.ds[pid][:, None]
        v = self.speed
        v_next = torch.cat([v[:, 1:], v[:, -1:]], dim=1)
        xy = self.bank.xyz[pid, :, :2]
        m = self.bank.xyz.shape[1]
        s = torch.arange(m, device=v.device, dtype=v.dtype)[None, :] * ds
        inter = torch.zeros_like(v, dtype=torch.bool)
        for k, path in enumerate(paths):
            rows = (pid == k)[:, None]
            for feat in path.features:
                if feat.kind == "intersection":
                    inter |= rows & (s >= feat.s_start) & (s <= feat.s_end)
        return {
            "speed": v,
            "accel": (v_next.square() - v.square()) / (2.0 * ds),
            "curvature": self.bank.curvature[pid],
            "mu": self.surfaces.friction_at(xy),
            "intersection": inter,
            "dt": ds / v.clamp(min=0.5),
        }

    def _label_scenarios(self, paths: Sequence[ReferencePath], config: PoolConfig) -> Tensor:
        """Label every scenario from the target profile over the next ``horizon_s`` seconds.

        Windows are gathered from per-variant sample tables (no interpolation, no friction
        lookups per window), so labelling thousands of scenarios takes a fraction of a second.
        """
        tables = self._variant_tables(paths)
        steps = int(config.horizon_s * config.speed.v_max / float(self.bank.ds.min())) + 1
        offsets = torch.arange(steps, device=self.speed.device)
        out = []
        for lo in range(0, self.num_scenarios, 1024):
            var = self.scenario_variant[lo : lo + 1024]
            pid = self.variant_path[var]
            m = self.bank.num_samples[pid][:, None]
            closed = self.bank.closed[pid][:, None]
            first = torch.floor(self.scenario_start[lo : lo + 1024] / self.bank.ds[pid]).long()
            raw = first[:, None] + offsets[None, :]
            idx = torch.where(closed, torch.remainder(raw, m), raw.clamp(max=m - 1))
            rows = var[:, None].expand_as(idx)
            win = {k: t[rows, idx] for k, t in tables.items()}
            t = torch.cumsum(win["dt"], dim=1) - win["dt"]
            valid = (t <= config.horizon_s) & (closed | (raw < m))
            out.append(
                label_windows(
                    win["speed"],
                    win["accel"],
                    win["curvature"],
                    win["mu"],
                    intersection=win["intersection"],
                    valid=valid,
                    thresholds=config.thresholds,
                )  # fmt: skip
            )
        return torch.cat(out)


def _reference_times(speed: Tensor, bank: PathBank, variant_path: Tensor) -> tuple[Tensor, Tensor]:
    """``(elapsed (V, M), pass_time (V,))`` at the target speeds ``speed`` ``(V, M)`` [s].

    Constant acceleration between samples (segment time ``2 ds / (v_i + v_i+1)``); samples past
    the end of a shorter path (padding) add no time.
    """
    v = speed.to(torch.float64).clamp(min=1e-3)
    pid = variant_path.to(v.device)
    ds = bank.ds.to(v.device, torch.float64)[pid][:, None]
    seg = 2.0 * ds / (v[:, :-1] + v[:, 1:])  # (V, M-1): segment i -> i + 1
    m = bank.num_samples.to(v.device)[pid][:, None]
    seg = torch.where(torch.arange(1, v.shape[1], device=v.device)[None, :] < m, seg, 0.0)
    elapsed = torch.cat([torch.zeros_like(v[:, :1]), torch.cumsum(seg, dim=1)], dim=1)
    last = (m - 1).clamp(min=0)
    closing = 2.0 * ds[:, 0] / (v.gather(1, last).squeeze(1) + v[:, 0])
    total = elapsed.gather(1, last).squeeze(1)
    closed = bank.closed.to(v.device)[pid]
    return elapsed, torch.where(closed, total + closing, total)


def _cut_scenarios(
    paths: Sequence[ReferencePath],
    variant_path: Tensor,
    config: PoolConfig,
    starts: Sequence[Sequence[float]] | None,
) -> tuple[Tensor, Tensor]:
    """Scenario (variant, start) pairs: every variant times every start of its path."""
    per_path: list[list[float]] = []
    for k, path in enumerate(paths):
        if starts is not None:
            per_path.append([float(x) for x in starts[k]])
            continue
        end = path.length if path.closed else max(path.length - config.end_margin_m, 0.0)
        n = max(1, int(end // config.start_spacing_m))
        per_path.append([i * config.start_spacing_m for i in range(n)])
    variants, s0 = [], []
    for v, pid in enumerate(variant_path.tolist()):
        variants += [v] * len(per_path[pid])
        s0 += per_path[pid]
    return torch.tensor(variants, dtype=torch.int64), torch.tensor(s0, dtype=torch.float64)
