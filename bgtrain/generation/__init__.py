"""A whole generation from one plan: self-play positions, selection, labels, one supervised training a
phase, the combined model, the benchmark, head-to-head games and the lineage file, every stage resumable.

``config`` reads the plan (``configs/generation/*.toml``), ``stages`` turns it into the ordinary commands,
``state`` records what finished in the generation's directory, ``runner`` runs what is left and
``lineage`` writes the record a shipped model keeps; ``scripts/generation.py`` is the command.
"""
