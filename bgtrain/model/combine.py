"""Phase models and ensembles from ordinary checkpoints: ``combine_checkpoints``.

Three checkpoints of single networks (for example three supervised runs, each with ``[supervised]
kinds`` set to one phase) become one ``PhaseNetwork`` checkpoint; a list of checkpoints for a phase
becomes that phase's ``EnsembleNetwork``.
"""

from __future__ import annotations

from pathlib import Path

from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.ensembles import KIND as ENSEMBLE
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.factory import PHASE_MODEL
from bgtrain.model.loading import load_model
from bgtrain.model.phases import PhaseNetwork
from engine.position_kinds import PHASE_NAMES

Sources = str | Path | list[str | Path]  # a phase's checkpoint, or several for an ensemble


def combine_checkpoints(contact: Sources, crashed: Sources, race: Sources, path: str | Path) -> Path:
    """Write a phase model checkpoint at ``path`` from checkpoints of single networks: one per phase,
    or for a phase a list of several, which become its ``EnsembleNetwork``."""
    networks, payloads, sources = {}, {}, {}
    for name, given in zip(PHASE_NAMES, (contact, crashed, race)):
        sources[name] = [str(given)] if isinstance(given, (str, Path)) else [str(source) for source in given]
        members = []
        for source in sources[name]:
            loaded = load_model(source)
            network, payload = loaded.model, loaded.payload
            kind = network.model_args().get("kind")
            if kind in (PHASE_MODEL, ENSEMBLE):
                what = "a phase model" if kind == PHASE_MODEL else "an ensemble"
                raise ValueError(f"{source} is {what} already; give single networks")
            members.append(network)
            payloads.setdefault(name, []).append(payload)
        networks[name] = members[0] if len(members) == 1 else EnsembleNetwork(members)
    model = PhaseNetwork(networks)
    every = [payload for name in PHASE_NAMES for payload in payloads[name]]
    rules = {payload.get("rules", "backgammon") for payload in every}
    if len(rules) != 1:
        raise ValueError(f"the networks were trained for different variants: {sorted(rules)}")
    # The counters are all the networks' summed; each network's own stay beside them.
    counters: dict[str, float] = {}
    for payload in every:
        for key, value in payload["counters"].items():
            counters[key] = counters.get(key, 0) + value
    payload = checkpoint_payload(model, payloads["contact"][0]["config"], rules.pop(), counters)

    def one_or_list(values: list):
        return values[0] if len(values) == 1 else values

    payload["phase_counters"] = {name: one_or_list([p["counters"] for p in payloads[name]]) for name in PHASE_NAMES}
    payload["sources"] = {name: one_or_list(sources[name]) for name in PHASE_NAMES}
    return save_checkpoint(path, payload)
