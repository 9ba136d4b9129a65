"""Adapters that plug ``S3Distilled-v0`` into RL libraries.

* :mod:`gym_s3.adapters.torchrl`: a native TorchRL ``EnvBase`` (tensors stay on the device).
* :mod:`gym_s3.adapters.skrl`: a skrl environment wrapper (torch-native, same-step autoreset).

Each module imports its library on import; this package imports nothing heavy.
"""
