"""Values of positions and plays: what a model says a position is worth, at any depth.

Modules: ``static_value`` (the one 0-ply valuation of positions and plays: exact game ends, extra rolls,
clamps and bear-offs as named options), ``evaluator`` (``Evaluator``: probabilities, equity and ranked
plays at any ply, batched; ``check_ply``), ``bearoff`` (the one-sided bear-off database),
``bearoff_two_sided`` (exact P(win) and cubeful money equities of small bear-offs) and ``cube_action``
(the cube decision of a position, exact from the two-sided database where it can be).

The room imports ``engine``, ``bgtrain.outcomes``, ``bgtrain.files``, ``bgtrain.model`` and ``bgtrain.cube``.
"""

from __future__ import annotations

from bgtrain.values.cube_action import cube_action
from bgtrain.values.evaluator import MAX_PLY, Evaluator, check_ply

__all__ = ["MAX_PLY", "Evaluator", "check_ply", "cube_action"]
