"""Phase models and ensembles from checkpoints: ``combine_checkpoints``.

Three checkpoints of single networks (for example three supervised runs, each with ``[supervised]
kinds`` set to one phase) become one ``PhaseNetwork`` checkpoint; a list of checkpoints for a phase
becomes that phase's ``EnsembleNetwork``, or with ``average`` one network whose weights are the mean of
theirs (a weight average: networks of one shape fine-tuned from one start, such as successive steps of a
generation, lie in one basin, where their mean evaluates like a blend of them at one network's cost; the
means of unrelated networks are noise, which the shapes alone cannot tell). A phase model given for a
phase gives its own network of that phase, so a model is rebuilt with one phase replaced (``bgtrain
combine --race NEW.pt --contact OLD.pt --crashed OLD.pt``) without writing its other networks out first.
Pruning networks (``bgtrain.model.pruning``) are not carried over: they were fitted to another model's
outputs (``bgtrain prune`` fits new ones).
"""

from __future__ import annotations

import copy
from pathlib import Path

from bgtrain.model.checkpoint import checkpoint_payload, save_checkpoint
from bgtrain.model.ensembles import KIND as ENSEMBLE
from bgtrain.model.ensembles import EnsembleNetwork
from bgtrain.model.factory import PHASE_MODEL
from bgtrain.model.loading import load_model
from bgtrain.model.phases import PhaseNetwork
from engine.position_kinds import PHASE_NAMES

Sources = str | Path | list[str | Path]  # a phase's checkpoint, or several for an ensemble


def _one_or_list(values: list):
    return values[0] if len(values) == 1 else values


def _phase_network(source: str | Path, phase: str):
    """The network ``source`` gives ``phase``, its counters (a dict, or a list for an ensemble) and its
    checkpoint's payload: a single network as it is, a phase model's network of that phase."""
    loaded = load_model(source)
    network, payload = loaded.model, loaded.payload
    kind = network.model_args().get("kind")
    if kind == ENSEMBLE:
        raise ValueError(f"{source} is an ensemble already; give its members, or a phase model holding it")
    if kind != PHASE_MODEL:
        return network, payload["counters"], payload
    counters = payload.get("phase_counters", {}).get(phase, {})
    return network.phases[phase], counters, payload


def average_networks(networks: list, names: list[str]):
    """One network of the shape all ``networks`` share whose every parameter is the mean of theirs (summed
    in the order given, then divided: the same list gives the same bytes)."""
    shapes = [network.model_args() for network in networks]
    for name, shape in zip(names[1:], shapes[1:]):
        if shape != shapes[0]:
            raise ValueError(f"{name}: {shape} cannot be averaged with {names[0]}: {shapes[0]} (one shape needed)")
    states = [network.state_dict() for network in networks]
    mean = copy.deepcopy(networks[0])
    mean.load_state_dict({key: sum(state[key] for state in states) / len(states) for key in states[0]})
    return mean


def combine_checkpoints(contact: Sources, crashed: Sources, race: Sources, path: str | Path,
                        average: bool = False) -> Path:
    """Write a phase model checkpoint at ``path`` from checkpoints: for each phase one (a single network,
    or a phase model whose network of that phase is taken) or a list of single networks, which become
    its ``EnsembleNetwork``, or with ``average`` one network of their mean weights (``average_networks``)."""
    networks, counters_of, payloads, sources = {}, {}, [], {}
    for name, given in zip(PHASE_NAMES, (contact, crashed, race)):
        sources[name] = [str(given)] if isinstance(given, (str, Path)) else [str(source) for source in given]
        members, counters = [], []
        for source in sources[name]:
            network, network_counters, payload = _phase_network(source, name)
            if len(sources[name]) > 1 and isinstance(network, EnsembleNetwork):
                raise ValueError(f"{source}: its {name} network is an ensemble, which cannot be a member of another")
            members.append(network)
            counters.append(network_counters)
            payloads.append(payload)
        if len(members) == 1:
            networks[name] = members[0]
        else:
            networks[name] = average_networks(members, sources[name]) if average else EnsembleNetwork(members)
        # A phase model's ensemble phase brings its members' counters as a list already.
        counters_of[name] = _one_or_list(counters)
    model = PhaseNetwork(networks)
    rules = {payload.get("rules", "backgammon") for payload in payloads}
    if len(rules) != 1:
        raise ValueError(f"the networks were trained for different variants: {sorted(rules)}")
    # The counters are all the networks' summed; each network's own stay beside them.
    total: dict[str, float] = {}
    for name in PHASE_NAMES:
        each = counters_of[name] if isinstance(counters_of[name], list) else [counters_of[name]]
        for counters in each:
            for key, value in counters.items():
                total[key] = total.get(key, 0) + value
    payload = checkpoint_payload(model, payloads[0]["config"], rules.pop(), total)
    payload["phase_counters"] = counters_of
    payload["sources"] = {name: _one_or_list(sources[name]) for name in PHASE_NAMES}
    if average:
        payload["averaged"] = [name for name in PHASE_NAMES if len(sources[name]) > 1]
    return save_checkpoint(path, payload)
