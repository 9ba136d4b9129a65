"""Distillation: train the dynamics backends on driving logs and evaluate them open-loop.

* :mod:`gym_s3.distill.train`: the training loop (all backends, the ``bicycle`` included).
* :mod:`gym_s3.distill.evaluate`: open-loop errors per backend, surface and scenario label.
* :mod:`gym_s3.distill.recipes`: the recipes that reproduce the shipped checkpoints.
* :mod:`gym_s3.distill.cli`: ``s3 distill train`` and ``s3 distill evaluate``.
"""
