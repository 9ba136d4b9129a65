"""Drivers: what maps the cars' state to actions in the episode loop (task + source + driver).

Library drivers live here: the scripted expert (:mod:`gym_s3.drivers.expert`, settings in
:mod:`gym_s3.drivers.expert_config`). Trained policies (``policies``) and human input devices
(``wheel_collector``) are drivers of the applications.
"""
