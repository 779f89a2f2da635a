"""The move-error benchmark: how much equity an agent's checker plays lose, per kind of position.

``decisions`` (the data: positions, rolls, candidate plays and their equity losses; the shipped set and
its manifest), ``scorer`` (error rates of agents with 95% intervals, paired differences), ``bm_format``
(GNU Backgammon's ``.bm`` benchmark files), ``sampling`` and ``labelling`` (how the shipped set is
built: positions from noisy self-play, equity losses from GNU Backgammon's 2-ply evaluation).
"""
