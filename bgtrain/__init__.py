"""bgtrain: training, evaluating, benchmarking and exporting backgammon bots on the ``engine`` package.

The main story is flat: ``outcomes`` (what the network predicts), ``encoding`` (its inputs),
``network``, ``checkpoint``, ``config``, ``train`` (TD(lambda) self-play), ``evaluator`` (any-ply
evaluation), ``bearoff`` and ``bearoff_two_sided`` (exact bear-offs) and ``cli``. The rest sits in
rooms: ``cube`` (the doubling cube), ``arena`` (agents, duels, leagues, records), ``export`` (model
files for other programs) and ``commands`` (the command line). ``docs/architecture.md`` is the map:
each file's job and what may import what.
"""
