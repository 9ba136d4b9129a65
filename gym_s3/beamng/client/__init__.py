"""Client side of a simulator that speaks BeamNG's protocol (:class:`.link.SimLink`).

The link drives one car through the real ``beamngpy`` client, whether the other end is
BeamNG.tech or the open stand-in (:mod:`gym_s3.beamng.standin`); which one it is comes from the
server's greeting, never from a flag.
"""
