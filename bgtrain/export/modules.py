"""The modules that are exported: the network behind a first layer computed in the graph."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from bgtrain.export.graph import GraphEncoder, graph_extra_units
from bgtrain.model.encoding import (
    COUNT_VALUES,
    MAX_CHECKERS,
    FirstLayerTable,
)
from bgtrain.model.export_format import FIRST_LAYERS
from bgtrain.model.network import ACTIVATIONS, ValueNetwork
from bgtrain.model.phases import pick_by_phase
from bgtrain.outcomes import cubeless_equity
from engine.board import (
    BOARD_WIDTH,
)
from engine.position_kinds import PHASE_NAMES, position_phases
from engine.rules import STANDARD, Rules

# ---------------------------------------------------------------------------------------------------
# The exported modules.


class _Head(nn.Module):
    """Everything after the first layer's pre-activation: -> (probabilities [B, 5], equity [B])."""

    def __init__(self, network: ValueNetwork, rules: Rules):
        super().__init__()
        self.rules = rules  # how the outcome slots are valued (``bgtrain.outcomes.point_weights``)
        self.first_activation, self.later_activation = (ACTIVATIONS[name] for name in network.layer_activation_names)
        self.layers = copy.deepcopy(network.hidden_layers[1:])
        self.output_layer = copy.deepcopy(network.output_layer)

    def forward(self, first_pre_activation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.first_activation(first_pre_activation)
        for layer in self.layers:
            hidden = self.later_activation(layer(hidden))
        probabilities = torch.sigmoid(self.output_layer(hidden))
        return probabilities, cubeless_equity(probabilities, self.rules)


class _TableLayer(nn.Module):
    """The first layer as summed table rows (``FirstLayerTable``), over single columns or column pairs."""

    def __init__(self, network: ValueNetwork, rules: Rules, pairs: bool, embedding_bag: bool):
        super().__init__()
        first = network.hidden_layers[0]
        # Built in float64 and rounded once: each row is then the float32 nearest to its exact value.
        wide = copy.deepcopy(first).to(torch.float64)
        with torch.no_grad():
            folded = FirstLayerTable(network.encoder, wide, rules)
        table = folded.table
        columns = torch.arange(BOARD_WIDTH, dtype=torch.int32)
        if pairs:
            # Row (i, u, v) holds column 2i at count u - 15 plus column 2i + 1 at count v - 15.
            rows = table.reshape(BOARD_WIDTH, COUNT_VALUES, -1)
            table = (rows[0::2, :, None, :] + rows[1::2, None, :, :]).reshape(BOARD_WIDTH // 2 * COUNT_VALUES**2, -1)
            # Row index = 31 * count(2i) + count(2i + 1) + offset(i), as one small float matrix product
            # (measured faster in onnxruntime than int32 slicing); exact, as every value is below 2 ** 24.
            index_weights = torch.zeros(BOARD_WIDTH, BOARD_WIDTH // 2)
            index_weights[columns[0::2], columns[0::2] // 2] = float(COUNT_VALUES)
            index_weights[columns[1::2], columns[1::2] // 2] = 1.0
            self.register_buffer("index_weights", index_weights)
            pair = torch.arange(BOARD_WIDTH // 2)
            offsets = pair * COUNT_VALUES**2 + MAX_CHECKERS * COUNT_VALUES + MAX_CHECKERS
            self.register_buffer("offsets", offsets.to(torch.float32))
        else:
            self.register_buffer("offsets", columns * COUNT_VALUES + MAX_CHECKERS)
        self.pairs = pairs
        self.embedding_bag = embedding_bag
        self.register_buffer("table", table.to(torch.float32).contiguous())
        self.extra_units = graph_extra_units(network.encoder, rules)
        self.register_buffer("extra_weight", folded.extra_weight.to(torch.float32).contiguous())

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        if self.pairs:
            rows = (board.to(torch.float32) @ self.index_weights + self.offsets).to(torch.int64)
        else:
            rows = board.to(torch.int32) + self.offsets
        if self.embedding_bag:
            hidden = F.embedding_bag(rows, self.table, mode="sum")
        else:
            hidden = self.table[rows].sum(1)
        if self.extra_units is not None:
            hidden = hidden + self.extra_units(board) @ self.extra_weight
        return hidden


class _EncodeLayer(nn.Module):
    def __init__(self, network: ValueNetwork, rules: Rules):
        super().__init__()
        self.encoder = GraphEncoder(network.encoder, rules)
        self.linear = copy.deepcopy(network.hidden_layers[0])

    def forward(self, board: torch.Tensor) -> torch.Tensor:
        return self.linear(self.encoder(board))


class BoardModel(nn.Module):
    """``board: int8[B, 28]`` -> ``(probabilities: float32[B, 5], equity: float32[B])``."""

    def __init__(self, network: ValueNetwork, rules: Rules = STANDARD, first_layer: str = "pairs",
                 embedding_bag: bool = False):
        super().__init__()
        if first_layer not in FIRST_LAYERS:
            raise ValueError(f"first layer {first_layer!r} unknown; known: {', '.join(FIRST_LAYERS)}")
        if first_layer == "encode":
            self.first = _EncodeLayer(network, rules)
        else:
            self.first = _TableLayer(network, rules, pairs=first_layer == "pairs", embedding_bag=embedding_bag)
        self.head = _Head(network, rules)

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.first(board))


class PhaseBoardModel(nn.Module):
    """A ``bgtrain.model.phases.PhaseNetwork`` as one graph: every phase's ``BoardModel`` on every row, each row's
    outputs picked by ``torch.where`` on ``position_phases`` (the function the PyTorch model routes by)."""

    def __init__(self, network, rules: Rules = STANDARD, first_layer: str = "pairs", embedding_bag: bool = False):
        super().__init__()
        self.models = nn.ModuleList(board_model(network.phases[name], rules, first_layer, embedding_bag)
                                    for name in PHASE_NAMES)

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        phase = position_phases(board)
        outputs = [model(board) for model in self.models]
        return (pick_by_phase(phase, [probabilities for probabilities, _ in outputs]),
                pick_by_phase(phase, [equity for _, equity in outputs]))


class EnsembleBoardModel(nn.Module):
    """A ``bgtrain.model.ensembles.EnsembleNetwork`` as one graph: its members' ``BoardModel``s, averaged (the
    equity too, which is linear in the probabilities)."""

    def __init__(self, network, rules: Rules = STANDARD, first_layer: str = "pairs", embedding_bag: bool = False):
        super().__init__()
        self.models = nn.ModuleList(BoardModel(member, rules, first_layer, embedding_bag) for member in network.members)

    def forward(self, board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probabilities, equity = self.models[0](board)
        for model in self.models[1:]:
            here, here_equity = model(board)
            probabilities, equity = probabilities + here, equity + here_equity
        return probabilities / len(self.models), equity / len(self.models)


def board_model(network, rules: Rules = STANDARD, first_layer: str = "pairs", embedding_bag: bool = False
                ) -> nn.Module:
    """The exported module of a network, an ensemble or a phase model (``board: int8[B, 28]`` ->
    ``(probabilities, equity)``)."""
    kind = network.model_args().get("kind")
    if kind == "phases":
        return PhaseBoardModel(network, rules, first_layer, embedding_bag)
    if kind == "ensemble":
        return EnsembleBoardModel(network, rules, first_layer, embedding_bag)
    return BoardModel(network, rules, first_layer, embedding_bag)


class BareModel(nn.Module):
    """``encoded: float32[B, encoder.size]`` -> ``(probabilities: float32[B, 5], equity: float32[B])``."""

    def __init__(self, network: ValueNetwork, rules: Rules = STANDARD):
        super().__init__()
        self.first = copy.deepcopy(network.hidden_layers[0])
        self.head = _Head(network, rules)

    def forward(self, encoded: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.head(self.first(encoded))
