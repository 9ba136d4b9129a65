"""Adapters that plug ``S3Distilled-v0`` into RL libraries.

* :mod:`gym_s3.adapters.torchrl`: a native TorchRL ``EnvBase`` (tensors stay on the device).
* :mod:`gym_s3.adapters.skrl`: a skrl environment wrapper (torch-native, same-step autoreset).
* :mod:`gym_s3.adapters.sb3`: a Stable-Baselines3 ``VecEnv`` (numpy at the boundary, SB3's
  autoreset and ``terminal_observation`` conventions).

Each module imports its library on import; this package imports nothing heavy.
"""
