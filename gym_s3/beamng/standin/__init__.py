"""The open stand-in: a loopback server that speaks BeamNG's protocol over our vehicle simulator.

* :mod:`~gym_s3.beamng.standin.server` and :mod:`~gym_s3.beamng.standin.sockets`: the TCP server
  (frame deadlines, connection and buffer caps) and its request dispatch;
* :mod:`~gym_s3.beamng.standin.handlers`, :mod:`~gym_s3.beamng.standin.vehicle_handlers`,
  :mod:`~gym_s3.beamng.standin.requests`: one function per BeamNG request type;
* :mod:`~gym_s3.beamng.standin.world`, :mod:`~gym_s3.beamng.standin.fleet`,
  :mod:`~gym_s3.beamng.standin.ground`, :mod:`~gym_s3.beamng.standin.terrain`: the simulated world
  (vehicles batched in the reference vehicle model, per-wheel friction, ground height);
* :mod:`~gym_s3.beamng.standin.sensors`: sensor payloads in BeamNG's raw shapes;
* :mod:`~gym_s3.beamng.standin.coverage`: what it models of a scenario, and warnings for the rest;
* :mod:`~gym_s3.beamng.standin.cli`: ``s3 standin``.
"""
