"""Driving logs: versioned schema, crash-safe recorder, datasets with windows and splits.

* :mod:`gym_s3.data.schema`: columns, units and :class:`~gym_s3.data.schema.EpisodeMeta`
  (``SCHEMA_VERSION``); :mod:`gym_s3.data.files`: atomic Parquet writes, validation on read;
* :mod:`gym_s3.data.recorder`: the crash-safe ``EpisodeRecorder`` (journal + atomic Parquet) and
  ``recover`` for journals left by a killed process;
* :mod:`gym_s3.data.dataset`: ``DrivingDataset`` (validation on load, split by session, windows,
  normalisation statistics, content hash); :mod:`gym_s3.data.windows`: the window layout and
  ``NormStats``; :mod:`gym_s3.data.labelling`: scenario labels of recorded driving;
* the track-side columns (Frenet coordinates, target speed, friction and surface under each wheel)
  come from the tracking task (:meth:`gym_s3.task.TrackingTask.measure`), the same for every
  source of cars;
* :mod:`gym_s3.data.generate`: ``s3 data generate`` (the episode loop :mod:`gym_s3.loop` with the
  scripted expert and the batched simulator);
  :mod:`gym_s3.data.manifest`: claiming a dataset folder and its ``manifest.json`` (shared with
  ``s3 rollouts``); :mod:`gym_s3.data.link_rows`: the log rows of a one-car drive over the
  simulator link (``s3 collect``, ``s3 rollouts --simulator standin|beamng``);
  :mod:`gym_s3.data.summary` and :mod:`gym_s3.data.cli`: ``s3 data summary|validate|recover``.

Importing this package is cheap; the submodules load pyarrow and torch when imported.
"""
