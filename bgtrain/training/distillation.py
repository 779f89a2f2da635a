"""Distillation: one network a phase that evaluates like a phase model's ensembles.

An ensemble (``bgtrain.model.ensembles``) of three networks a phase costs three forward passes a position.
Its own outputs are a teacher that costs one 0-ply evaluation a label, so a single network can be
trained on as many of them as self-play finds positions for: the labels are the ensemble's 0-ply
outcome probabilities (``bgtrain dataset relabel SOURCE --model ENSEMBLE --labeller ply:0``; the
evaluator's 0-ply is the ensemble's mean with the sanity clamps of ``bgtrain.outcomes``, and the
datasets hold no bear-off that the database answers), and the student is trained on them by
``bgtrain.training.supervised`` like any network, one phase at a time, starting from one of the ensemble's
members (``write_member``) so that a short training reaches the ensemble, rather than a long one
from scratch. ``bgtrain.model.combine_checkpoints`` then makes the phase model of the students.

``widen`` gives a one-hidden-layer student more hidden units without changing what it computes (the new
units have zero output weights), so a student that has stopped improving at its width continues from
where it stopped rather than from scratch (``write_widened`` writes it as a checkpoint to start from).

``deepen`` gives a student more hidden layers the same way: each new layer has identity weights and a relu
after it (the network's activation becomes "FIRST-relu"), which passes the layer before it through
unchanged, as a sigmoid's or relu's outputs are never negative; training then moves them. Given a narrower
width, the new layers and the output layer are random instead (no identity fits), and the student keeps only
its earlier layers: a cheaper second layer (512 x 128 in place of 512 x 512 a position) that training has to
bring back to where the member was, from the member's features rather than from scratch.

``agreement`` measures how closely a student follows its teacher on given positions, per phase: the
root mean square and the largest difference of their cubeless equities at 0-ply.
"""

from __future__ import annotations

from pathlib import Path

import torch

from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.loading import load_model
from bgtrain.model.network import ValueNetwork
from bgtrain.model.phases import PhaseNetwork
from bgtrain.outcomes import cubeless_equity
from engine.position_kinds import PHASE_NAMES, PHASES, position_phases


def phase_member(model: PhaseNetwork, phase: str, index: int) -> ValueNetwork:
    """Member ``index`` of ``phase``'s ensemble in ``model`` (index 0 of a phase with a single network is
    that network); a ValueError names a phase or member that is not there."""
    if phase not in PHASE_NAMES:
        raise ValueError(f"unknown phase {phase!r}; known: {', '.join(PHASE_NAMES)}")
    network = model.phases[phase]
    members = list(network.members) if isinstance(network, EnsembleNetwork) else [network]
    if not 0 <= index < len(members):
        raise ValueError(f"phase {phase!r} holds {len(members)} network(s); there is no member {index}")
    return members[index]


def write_member(model_path: str | Path, phase: str, index: int, path: str | Path, deeper: int = 0,
                 width: int = 0, seed: int = 0, wider: int = 0) -> Path:
    """Write member ``index`` of ``phase`` of the phase model at ``model_path`` as a checkpoint of its
    own at ``path`` (the start of a student: ``[supervised] init_from``): first widened to ``wider`` hidden
    units (``widen``, new units random under ``seed``) when that is above 0, then with ``deeper`` more hidden
    layers (``deepen``, ``width`` units each and random under ``seed`` when narrower) when that is above 0."""
    loaded = load_model(model_path)
    model, payload = loaded.model, loaded.payload
    if not isinstance(model, PhaseNetwork):
        raise ValueError(f"{model_path} is not a phase model")  # noqa: TRY004 (a bad file, as load_model says)
    member = phase_member(model, phase, index)
    counters = payload.get("phase_counters", {}).get(phase)
    counters = counters[index] if isinstance(counters, list) else counters
    source = {"model": str(model_path), "phase": phase, "member": index}
    config = payload["config"]
    if wider:
        member = widen(member, wider, seed)
        source["widened_to"] = wider
    if deeper:
        member = deepen(member, deeper, width, seed)
        source["deepened_by"] = deeper
        if width:
            source["deepened_width"] = width
    if wider or deeper:
        counters = None  # a new architecture: its training starts now
        if isinstance(config.get("model"), dict):
            config = {**config, "model": {**config["model"], "hidden": list(member.hidden_sizes),
                                          "activation": member.activation_name}}
    result = checkpoint_payload(member, config, payload.get("rules"), counters,
                                code_version=payload.get("code_version", "unknown"))
    result["source"] = source
    return save_checkpoint(path, result)


