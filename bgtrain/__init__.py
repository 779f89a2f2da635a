"""bgtrain: training, evaluating, benchmarking and exporting backgammon bots on the ``engine`` package.

The hall holds the pieces every room reads: ``outcomes`` (what the network predicts), ``files`` (the one
atomic writer), ``matfile`` (Jellyfish ``.mat`` records) and ``cli``. The main story is in rooms, from
the ground up:

* ``model`` (encoders, the network, ensembles, phase models, checkpoints, ``load_model``) and ``cube``
  (the doubling cube on probabilities alone);
* ``values`` (the 0-ply valuation, the evaluator's search, the bear-off databases, the cube action) and
  ``export`` (model files for other programs);
* ``arena`` (agents, duels, leagues) and ``rollout`` (batched rollouts);
* ``datasets`` (labelled positions) and ``benchmark`` (the move-error benchmark);
* ``training`` (TD and supervised training);
* ``distributed`` (the executor seam and Ray) and ``web`` (``bgtrain play``);
* ``commands`` (the command line).

A room imports only rooms below it (``tests/test_layering.py`` checks it); ``docs/architecture.md`` is the
map, with each file's job.
"""
