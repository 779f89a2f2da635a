"""The encoders as exportable graphs."""

from __future__ import annotations

import torch
from torch import nn

from bgtrain.model.encoding import (
    ENCODERS,
    Encoder,
    _crossings,
    _escape_table,
)
from engine.board import (
    MOVER_BAR,
    MOVER_IN_HAND,
    OPPONENT_BAR,
    OPPONENT_IN_HAND,
)
from engine.rules import STANDARD, Rules

# ---------------------------------------------------------------------------------------------------
# The encoders as exportable graphs: only ops that torch.onnx (opset 17) and TorchScript tracing keep,
# with no data-dependent control flow. Every unit is an exact small integer (or such an integer
# divided by a constant, in the same float operation as the encoder), so the results are bit-identical
# to ``Encoder.encode`` (tests/test_export.py checks it on random boards).


class GraphPointUnits(nn.Module):
    """``Tesauro198`` units: ``int8[B, 28]`` -> ``float32[B, 198]``, exactly ``encode``."""

    def __init__(self, rules: Rules):
        super().__init__()
        self.checkers = float(rules.checkers_per_side)
        # Unit k of a point holding n >= 0 own checkers: min(relu(n - k), cap_k) * scale_k, i.e. n >= 1,
        # n >= 2, n >= 3 and (n - 3) / 2 beyond 3, for integer n.
        self.register_buffer("steps", torch.tensor([0.0, 1.0, 2.0, 3.0]))
        self.register_buffer("caps", torch.tensor([1.0, 1.0, 1.0, float("inf")]))
        self.register_buffer("scales", torch.tensor([1.0, 1.0, 1.0, 0.5]))

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        points = b[:, 1:25]
        # The mover's counts on its points, then the opponent's on its own (its point j is the mover's 25 - j).
        counts = torch.cat((points, -points.flip(-1)), dim=-1)
        units = torch.minimum(torch.relu(counts.unsqueeze(-1) - self.steps), self.caps) * self.scales
        mover_on = torch.relu(b[:, 1:27]).sum(-1)
        opponent_on = torch.relu(-b[:, 0:25]).sum(-1) - b[:, OPPONENT_IN_HAND]
        others = torch.stack(
            (
                (b[:, MOVER_BAR] + b[:, MOVER_IN_HAND]) * 0.5,
                (b[:, OPPONENT_BAR] + b[:, OPPONENT_IN_HAND]) * -0.5,
                (self.checkers - mover_on) / 15.0,
                (self.checkers - opponent_on) / 15.0,
                torch.ones_like(mover_on),
                torch.zeros_like(mover_on),
            ),
            dim=-1,
        )
        return torch.cat((units.flatten(1), others), dim=-1)


class GraphPipUnits(nn.Module):
    """``TesauroPlus`` units 198, 199, the pip counts / 100: ``int8[B, 28]`` -> ``float32[B, 2]``."""

    def __init__(self):
        super().__init__()
        self.register_buffer("distance", torch.arange(1, 26, dtype=torch.float32))  # columns 1..25

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        mover = (torch.relu(b[:, 1:26]) * self.distance).sum(-1) + 25.0 * b[:, MOVER_IN_HAND]
        # The opponent's checker on the mover's point p (or its bar, column 0) needs 25 - p pips.
        opponent = (torch.relu(-b[:, 0:25]) * self.distance.flip(0)).sum(-1) - 25.0 * b[:, OPPONENT_IN_HAND]
        return torch.stack((mover, opponent), dim=-1) / 100.0


