"""The work units: plain seeded functions of their inputs, run by any executor.

``DUEL_CHUNK``: a chunk of seat-swapped pairs of a cubeless money duel. Context: the agents' recipes
(``agent_recipe``: a checkpoint's weights as numpy arrays, an ONNX export's bytes, or the spec itself
for pubeval, random and GNU Backgammon), the variant, and the bear-off databases' bytes when a model
plays. Task: which two agents, the dice seed, the pairs
``first_pair .. first_pair + pairs - 1`` and the agents' seeds. The dice of pair i are
``engine.keyed_dice.KeyedMirroredDice``'s stream i, a function of ``(seed, i)`` alone, so the split
into chunks changes no game of deterministic agents; a random agent draws its choices from a
generator seeded by (its seed, the chunk's first pair), so its games depend on the chunk size too (a
fixed part of the job) but not on where or when a chunk runs. Result: A's points in each pair's two
games, ``first`` (A in seat 0) and ``second`` (A in seat 1), ``int8[pairs]`` each.

``SELFPLAY_SHARD``: a shard of self-play games for TD training. Context: the network's architecture,
its weights as numpy arrays and their version, and the self-play settings. Task: a seed, the game
slots and the turns to record. The unit plays ``slots`` games in lock step exactly as the
single-process learner does (``bgtrain.training.td.selfplay_step``: greedy by cubeless equity, restarts
in the slots), for ``turns + horizon`` turns, and returns the first ``turns`` turns' boards with their
truncated lambda-returns (``bgtrain.training.td.lambda_returns`` over a horizon of ``horizon`` turns, the
learner's ``buffer_turns``), computed with the weights it was given: ``boards int8[N, 28]``,
``targets float32[N, 5]``, ``games`` (games that ended within the recorded turns) and the weights'
``version``.
"""

from __future__ import annotations

import torch

from bgtrain.arena.agents import RandomAgent
from bgtrain.arena.duel import play_pairs
from bgtrain.arena.specs import make_agent, model_spec, network_agent
from bgtrain.distributed.executor import WorkUnit
from bgtrain.distributed.payloads import (
    database_files,
    install_databases,
    model_file_recipe,
    model_from_recipe,
    network_arrays,
    network_from_arrays,
    pruning_from_recipe,
)
from bgtrain.model.network import ValueNetwork
from engine.keyed_dice import KeyedMirroredDice
from engine.variants import get_rules

# --- duels ------------------------------------------------------------------------------------------------


def agent_recipe(spec: str, rules, in_process: bool = False) -> dict:
    """What a worker needs to build the agent ``spec``: a model file (checkpoint or ONNX export, or the
    variant's shipped model) is read here, once, and travels as weights or bytes
    (``bgtrain.distributed.payloads``: no worker opens a path); any other spec (pubeval, random,
    heuristic, gnubg) is checked here, so that a mistake is reported before work is sent out, and rebuilt
    on the worker from the spec. ``in_process``: the work runs in this process, which keeps the loaded
    network itself (``model_file_recipe``)."""
    model = model_spec(spec, rules)
    if model is not None:
        variant = None if model.any_variant else rules
        return {"spec": spec.strip(), "ply": model.ply, **model_file_recipe(model.path, variant, in_process)}
    make_agent(spec, rules, "cpu")
    return {"spec": spec.strip()}


def duel_context(recipes: list[dict], variant: str) -> dict:
    """The agents' recipes and the variant; with the bear-off databases when a model plays (its agent
    uses them at every ply)."""
    models = any("ply" in recipe for recipe in recipes)
    return {"variant": variant, "agents": recipes, "databases": database_files() if models else None}


def _prepare_duel(context: dict, device: str) -> dict:
    rules = get_rules(context["variant"])
    install_databases(context.get("databases"))
    agents = []
    for recipe in context["agents"]:
        if "ply" in recipe:
            agents.append(network_agent(model_from_recipe(recipe, device), recipe["ply"], recipe["spec"], rules,
                                        pruning=pruning_from_recipe(recipe, device)))
        elif recipe["spec"].lower() == "random":
            agents.append(None)  # stateful: built afresh for every chunk from the chunk's seed
        else:
            agents.append(make_agent(recipe["spec"], rules, device))
    return {"rules": rules, "agents": agents, "device": device}


def chunk_agent(prepared: dict, index: int, agent_seed: int, first_pair: int):
    agent = prepared["agents"][index]
    if agent is None:
        return RandomAgent.for_chunk(agent_seed, first_pair, prepared["device"])
    return agent


def play_chunk(prepared: dict, task: dict, history: list | None = None) -> dict:
    """One chunk of pairs (see the module docstring); with ``history`` (in process only) its games'
    records are appended to it."""
    first_pair, pairs = task["first_pair"], task["pairs"]
    agent_a = chunk_agent(prepared, task["a"], task["seed_a"], first_pair)
    agent_b = chunk_agent(prepared, task["b"], task["seed_b"], first_pair)
    device = prepared["device"]
    dice = KeyedMirroredDice(task["seed"], first_pair, pairs, device)
    points = play_pairs(agent_a, agent_b, pairs, task["seed"], prepared["rules"], device, history, first_pair,
                        dice=dice).cpu()
    return {"first": points[:pairs].to(torch.int8).numpy(), "second": points[pairs:].to(torch.int8).numpy()}


DUEL_CHUNK = WorkUnit("duel_chunk", _prepare_duel, play_chunk)


# --- self-play shards ---------------------------------------------------------------------------------


def selfplay_context(network: ValueNetwork, version: int, config) -> dict:
    selfplay = config.selfplay
    return {
        "model": network.model_args(),
        "weights": network_arrays(network),
        "version": version,
        "variant": config.run.variant,
        "exploration_epsilon": selfplay.exploration_epsilon,
        "turn_limit": selfplay.turn_limit,
        "td_lambda": config.train.td_lambda,
        "horizon": config.train.buffer_turns,
    }


def _prepare_selfplay(context: dict, device: str) -> dict:
    from bgtrain.training.config import SelfplayConfig

    network = network_from_arrays(context["model"], context["weights"], device)
    settings = SelfplayConfig(exploration_epsilon=context["exploration_epsilon"], turn_limit=context["turn_limit"])
    return {**context, "network": network, "rules": get_rules(context["variant"]), "settings": settings,
            "device": device}


def play_selfplay_shard(prepared: dict, task: dict) -> dict:
    from bgtrain.training.td import lambda_returns, selfplay_step
    from engine.dice import RandomDice
    from engine.game import new_games

    device, rules, network = prepared["device"], prepared["rules"], prepared["network"]
    seed, slots, recorded = task["seed"], task["slots"], task["turns"]
    dice = RandomDice(seed, device)
    explore = torch.Generator(device=device).manual_seed(seed + 1)
    state = new_games(rules, slots, dice, device)
    turns, games = [], 0
    with torch.no_grad():
        for step in range(recorded + prepared["horizon"]):
            turn, state, finished = selfplay_step(network, state, rules, prepared["settings"], dice, explore)
            if step < recorded:
                games += int(finished.sum())
            turns.append(turn)
        targets = lambda_returns(turns, prepared["td_lambda"], recorded)
    boards = torch.cat([turn.board for turn in turns[:recorded]])
    return {
        "boards": boards.cpu().numpy(),
        "targets": torch.cat(targets).to(torch.float32).cpu().numpy(),
        "games": games,
        "version": prepared["version"],
    }


SELFPLAY_SHARD = WorkUnit("selfplay_shard", _prepare_selfplay, play_selfplay_shard)
