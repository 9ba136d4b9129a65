"""The open high-fidelity reference vehicle (the BeamNG stand-in's physics).

A batched double-track car with combined-slip Magic-Formula tyres, per-wheel friction read from the
surface layout, quasi-static load transfer, wheel spin, front-wheel drive with torque and power
limits, brakes with ABS, drag, rolling resistance and actuator lags, stepped at 1 kHz inside 20 Hz
control steps. It is the source the distilled models learn from and the simulator policies are
validated in.

Example:
    >>> import torch
    >>> from gym_s3.tracks.friction import UniformFriction
    >>> from gym_s3.vehicle import VehicleModel
    >>> model = VehicleModel()
    >>> state = model.initial_state(x=torch.zeros(8), y=0.0, yaw=0.0, speed=10.0)
    >>> controls = torch.tensor([[0.0, 0.5, 0.0]]).expand(8, 3)  # straight, half throttle
    >>> state = model.step(state, controls, UniformFriction(1.0))
"""

from gym_s3.vehicle.controls import controls_from_action
from gym_s3.vehicle.model import HeightFn, VehicleModel, WheelForces
from gym_s3.vehicle.params import GRAVITY, SEDAN, VehicleParams
from gym_s3.vehicle.state import VehicleState

__all__ = [
    "GRAVITY",
    "SEDAN",
    "HeightFn",
    "VehicleModel",
    "VehicleParams",
    "VehicleState",
    "WheelForces",
    "controls_from_action",
]
