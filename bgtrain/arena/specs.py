"""Agents named on the command line: ``make_agent(spec, rules, device, seed) -> Agent``.

Forms of ``spec`` (:data:`SPEC_FORMS`):

``random``                   uniformly random legal plays (seeded by ``seed``);
``pubeval``                  Tesauro's pubeval;
``heuristic``                the rules of thumb written for the variant (``bgtrain.arena.heuristic``);
``PATH.pt`` / ``PATH.pt:Nply``      a bgtrain checkpoint: its evaluator's move choice (``bgtrain.values.evaluator``)
                             at 0-ply by default, N-ply search with ``:Nply``; at every ply with the
                             bear-off databases and the evaluator's clamps, as GNU Backgammon plays;
                             ``:any-variant`` last lets a model play a variant it was not trained for
                             (to measure what training for the variant adds), where its inputs fit;
``shipped`` / ``shipped:Nply``  the variant's shipped model (``bgtrain.model.shipped``), as a checkpoint;
``PATH.onnx`` / ``PATH.onnx:Nply``  an exported ONNX model (``bgtrain.model.onnx_model``), the same way;
``exact`` / ``exact:PATH``   perfect cubeless play of hypergammon1/2/3 from GNU Backgammon's database
                             (``bgtrain.arena.exact``): ``hyperN.bd`` at PATH, else the default lookup;
``gnubg:0ply|1ply|2ply``     GNU Backgammon's checker play (``bgtrain.arena.gnubg``; ``gnubg`` alone
                             is 0-ply), when ``pip install gnubg-nn`` has been run.

The agent's ``name`` is the spec as written, so a league table shows what the user typed.
Modules with optional dependencies are imported only when their form is asked for.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import torch

from bgtrain.arena.agents import Agent, GreedyValueAgent, PubevalAgent, RandomAgent
from engine.rules import STANDARD, Rules

SPEC_FORMS = (
    "random",
    "pubeval",
    "heuristic (rules of thumb for the variant)",
    "PATH.pt[:Nply][:any-variant] (a checkpoint, 0-ply by default)",
    "shipped[:Nply] (the variant's shipped model)",
    "PATH.onnx[:Nply] (an exported model)",
    "gnubg:0ply|1ply|2ply (needs `pip install gnubg-nn`)",
    "exact[:PATH] (hypergammon from GNU's hyperN.bd database)",
)

_MODEL = re.compile(r"^(?P<path>.+?\.(?P<suffix>pt|onnx))(?::(?P<ply>\d+)ply)?(?P<any>:any-variant)?$", re.IGNORECASE)
_SHIPPED = re.compile(r"^shipped(?::(?P<ply>\d+)ply)?$", re.IGNORECASE)
_GNUBG = re.compile(r"^gnubg(?::(?P<ply>\d+)ply)?$", re.IGNORECASE)
_EXACT = re.compile(r"^exact(?::(?P<path>.+))?$", re.IGNORECASE)


def _unknown(spec: str) -> ValueError:
    return ValueError(f"unknown agent {spec!r}: an agent is one of " + "; ".join(SPEC_FORMS))


def make_agent(
    spec: str,
    rules: Rules = STANDARD,
    device: torch.device | str = "cpu",
    seed: int = 0,
    bearoff: bool = True,
) -> Agent:
    """The agent ``spec`` names (see the module docstring). ``bearoff``: whether a model's agent uses the
    bear-off databases (one- and two-sided, built once into the cache on first use) and the clamps, at
    any ply; without them a 0-ply agent is the bare network, as self-play trains it. Problems are
    ValueErrors or FileNotFoundErrors with one clear line."""
    text = spec.strip()
    lowered = text.lower()
    if lowered == "random":
        return RandomAgent(seed, device)
    if lowered == "pubeval":
        return PubevalAgent(rules)
    if lowered == "heuristic":
        from bgtrain.arena.heuristic import HeuristicAgent

        return HeuristicAgent(rules)
    gnubg = _GNUBG.match(text)
    if gnubg:
        from bgtrain.arena.gnubg import GnubgAgent

        agent = GnubgAgent(int(gnubg.group("ply") or 0), rules)
        agent.name = text
        return agent
    exact = _EXACT.match(text)
    if exact:
        from bgtrain.arena.exact import ExactHypergammonAgent

        return ExactHypergammonAgent(rules, exact.group("path"), text)
    model = model_spec(text, rules)
    if model:
        return _model_agent(model, text, rules, device, bearoff)
    raise _unknown(spec)


class ModelSpec(NamedTuple):
    path: Path
    suffix: str  # "pt" or "onnx"
    ply: int
    any_variant: bool  # play whatever variant is asked, not only the one the model was trained for


def model_spec(spec: str, rules: Rules = STANDARD) -> ModelSpec | None:
    """The model file ``spec`` names (``shipped``: the shipped model of ``rules``), else None. A depth
    the evaluator cannot finish is refused here, before anything is loaded."""
    from bgtrain.model.shipped import shipped_model
    from bgtrain.values.evaluator import check_ply

    text = spec.strip()
    shipped = _SHIPPED.match(text)
    model = shipped or _MODEL.match(text)
    if not model:
        return None
    try:
        ply = check_ply(int(model.group("ply") or 0))
    except ValueError as error:
        raise ValueError(f"agent {text!r}: {error}") from None
    if shipped:
        return ModelSpec(shipped_model(rules.name), "pt", ply, False)
    return ModelSpec(Path(model.group("path")), model.group("suffix").lower(), ply, bool(model.group("any")))


def _model_agent(model: ModelSpec, name: str, rules: Rules, device, bearoff: bool) -> Agent:
    from bgtrain.model.loading import load_model

    # ``:any-variant``: no variant asked of the file, so a model plays a variant it was not trained for.
    loaded = load_model(model.path, None if model.any_variant else rules, device)
    return network_agent(loaded.model, model.ply, name, rules, bearoff, loaded.pruning)


def network_agent(model, ply: int, name: str, rules: Rules, bearoff: bool = True, pruning=None) -> Agent:
    """A model's agent (a ``ValueNetwork`` or an exported model). 0-ply: ``GreedyValueAgent``, with the
    bear-off databases and clamps when ``bearoff`` (the play of ``Evaluator.agent(0)``: a bear-off is
    played from its database, as GNU Backgammon's 0-ply plays it), else the bare model, as self-play
    trains it; N-ply: the evaluator's search, with its clamps and, when ``bearoff``, the databases, pruned
    by the model's ``pruning`` networks when it has them (``bgtrain.values.pruning``)."""
    if ply == 0:
        from bgtrain.values.bearoff_two_sided import applies_to

        if not bearoff:
            return GreedyValueAgent.from_network(model, name, rules)
        if not applies_to(rules):
            # The databases value racing to be first off under standard scoring (see Evaluator.from_network).
            return GreedyValueAgent.from_network(model, name, rules, clamps=True)
        from bgtrain.values.bearoff import load_bearoff_database
        from bgtrain.values.bearoff_two_sided import load_two_sided_database
        from bgtrain.values.static_value import model_device

        device = model_device(model)
        return GreedyValueAgent.from_network(
            model, name, rules, bearoff=load_bearoff_database(device=device),
            two_sided=load_two_sided_database(device=device), clamps=True,
        )
    from bgtrain.values.evaluator import Evaluator

    return Evaluator.from_network(model, rules, bearoff=bearoff, pruning=pruning).agent(ply, name)