class GraphRaceUnits(nn.Module):
    """``TesauroPlus.extra_units`` (units 200..206): ``int8[B, 28]`` -> ``float32[B, 7]``, exactly.

    The encoder reads rearmost checkers off bitmasks with ``frexp`` and longest primes with a loop that
    stops when every mask is empty; here the same numbers come from reductions over the 24 points:

    * rearmost checkers: the largest point number holding the mover's checkers, the smallest holding
      the opponent's (25 / 0 when waiting to enter);
    * escape patterns: bit k is "the point k + 1 pips ahead is made by the other side"; the patterns
      of all 26 possible starting points come from one ``[24, 26]`` matrix of powers of two, and the
      starting point's column is picked by a one-hot product (sums of distinct powers of two below
      4096: exact in float32);
    * longest prime: the longest run of made points ending at p is p minus the last unmade point at or
      before p, a prefix maximum taken by doubling (5 shifted maxima cover 25 entries).
    """

    def __init__(self):
        super().__init__()
        point = torch.arange(1, 25)
        start = torch.arange(26)
        # Mover starting from b (moving down): bit k <- the opponent made point b - 1 - k.
        ahead = start[None, :] - 1 - point[:, None]
        self.register_buffer("mover_window", torch.where((ahead >= 0) & (ahead <= 11), 2.0 ** ahead.clamp(0, 11), 0.0))
        # Opponent starting from f (moving up, mover's numbering): bit j <- the mover made point f + 1 + j.
        ahead = point[:, None] - start[None, :] - 1
        self.register_buffer("opponent_window", torch.where((ahead >= 0) & (ahead <= 11), 2.0 ** ahead.clamp(0, 11), 0.0))
        self.register_buffer("starts", start.to(torch.float32))
        self.register_buffer("numbers", point.to(torch.float32))
        self.register_buffer("run_index", torch.arange(25, dtype=torch.float32))  # 0 = a never-made sentinel
        self.register_buffer("escapes", _escape_table(torch.device("cpu")).to(torch.float32))

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        b = board.to(torch.float32)
        points = b[:, 1:25]
        mover_waiting = (torch.relu(b[:, MOVER_BAR]) + torch.relu(b[:, MOVER_IN_HAND])) > 0
        opponent_waiting = (torch.relu(-b[:, OPPONENT_BAR]) + torch.relu(-b[:, OPPONENT_IN_HAND])) > 0
        mover_occupied = (points > 0).to(torch.float32)
        opponent_occupied = (points < 0).to(torch.float32)
        mover_made = (points >= 2).to(torch.float32)
        opponent_made = (points <= -2).to(torch.float32)

        # In the mover's numbering: 0 when the mover has no checker left, 25 when the opponent has none.
        mover_back = torch.where(mover_waiting, 25.0, (mover_occupied * self.numbers).amax(-1))
        opponent_front = 25.0 - (opponent_occupied * (25.0 - self.numbers)).amax(-1)
        opponent_front = torch.where(opponent_waiting, 0.0, opponent_front)

        mover_pattern = self._pick(opponent_made @ self.mover_window, mover_back)
        mover_escapes = torch.where(mover_back > 0, self.escapes[mover_pattern.to(torch.int64)], 0.0)
        opponent_pattern = self._pick(mover_made @ self.opponent_window, opponent_front)
        opponent_has_checkers = (opponent_occupied.amax(-1) > 0) | opponent_waiting
        opponent_escapes = torch.where(opponent_has_checkers, self.escapes[opponent_pattern.to(torch.int64)], 0.0)

        made = torch.stack((mover_made, opponent_made), dim=1)  # [B, 2, 24]
        unmade_index = torch.cat((torch.zeros_like(made[..., :1]), (1.0 - made) * self.numbers), dim=-1)
        last_unmade = unmade_index
        for shift in (1, 2, 4, 8, 16):
            shifted = torch.cat((torch.zeros_like(last_unmade[..., :shift]), last_unmade[..., :-shift]), dim=-1)
            last_unmade = torch.maximum(last_unmade, shifted)
        primes = (self.run_index - last_unmade).amax(-1)  # [B, 2]

        return torch.stack(
            (
                (mover_back < opponent_front).to(torch.float32),  # is_race
                mover_back / 25.0,
                (25.0 - opponent_front) / 25.0,
                mover_escapes / 36.0,
                opponent_escapes / 36.0,
                primes[:, 0] / 6.0,
                primes[:, 1] / 6.0,
            ),
            dim=-1,
        )

    def _pick(self, candidates: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """``candidates: float[B, 26]`` (one pattern per starting point), ``start: float[B]`` -> ``float[B]``."""
        return (candidates * (start.unsqueeze(-1) == self.starts)).sum(-1)


class GraphGnubgUnits(nn.Module):
    """``GnubgContact.extra_units``: ``int8[B, 28]`` -> ``float32[B, 50]``. ``bgtrain.model.gnubg_inputs`` is
    written in exportable operations only (comparisons, gathers with constant index tables, reductions,
    small matrix products, loops of fixed length), so the graph runs the encoder's own code."""

    def __init__(self, rules: Rules):
        super().__init__()
        self.checkers = rules.checkers_per_side

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        from bgtrain.model.gnubg_inputs import contact_features

        return contact_features(board, self.checkers)


class GraphCrossingUnits(nn.Module):
    """``GnubgRace`` units 200, 201, the quadrant crossings / 10: ``int8[B, 28]`` -> ``float32[B, 2]``
    (the encoder's own integer sums, which trace as they are)."""

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        mover, opponent = _crossings(board)
        return torch.stack((mover, opponent), dim=-1).to(torch.float32) / 10.0


class GraphOffUnits(nn.Module):
    """``GnubgRace.extra_units``, the one-hot borne-off counts: ``int8[B, 28]`` -> ``float32[B, 28]``
    (comparisons with a constant range: the encoder's own code)."""

    def __init__(self, rules: Rules):
        super().__init__()
        self.rules = rules

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        return ENCODERS["gnubg_race"].extra_units(board, self.rules)


def graph_extra_units(encoder: Encoder, rules: Rules | None = None) -> nn.Module | None:
    """The exportable module computing ``encoder.extra_units``; None when the encoder has none."""
    if encoder.separable_size == encoder.size:
        return None
    if encoder.name == "tesauro_plus" and encoder.version == 1:
        return GraphRaceUnits()
    if encoder.name == "gnubg_contact" and encoder.version == 1:
        return GraphGnubgUnits(rules or STANDARD)
    if encoder.name == "gnubg_race" and encoder.version == 1:
        return GraphOffUnits(rules or STANDARD)
    raise ValueError(f"encoder {encoder.name!r} version {encoder.version} has no in-graph version of its "
                     "non-separable units; export it with --bare (the network alone, on encoded inputs)")


class GraphEncoder(nn.Module):
    """``encoder.encode(board, rules)`` as an exportable graph: ``int8[B, 28]`` -> ``float32[B, size]``."""

    def __init__(self, encoder: Encoder, rules: Rules):
        super().__init__()
        if encoder.name not in ("tesauro198", "tesauro_plus", "gnubg_contact", "gnubg_race") or encoder.version != 1:
            raise ValueError(f"encoder {encoder.name!r} version {encoder.version} has no in-graph version; "
                             "export it with --bare (the network alone, on encoded inputs)")
        parts: list[nn.Module] = [GraphPointUnits(rules)]
        if encoder.name == "tesauro_plus":
            parts += [GraphPipUnits(), GraphRaceUnits()]
        if encoder.name == "gnubg_contact":
            parts.append(GraphGnubgUnits(rules))
        if encoder.name == "gnubg_race":
            parts += [GraphPipUnits(), GraphCrossingUnits(), GraphOffUnits(rules)]
        self.parts = nn.ModuleList(parts)

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        return torch.cat([part(board) for part in self.parts], dim=-1)