@torch.no_grad()
def widen(network: ValueNetwork, hidden: int, seed: int = 0) -> ValueNetwork:
    """A copy of the one-hidden-layer ``network`` with ``hidden`` units that computes the same function:
    its units are kept, each new unit gets small random input weights (scaled like the layer's own)
    and zero output weights, so it contributes nothing until training moves it."""
    if len(network.hidden_sizes) != 1:
        raise ValueError(f"widen takes a network of one hidden layer, not {list(network.hidden_sizes)}")
    old = network.hidden_sizes[0]
    if hidden <= old:
        raise ValueError(f"widen: {hidden} hidden units is not more than the network's {old}")
    wider = ValueNetwork(network.encoder.name, (hidden,), network.activation_name, network.encoder.version)
    generator = torch.Generator().manual_seed(seed)
    first, output = network.hidden_layers[0], network.output_layer
    new_first, new_output = wider.hidden_layers[0], wider.output_layer
    scale = float(first.weight.std())
    new_first.weight.copy_(torch.randn(new_first.weight.shape, generator=generator) * scale)
    new_first.weight[:old] = first.weight
    new_first.bias.zero_()
    new_first.bias[:old] = first.bias
    new_output.weight.zero_()
    new_output.weight[:, :old] = output.weight
    new_output.bias.copy_(output.bias)
    return wider


@torch.no_grad()
def deepen(network: ValueNetwork, layers: int = 1, width: int = 0, seed: int = 0) -> ValueNetwork:
    """A copy of ``network`` with ``layers`` more hidden layers after its last, each with a relu after it;
    the copy's activation is "FIRST-relu".

    At the network's last width (``width`` 0 or equal to it) the copy computes the same function: each new
    layer has identity weights and zero biases, and relu(h) = h for the outputs h >= 0 of the sigmoid or
    relu before it. At a narrower ``width`` no identity fits: the new layers and the output layer have the
    network's own random initialisation under ``seed``, the output biases are kept (the outcomes' base
    rates), and the copy keeps only the network's hidden layers."""
    first, later = network.layer_activation_names
    if layers < 1:
        raise ValueError(f"deepen: {layers} is not a number of layers to add (1 or more)")
    if first not in ("sigmoid", "relu") or (len(network.hidden_sizes) > 1 and later != "relu"):
        raise ValueError(f"deepen keeps the function of a network whose hidden outputs are never negative and whose "
                         f"later layers are relu (sigmoid, relu, sigmoid-relu), not {network.activation_name!r}")
    last = network.hidden_sizes[-1]
    if width < 0 or width > last:
        raise ValueError(f"deepen: a width of {width} units; give 0 (the network's last, {last}) or fewer than {last}")
    width = width or last
    activation = first if first == "relu" else f"{first}-relu"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        deeper = ValueNetwork(network.encoder.name, (*network.hidden_sizes, *[width] * layers), activation,
                              network.encoder.version)
    for old, new in zip(network.hidden_layers, deeper.hidden_layers):
        new.load_state_dict(old.state_dict())
    if width == last:
        for new in deeper.hidden_layers[len(network.hidden_sizes):]:
            new.weight.copy_(torch.eye(width))
            new.bias.zero_()
        deeper.output_layer.load_state_dict(network.output_layer.state_dict())
    else:
        deeper.output_layer.bias.copy_(network.output_layer.bias)
    return deeper


def write_widened(path_in: str | Path, hidden: int, path: str | Path, seed: int = 0) -> Path:
    """Write the network checkpoint at ``path_in`` widened to ``hidden`` units (``widen``) at ``path``."""
    loaded = load_model(path_in)
    if not isinstance(loaded.model, ValueNetwork):
        raise ValueError(f"{path_in} is not a single network")  # noqa: TRY004 (a bad file, as load_model says)
    payload = loaded.payload
    result = checkpoint_payload(widen(loaded.model, hidden, seed), payload["config"], payload.get("rules"), None,
                                code_version=payload.get("code_version", "unknown"))
    if isinstance(result["config"].get("model"), dict):
        result["config"]["model"] = {**result["config"]["model"], "hidden": [hidden]}
    result["source"] = {"model": str(path_in), "widened_to": hidden}
    return save_checkpoint(path, result)


@torch.no_grad()
def agreement(student, teacher, boards: torch.Tensor) -> dict[str, dict[str, float]]:
    """Per phase of ``boards`` (``int8[N, 28]``, side to move): ``{"positions", "equity_rms",
    "equity_max"}``, the differences of the two models' bare cubeless equities."""
    difference = cubeless_equity(student.evaluate(boards)) - cubeless_equity(teacher.evaluate(boards))
    phase = position_phases(boards)
    report = {}
    for kind, name in zip(PHASES, PHASE_NAMES):
        rows = difference[phase == kind].double()
        if rows.numel():
            report[name] = {"positions": int(rows.numel()), "equity_rms": float(rows.pow(2).mean().sqrt()),
                            "equity_max": float(rows.abs().max())}
    return report
