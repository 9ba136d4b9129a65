"""Driving logs: versioned schema, crash-safe recorder, datasets with windows and splits.

* :mod:`gym_s3.data.schema`: columns, units and :class:`EpisodeMeta` (``SCHEMA_VERSION``);
* :mod:`gym_s3.data.recorder`: :class:`EpisodeRecorder` (journal + atomic Parquet) and
  :func:`recover` for journals left by a killed process;
* :mod:`gym_s3.data.dataset`: :class:`DrivingDataset` (validation on load, split by session,
  windows, normalisation statistics, content hash);
* :mod:`gym_s3.data.generate`: ``s3 data generate`` (scripted expert x batched simulator).

Importing this package is cheap; the submodules load pyarrow and torch when imported.
"""
