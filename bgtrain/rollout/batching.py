"""Batch-invariant evaluation, so that a trial's result does not depend on the trials beside it.

A matrix product's rounding depends on the shape of the call (the library picks kernels and blockings
by the number of rows): one position evaluated in a batch of 16 and in a batch of 3,000 can differ in
the last bit (measured, torch 2.13 on this CPU), and a near-tie between two plays can then go either
way. A rollout compacts its batch as games finish, and a sharded rollout runs other trials beside each
one, so the value function is called here only on blocks of one fixed size (the last one padded):
within a call of fixed shape a row's result depends on that row alone (measured: the same rows at
other offsets and beside other rows give identical bits). Trials ``[a, b)`` rolled out alone then play
exactly the games they play inside ``[0, c)``, on the same device and thread count.
"""

from __future__ import annotations

import torch

from bgtrain.outcomes import NUM_OUTCOMES
from bgtrain.values.evaluator import Evaluator

CPU_BLOCK = 2048  # rows per value-function call on a CPU: cache-sized, and little padding at the end
DEVICE_BLOCK = 32768  # on an accelerator, larger calls keep it busy


class FixedBlockValue:
    """A ``ValueFunction`` (``bgtrain.values.evaluator``) that calls ``value`` on blocks of ``block`` rows only."""

    def __init__(self, value, block: int) -> None:
        self.value = value
        self.block = block

    def evaluate(self, board: torch.Tensor) -> torch.Tensor:
        return self._in_blocks(self.value.evaluate, board)

    def evaluate_flipped(self, afterstates: torch.Tensor) -> torch.Tensor:
        return self._in_blocks(self.value.evaluate_flipped, afterstates)

    def _in_blocks(self, function, boards: torch.Tensor) -> torch.Tensor:
        count = boards.shape[0]
        if count == 0:
            return torch.empty(0, NUM_OUTCOMES, dtype=torch.float32, device=boards.device)
        padding = (-count) % self.block
        if padding:
            boards = torch.cat([boards, boards[:1].expand(padding, -1)])
        return torch.cat([function(chunk) for chunk in boards.split(self.block)])[:count]


def batch_invariant(evaluator: Evaluator, device: torch.device) -> Evaluator:
    """The same evaluator (rules, bear-off database, move filter) on a ``FixedBlockValue`` sized for
    ``device``. Its pruning networks come along on fixed blocks too, for pruned luck
    (``bgtrain.rollout.variance``); its checker play stays the exact search (``play_pruning=None``)."""
    if isinstance(evaluator.value, FixedBlockValue):
        return evaluator
    block = CPU_BLOCK if torch.device(device).type == "cpu" else DEVICE_BLOCK
    pruning = evaluator.pruning_networks
    return Evaluator(FixedBlockValue(evaluator.value, block), evaluator.rules, evaluator.bearoff,
                     evaluator.move_filter, evaluator.deep_replies,
                     pruning_networks=None if pruning is None else FixedBlockValue(pruning, block), play_pruning=None)
