"""The scripted expert as a teacher inside PPO (``PPOConfig.imitation``, ``s3 train --imitation``).

The policy still learns only in ``S3Distilled-v0`` and still by PPO; this adds one auxiliary
term. At every state the policy's own rollouts visit, the noise-free scripted expert (the driver
of the distillation data, :func:`policies.expert_driver.expert_controller`) says what it would do
there, reading the same cars and the same task as the env (:class:`ExpertLabels`). The actor's
deterministic action ``tanh(loc)`` is pulled towards that label by a squared error weighted by
``imitation`` (:func:`imitation_loss`), next to the clipped PPO objective. Because the labels
come from the states the policy itself reaches, including its own mistakes, this is the DAgger
idea (Ross et al., 2011) folded into PPO as a regulariser, as in DAPG (Rajeswaran et al., 2018).

Why: the strict lap bar is relative to this expert (mean cross-track error within 1.5x of its
own), the expert tracks ice at 1-3 cm in the distilled env as in the high-fidelity one, and PPO
alone tunes its mean action for its exploration noise and leaves 2-5x the expert's error on
ice (docs/experiments.md, "Ice: the policy, not the distilled model, sets the floor"). The expert
reads the friction under the wheels, which a ``default`` policy does not see; the PPO term keeps
what the label cannot teach.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor
from torchrl.data import Unbounded
from torchrl.envs import Transform

#: Key of the expert's action ``(N, 2)`` ``[steer, accel]`` in ``[-1, 1]`` in the rollouts.
EXPERT_ACTION = "expert_action"
#: Key of the grip the expert's label was computed for in the rollouts: ``(N,)`` the mean peak
#: friction under the car's four wheels [-] (1 on dry asphalt, 0.1 on ice): the layout's own
#: friction, as the expert reads it (without ``friction_noise``'s per-episode scale).
EXPERT_GRIP = "expert_grip"
#: Grip below which :func:`imitation_loss`'s grip weight stops growing [-] (half of ice's 0.1).
GRIP_FLOOR = 0.05


class ExpertLabels(Transform):
    """Write the noise-free expert's action for every car's current state as ``expert_action``.

    Beside it, ``expert_grip`` holds the ``(N,)`` mean friction under the four wheels that the
    label was computed for (what :func:`imitation_loss` weighs the pedal error by).

    After every step (the state the next action is chosen in) and every reset (the fresh cars'
    first state) the expert reads the env's cars (``core.ego()``) and task (projection,
    target speeds, friction under the wheels) and writes ``(N, 2)`` float32 labels. The expert is
    stateful (the integral of its speed controller): it advances once per env step, its state is
    cleared for the cars that start a new episode, and a partial reset leaves the other cars'
    labels and integrals as the step left them (exact because the expert is noise-free: the extra
    expert step of a partial reset would otherwise also advance the other cars' noise and events).
    Needs the CPU (the expert's generators are CPU). The labels are the expert's immediate action:
    with ``action_delay`` they do not anticipate the delay.

    Args:
        seed: seed of the expert (it draws nothing that acts when noise-free; kept for symmetry).
    """

    def __init__(self, seed: int = 0) -> None:
        super().__init__(in_keys=[], out_keys=[EXPERT_ACTION, EXPERT_GRIP])
        self.seed = int(seed)
        self._expert: Any = None
        self._label: Tensor | None = None

    @property
    def _core(self) -> Any:
        """The :class:`~gym_s3.envs.core.DistilledCore` under the transformed env."""
        return self.parent.base_env.core

    def _act(self) -> tuple[Tensor, Tensor]:
        """The expert's ``(N, 2)`` action for the cars' current state, and its grip.

        Advances the expert's integral; the grip is the ``(N,)`` mean friction under the wheels
        the action was computed for [-].
        """
        core = self._core
        ego = core.ego()
        sample = core.task.measure(ego)
        action = self._expert.act(ego, sample, core.task).to(torch.float32)
        return action, sample.mu.mean(dim=-1).to(torch.float32)

    def _write(self, out: TensorDictBase, grip: Tensor) -> TensorDictBase:
        out.set(EXPERT_ACTION, self._label.to(out.device))
        out.set(EXPERT_GRIP, grip.to(out.device))
        return out

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase
              ) -> TensorDictBase:  # fmt: skip
        self._label, grip = self._act()
        return self._write(next_tensordict, grip)

    def _reset(self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
               ) -> TensorDictBase:  # fmt: skip
        n = self._core.num_envs
        mask = None if tensordict is None else tensordict.get("_reset", None)
        if self._expert is None:  # the first reset starts every car
            from policies.expert_driver import expert_controller

            self._expert, mask = expert_controller(self.seed, n), None
        mask = torch.ones(n, dtype=torch.bool) if mask is None else mask.reshape(n).cpu()
        self._expert.reset(mask)
        kept = self._expert.integral.clone()
        fresh, grip = self._act()
        # the other cars' integrals and labels as the step left them (the grip has no memory:
        # it is the layout's friction under each car's wheels now, the same for the others)
        self._expert.integral = torch.where(mask, self._expert.integral, kept)
        old = fresh if self._label is None else self._label
        self._label = torch.where(mask[:, None], fresh, old)
        return self._write(tensordict_reset, grip)

    def transform_observation_spec(self, observation_spec):
        """The env's observation spec with the labels added.

        ``expert_action`` ``(N, 2)`` and ``expert_grip`` ``(N,)``, float32.
        """
        n, device = self._core.num_envs, observation_spec.device
        observation_spec[EXPERT_ACTION] = Unbounded(shape=(n, 2), dtype=torch.float32,
                                                    device=device)  # fmt: skip
        observation_spec[EXPERT_GRIP] = Unbounded(shape=(n,), dtype=torch.float32, device=device)
        return observation_spec


class ActorPass:
    """The ``loc`` of the PPO loss's own forward pass of the actor, kept for the imitation term.

    A forward hook on ``actor_net`` (the module the loss calls through its TensorDict wrapper)
    keeps the ``(B, 2)`` pre-squash mean of each call, with its graph, so the imitation term
    reuses the pass the clipped objective already made instead of a second forward and backward.
    Use as a context manager around the minibatch loop; :meth:`take` after each loss call.
    """

    def __init__(self, actor_net: torch.nn.Module) -> None:
        self._net = actor_net
        self._locs: list[Tensor] = []
        self._handle: Any = None

    def __enter__(self) -> ActorPass:
        self._handle = self._net.register_forward_hook(self._keep)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()

    def _keep(self, module: torch.nn.Module, args: Any, output: tuple[Tensor, Tensor]) -> None:
        self._locs.append(output[0])

    def take(self, batch: int) -> Tensor:
        """The ``(batch, 2)`` ``loc`` of the one actor pass since the last call.

        Raises:
            RuntimeError: the loss called the actor other than once on ``batch`` frames (a
                TorchRL change; the term would then pull a pass it does not belong to).
        """
        locs, self._locs = self._locs, []
        if len(locs) != 1 or locs[0].shape[0] != batch:
            raise RuntimeError(
                f"expected one actor pass on {batch} frames in the PPO loss, saw "
                f"{[tuple(t.shape) for t in locs]}"
            )
        return locs[0]


def imitation_loss(loc: Tensor, expert_action: Tensor, *, accel_weight: float = 1.0,
                   caution: float = 1.0, grip: Tensor | None = None,
                   grip_power: float = 0.0) -> Tensor:  # fmt: skip
    """Mean weighted squared distance of the actor's deterministic action from the expert's.

    With ``caution`` ``c`` above 1 the pedal error counts ``c`` times where the actor's pedal is
    above the expert's (more throttle or less brake) and once where it is below: an expectile
    (Newey and Powell, 1987) instead of a mean. Where the observation cannot tell the labels
    apart (the expert's pedals follow the friction under its wheels, which a ``default`` policy
    does not see) the actor then learns the cautious end of them, not their average; where the
    labels are consistent the minimum is still the label.

    With ``grip_power`` ``p`` above 0 the pedal error is measured against the pedal range the
    grip lets the car use: it counts ``(1 / max(mu, GRIP_FLOOR))^p`` times, ``mu`` the mean
    friction under the wheels at that state. The expert's pedals scale with the grip (its
    throttle is a share of ``mu`` and its brake at most ``1.2 mu``: about +0.05 and -0.12 on ice,
    ten times that on asphalt), so an error of 0.1 that is a small part of the range on asphalt
    is the whole of it on ice, where it decides between driving out of a corner and sliding off or
    stopping in it; an unweighted term treats the two alike. ``p = 2`` makes the error
    relative to the range (``(error / mu)^2``: 100 times on ice, 16 on snow, 1 on asphalt).
    The weight is not normalised over the batch, so it also raises the term's share of the
    (clipped) gradient by the batch mean of ``mu^-p`` (about 30 at ``p = 2`` with a third of the
    states on ice).

    Args:
        loc: ``(B, 2)`` the actor's pre-squash mean on a minibatch (its action is ``tanh(loc)``).
        expert_action: ``(B, 2)`` the expert's ``[steer, accel]`` in ``[-1, 1]`` there.
        accel_weight: weight ``w`` of the pedal axis relative to steering's 1 (0: steering only).
        caution: factor ``c`` on the pedal term where ``accel > expert_accel`` (1: symmetric).
        grip: ``(B,)`` mean friction under the wheels where each label was made [-]; needed when
            ``grip_power > 0``.
        grip_power: exponent ``p`` of the grip weight on the pedal term (0: no weight).

    Returns:
        scalar: ``mean_b [(steer - expert_steer)^2 + w c_b g_b (accel - expert_accel)^2]`` with
        the actor's action ``tanh(loc)``, ``c_b = c`` where ``accel > expert_accel`` (else 1) and
        ``g_b = max(grip_b, GRIP_FLOOR)^-p`` [action units^2].

    Raises:
        ValueError: ``grip_power > 0`` without ``grip``.
    """
    diff = torch.tanh(loc) - expert_action.to(loc.dtype)
    sq = diff.square()
    pedal = accel_weight * torch.where(diff[:, 1] > 0, caution, 1.0)
    if grip_power > 0.0:
        if grip is None:
            raise ValueError("imitation_loss with grip_power > 0 needs the labels' grip")
        pedal = pedal * grip.to(loc.dtype).reshape(-1).clamp_min(GRIP_FLOOR).pow(-grip_power)
    return (sq[:, 0] + pedal * sq[:, 1]).mean()


@torch.no_grad()
def imitation_errors(loc: Tensor, expert_action: Tensor) -> dict[str, Tensor]:
    """The unweighted mean squared error of each action axis from the expert's (diagnostics).

    Logged beside ``loss_imitation`` (which carries the pedal's weights), so runs with different
    weights compare, and a weight that helps one axis can be seen to cost the other.

    Args:
        loc: ``(B, 2)`` the actor's pre-squash mean (its action is ``tanh(loc)``).
        expert_action: ``(B, 2)`` the expert's ``[steer, accel]`` in ``[-1, 1]``.

    Returns:
        ``imitation_steer_mse`` and ``imitation_pedal_mse``: scalars [action units^2].
    """
    sq = (torch.tanh(loc) - expert_action.to(loc.dtype)).square().mean(dim=0)
    return {"imitation_steer_mse": sq[0], "imitation_pedal_mse": sq[1]}
