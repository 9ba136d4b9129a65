"""PPO driving policies trained in ``S3Distilled-v0`` and evaluated in ``S3BeamNG-v0``.

* :mod:`policies.networks`: observation normaliser, actor and critic networks.
* :mod:`policies.config`: training settings and per-backend presets.
* :mod:`policies.checkpoint`: policy checkpoints (safetensors + JSON) and the inference policy.
* :mod:`policies.ppo`: PPO through TorchRL (``s3 train``).
* :mod:`policies.evaluate`: evaluation in either environment (``s3 evaluate``, ``s3 scorecard``).
"""
