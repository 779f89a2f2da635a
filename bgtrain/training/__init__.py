"""Training a value network: one algorithm per file on shared pieces.

``td`` (TD(lambda) self-play, top to bottom) and ``supervised`` (on labelled datasets) share ``schedule``
(the learning-rate schedules and the loss), ``strength`` (the periodic strength check and its logging)
and ``run_directory`` (the run's directory: lock, resume, checkpoints by games or epochs, pruning). The
run is configured by ``config`` and ``config_sections`` (frozen dataclasses from TOML). The choice of
method and executor is made one floor up, in ``bgtrain.commands.train.train``, so that this room never
imports the distributed self-play that builds on it.
"""
