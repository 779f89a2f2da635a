"""TD(lambda) self-play training, top to bottom.

Self-play: ``games_in_parallel`` games run in lock step on the engine. Every turn, all legal
afterstates of all games are evaluated in one forward pass (``ValueNetwork.evaluate``) and each game
plays its best by cubeless equity (or, with probability ``exploration_epsilon``, a random play).
Finished and truncated games restart in their slots, so the batch stays full.

What is learned: the network V(x) predicts, for the side to move in position x (before its roll),
the five outcome probabilities of ``bgtrain.outcomes``. Successive positions of a game alternate
sides, so a prediction made from the next position is turned into this position's view with
``flip_outcomes`` before it serves as a target. A move that ends the game gives the exact outcome
(single, gammon or backgammon) as the target; a game cut at the turn limit bootstraps from the
network's value of the position it was cut at, and is never scored as a loss.

Two forms of TD(lambda), chosen by ``train.method``:

``lambda_return`` (the default, batched): the target of position x_t is the lambda-return
    G_t = flip((1 - lambda) V(x_{t+1}) + lambda G_{t+1}), cut at the game's end (the exact outcome)
    and at the end of a rolling buffer of ``buffer_turns`` turns (where G = flip(V(x_{t+1}))).
    Every ``update_every_turns`` turns, the positions whose buffer horizon is complete are trained
    towards their returns with minibatch gradient steps (Adam by default). This is the "forward
    view" of TD(lambda); with lambda ** buffer_turns small, the truncation changes little.

``eligibility_traces`` (classic, online; Sutton 1988, Tesauro 1992): after every turn each game
    slot updates w += lr * sum_k delta_k e_k, where delta = flip(V(x_{t+1})) - V(x_t) (or the exact
    outcome minus V(x_t) at the end) and the per-output trace e_k = grad V_k(x_t) + lambda * (the
    previous trace, turned into this side's view). The "backward view": the same returns in the
    limit of small steps, but one per-game gradient per output per turn, so it is several times
    slower; it uses plain SGD, and the step is averaged over the game slots.

V(x_{t+1}) is the value computed when the move was chosen, i.e. by the weights of that moment.

Variants (``[run] variant``, ``engine.variants``): a play-to-lose game ends with a negative result for
the side that bore off first; an acey-deucey play that earns an extra roll leaves the same side to
move, so its next position is not flipped (``Turn.extra_roll``). Acey-deucey's scoring by checkers
left (up to 15 points) is held in the same five outputs (``bgtrain.outcomes``), valued with the rules.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.func import functional_call, jacrev, vmap

from bgtrain.model.checkpoint import (
    checkpoint_payload,
    load_initial_weights,
    network_from_checkpoint,
    save_checkpoint,
)
from bgtrain.model.network import ValueNetwork
from bgtrain.outcomes import WIN, cubeless_equity, flip_outcomes, terminal_outcomes
from bgtrain.training import run_directory as runs
from bgtrain.training.config import Config, config_from_dict, resolve_device, to_toml_text
from bgtrain.training.schedule import loss_function, td_learning_rate
from bgtrain.training.stop_signals import StopSignals, resume_hint
from bgtrain.training.strength import evaluate_strength, log_strength, strength_text
from bgtrain.values.static_value import NetworkValue, StaticValue
from engine.dice import RandomDice
from engine.game import new_games, play, winning_points
from engine.movegen import argmax_per_position, legal_afterstates
from engine.random_play import random_choice
from engine.rules import Rules
from engine.state import State
from engine.variants import get_rules


@dataclass
class Turn:
    """One lock-step turn of every game slot (G slots)."""

    board: torch.Tensor  # int8[G, 28]: the position before the move, from its side to move
    next_value: torch.Tensor  # float[G, 5]: V(position after the move), for that position's side to move
    ended: torch.Tensor  # bool[G]: the move ended the game
    outcome: torch.Tensor  # float[G, 5]: the exact outcome for this turn's mover, where ended
    truncated: torch.Tensor  # bool[G]: the game was cut at the turn limit after this move
    extra_roll: torch.Tensor | None = None  # bool[G]: the same side moves next (acey-deucey); None: never


def selfplay_turn(
    network: ValueNetwork,
    state: State,
    rules: Rules,
    epsilon: float,
    explore: torch.Generator,
) -> tuple[Turn, torch.Tensor]:
    """Every game plays its best afterstate (one forward pass over all of them).
    Returns the turn record and the chosen afterstates ``int8[G, 28]``."""
    afterstates = legal_afterstates(state.board, state.dice, rules)
    # The mover's outcomes of every play (``bgtrain.values.static_value``: exact where the play ends the
    # game, not flipped after an extra roll), all afterstates in one forward pass.
    outcomes = StaticValue(NetworkValue(network, rules), rules, clamps=False).plays(afterstates)
    choice = argmax_per_position(cubeless_equity(outcomes, rules), afterstates)
    if epsilon > 0:
        explores = torch.rand(choice.shape[0], generator=explore, device=choice.device) < epsilon
        choice = torch.where(explores, random_choice(afterstates, explore), choice)
    flat = afterstates.offsets + choice
    chosen_points = winning_points(afterstates.boards[flat], rules)  # negative in play-to-lose
    ended = chosen_points != 0
    extra_roll = afterstates.extra_roll[flat] if rules.acey_deucey else None
    # The value of the position after the move for its side to move: the other side, or the mover
    # again after an extra roll.
    next_value = flip_outcomes(outcomes[flat])
    if extra_roll is not None:
        next_value = torch.where(extra_roll.unsqueeze(1), outcomes[flat], next_value)
    turn = Turn(
        board=state.board,
        next_value=next_value,
        ended=ended,
        outcome=terminal_outcomes(torch.where(ended, chosen_points, 1), next_value.dtype, rules),
        truncated=torch.zeros_like(ended),
        extra_roll=extra_roll,
    )
    return turn, afterstates.boards[flat]


def selfplay_step(network: ValueNetwork, state: State, rules: Rules, selfplay, dice, explore: torch.Generator):
    """One lock-step turn of every game slot: each plays its choice (``selfplay_turn``), games cut at
    ``selfplay.turn_limit`` are marked truncated, and finished games restart in their slots.
    Returns ``(turn, the next state, finished: bool[G])``."""
    turn, chosen = selfplay_turn(network, state, rules, selfplay.exploration_epsilon, explore)
    state = play(state, chosen, rules, dice, turn.extra_roll)
    truncated = ~state.game_over & (state.turn >= selfplay.turn_limit)
    turn.truncated = truncated
    finished = state.game_over | truncated
    fresh = new_games(rules, state.batch_size, dice, state.device)
    return turn, state.where(finished, fresh), finished


# The outcome flip is affine: flip(p) = A p + b with A a signed permutation. Traces are gradients
# of predictions, so they turn into the other side's view through A alone.
_FLIP_ORDER = (0, 3, 4, 1, 2)
_FLIP_SIGN = (-1.0, 1.0, 1.0, 1.0, 1.0)


def lambda_returns(turns: list[Turn], td_lambda: float, count: int | None = None) -> list[torch.Tensor]:
    """The truncated lambda-returns of the oldest ``count`` buffered turns (all by default), oldest
    first: ``float[G, 5]`` each, for that turn's side to move. The newest turn bootstraps from V of
    the position after it.

    G_t = the exact outcome if turn t ended the game; else flip_t(V_{t+1}) if the game was cut after
    turn t or t is the newest turn; else flip_t((1 - lambda) V_{t+1} + lambda G_{t+1}). flip_t turns
    the next position's view into this turn's mover's: ``flip_outcomes``, or the identity after an
    acey-deucey extra roll. Computed from the newest turn back, four tensor operations a turn (the
    lock-step hot path runs this every turn).
    """
    count = len(turns) if count is None else count
    device = turns[0].next_value.device
    # flip(p) = p[FLIP_ORDER] * FLIP_SIGN + e_WIN, as one gather and one fused multiply-add.
    order = torch.tensor(_FLIP_ORDER, device=device)
    sign = torch.tensor(_FLIP_SIGN, dtype=turns[0].next_value.dtype, device=device)
    unit = torch.zeros_like(sign)
    unit[WIN] = 1.0
    returns: list[torch.Tensor] = []
    later = None
    for turn in reversed(turns):
        ahead = turn.next_value if later is None else torch.lerp(turn.next_value, later, td_lambda)
        if later is not None:
            ahead = torch.where(turn.truncated.unsqueeze(1), turn.next_value, ahead)
        # ``ahead`` is for the next position's side to move: the other side, or after an extra roll
        # this turn's mover.
        mover_ahead = torch.addcmul(unit, ahead.index_select(1, order), sign)
        if turn.extra_roll is not None:
            mover_ahead = torch.where(turn.extra_roll.unsqueeze(1), ahead, mover_ahead)
        later = torch.where(turn.ended.unsqueeze(1), turn.outcome, mover_ahead)
        returns.append(later)
    return returns[::-1][:count]


class EligibilityTraces:
    """Per-slot, per-output eligibility traces for classic online TD(lambda)."""

    def __init__(self, network: ValueNetwork, slots: int, device: torch.device) -> None:
        self.network = network
        self.names = [name for name, _ in network.named_parameters()]
        self.traces = {
            name: torch.zeros(slots, 5, *parameter.shape, device=device)
            for name, parameter in network.named_parameters()
        }
        self.order = torch.tensor(_FLIP_ORDER, device=device)
        self.sign = torch.tensor(_FLIP_SIGN, device=device)

    def step(self, turn: Turn, td_lambda: float, learning_rate: float) -> float:
        """One online update from a turn; returns the mean absolute TD error."""
        params = {name: p.detach() for name, p in self.network.named_parameters()}

        def value(parameters, board):
            return functional_call(self.network, parameters, (board.unsqueeze(0),)).squeeze(0)

        jacobians = vmap(jacrev(value), in_dims=(None, 0))(params, turn.board)  # name -> [G, 5, *shape]
        with torch.no_grad():
            predicted = self.network(turn.board)
            target = torch.where(turn.ended.unsqueeze(1), turn.outcome, flip_outcomes(turn.next_value))
            delta = target - predicted  # [G, 5]
            done = (turn.ended | turn.truncated).to(predicted.dtype)
            for name, parameter in self.network.named_parameters():
                previous = self.traces[name]
                extra = (1,) * (previous.dim() - 2)
                # The previous turn was the other side's: its trace turns into this side's view.
                turned = previous[:, self.order] * self.sign.view(1, 5, *extra)
                trace = jacobians[name] + td_lambda * turned
                parameter.add_(learning_rate * (delta.view(-1, 5, *extra) * trace).sum(1).mean(0))
                if turn.extra_roll is not None:
                    # The next turn is this side's again after an extra roll: store the trace turned,
                    # so that turning it at the next step gives it back (the turn is an involution).
                    again = turn.extra_roll.view(-1, 1, *extra)
                    trace = torch.where(again, trace[:, self.order] * self.sign.view(1, 5, *extra), trace)
                # A trace ends with its game: the next game in the slot starts afresh.
                self.traces[name] = trace * (1 - done).view(-1, 1, *extra)
        return float(delta.abs().mean())


_TURN_FIELDS = ("board", "next_value", "ended", "outcome", "truncated", "extra_roll")


class Run:
    """A training run: its network, optimizer, self-play state, buffer and counters."""

    def __init__(self, config: Config, rules: Rules | None = None, initial_weights: bool = True) -> None:
        """A new run under ``config``; ``initial_weights=False`` leaves out ``[train] init_from`` (a resume
        loads the checkpoint's weights instead, so the file it started from need not still exist)."""
        self.config = config
        rules = get_rules(config.run.variant) if rules is None else rules
        self.rules = rules
        self.device = resolve_device(config.run.device, "[run] device =")
        torch.manual_seed(config.run.seed)  # initial weights only; every later draw has its own generator
        try:
            self.network = ValueNetwork(config.model.encoder, config.model.hidden, config.model.activation)
            started_from_weights = bool(config.train.init_from and initial_weights)
            if started_from_weights:
                load_initial_weights(self.network, config.train.init_from, "[train] init_from")
            self.network.to(self.device)
        except (RuntimeError, MemoryError) as error:  # torch's allocation failures (OutOfMemoryError included)
            raise ValueError(f"[model] hidden = {list(config.model.hidden)}: the network cannot be allocated "
                             f"({(str(error).strip().splitlines() or ['out of memory'])[0][:100]})") from None
        # The weights of the previous evaluation; a run started from a checkpoint's weights compares its
        # first evaluation with them, so the learning curve shows what the new games added.
        self.previous_network: ValueNetwork | None = (
            copy.deepcopy(self.network).eval() if started_from_weights else None)
        self.log_points: list[tuple[str, float, int]] = []  # TensorBoard points of the checkpoint's step
        if config.train.optimizer == "adam":
            self.optimizer = torch.optim.AdamW(
                self.network.parameters(), lr=config.train.learning_rate, weight_decay=config.train.weight_decay
            )
        else:
            self.optimizer = torch.optim.SGD(
                self.network.parameters(),
                lr=config.train.learning_rate,
                momentum=config.train.momentum,
                weight_decay=config.train.weight_decay,
            )
        self.dice = RandomDice(config.run.seed, self.device)
        self.explore = torch.Generator(device=self.device).manual_seed(config.run.seed + 1)
        self.state = new_games(rules, config.selfplay.games_in_parallel, self.dice, self.device)
        self.buffer: list[Turn] = []
        self.games = 0
        self.turns = 0
        self.updates = 0
        self.train_seconds = 0.0
        self.strength: dict[str, Any] = {}
        self.traces = (
            EligibilityTraces(self.network, config.selfplay.games_in_parallel, self.device)
            if config.train.method == "eligibility_traces"
            else None
        )
        self.loss = loss_function(config.train.loss)

    # -- one turn of self-play, and learning when it is due --------------------------------------

    def step(self) -> dict[str, float]:
        """One lock-step turn; returns the metrics of any update it made."""
        config = self.config
        self.network.eval()
        turn, self.state, finished = selfplay_step(
            self.network, self.state, self.rules, config.selfplay, self.dice, self.explore
        )
        self.games += int(finished.sum())
        self.turns += 1
        metrics: dict[str, float] = {}
        learning_rate = td_learning_rate(config, self.games)
        if self.traces is not None:
            metrics["td_error"] = self.traces.step(turn, config.train.td_lambda, learning_rate)
            self.updates += 1
        else:
            self.buffer.append(turn)
            if len(self.buffer) >= config.train.buffer_turns + config.train.update_every_turns:
                metrics = self.update(learning_rate)
        return metrics

    def update(self, learning_rate: float) -> dict[str, float]:
        """Train the oldest ``update_every_turns`` buffered turns towards their lambda-returns."""
        train = self.config.train
        ready = train.update_every_turns
        targets = lambda_returns(self.buffer, train.td_lambda, ready)
        boards = torch.cat([turn.board for turn in self.buffer[:ready]])
        target = torch.cat(targets)
        del self.buffer[:ready]
        return self.learn(boards, target, learning_rate)

    def learn(self, boards: torch.Tensor, target: torch.Tensor, learning_rate: float) -> dict[str, float]:
        """Minibatch gradient steps of ``boards: int8[N, 28]`` towards ``target: float[N, 5]`` (one update)."""
        train = self.config.train
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self.network.train()
        encoded = self.network.encoder.encode(boards, self.rules)  # once for every minibatch and epoch
        size = boards.shape[0]
        minibatch = train.minibatch_size or size
        total_loss, total_error, steps = 0.0, 0.0, 0
        for _ in range(train.epochs_per_update):
            order = torch.randperm(size, generator=self.explore, device=self.device)
            for start in range(0, size, minibatch):
                index = order[start : start + minibatch]
                # index_select: several times faster than advanced indexing for these row gathers.
                wanted = target.index_select(0, index)
                predicted = self.network.forward_encoded(encoded.index_select(0, index))
                loss = self.loss(predicted, wanted)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if train.gradient_clip:
                    torch.nn.utils.clip_grad_norm_(self.network.parameters(), train.gradient_clip)
                self.optimizer.step()
                total_loss += float(loss.detach())
                total_error += float((predicted.detach() - wanted).abs().mean())
                steps += 1
        self.updates += 1
        self.network.eval()
        return {"loss": total_loss / steps, "td_error": total_error / steps, "learning_rate": learning_rate}

    def close(self) -> None:
        """Release what the run holds outside this process (nothing here; self-play actors elsewhere)."""

    # -- checkpoints ------------------------------------------------------------------------------

    def payload(self, with_training_state: bool = True) -> dict[str, Any]:
        counters = {"games": self.games, "turns": self.turns, "updates": self.updates,
                    "train_seconds": self.train_seconds}
        training = None
        if with_training_state:
            state = self.state
            previous = self.previous_network
            training = {
                "optimizer": self.optimizer.state_dict(),
                "dice": self.dice.get_state(),
                "explore": self.explore.get_state(),
                "state": {name: getattr(state, name).cpu() for name in ("board", "dice", "seat", "turn", "game_over", "result")},
                "buffer": [
                    {k: getattr(t, k).cpu() for k in _TURN_FIELDS if getattr(t, k) is not None}
                    for t in self.buffer
                ],
                "traces": None if self.traces is None else {k: v.cpu() for k, v in self.traces.traces.items()},
                # What makes a resumed run log what an uninterrupted one logs: the opponent of the
                # next "previous network" match, and the TensorBoard points of this step.
                "previous_weights": None if previous is None else {
                    k: v.detach().cpu() for k, v in previous.state_dict().items()},
                "tensorboard": list(self.log_points),
            }
        return checkpoint_payload(self.network, self.config, self.rules.name, counters, self.strength,
                                  runs.code_version(), training)

    @classmethod
    def resume(cls, path: str | Path, overrides: Config | None = None) -> Run:
        """The run saved in ``path``, continuing with ``overrides`` (the saved config with changes that can
        apply; ``bgtrain.training.run_directory.FIXED_ON_RESUME`` lists those that cannot, refused by name)."""
        payload = runs.load_resume_checkpoint(path, overrides)
        config = overrides or config_from_dict(payload["config"])
        run = cls(config, initial_weights=False)
        loaded = network_from_checkpoint(payload, str(path))
        training = payload["training"]
        try:
            run.network.load_state_dict(loaded.state_dict())
            run.optimizer.load_state_dict(training["optimizer"])
            run.dice.set_state(training["dice"])
            run.explore.set_state(training["explore"])
            run.state = State(**{k: v.to(run.device) for k, v in training["state"].items()})
            run.buffer = [Turn(**{k: v.to(run.device) for k, v in t.items()}) for t in training["buffer"]]
            if run.traces is not None and training["traces"] is not None:
                run.traces.traces = {k: v.to(run.device) for k, v in training["traces"].items()}
            if training.get("previous_weights") is not None:
                run.previous_network = copy.deepcopy(run.network).eval()
                run.previous_network.load_state_dict(training["previous_weights"])
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:120]
            raise ValueError(f"{path} is damaged: its training state does not fit its run ({first_line})") from None
        # The optimizer's saved groups carry the old hyperparameters; the config's apply from here on
        # (the learning rate is set at every update).
        for group in run.optimizer.param_groups:
            group["weight_decay"] = config.train.weight_decay
            if "momentum" in group:
                group["momentum"] = config.train.momentum
        run.log_points = [tuple(point) for point in training.get("tensorboard", [])]
        counters = payload["counters"]
        run.games, run.turns, run.updates = counters["games"], counters["turns"], counters["updates"]
        run.train_seconds = counters["train_seconds"]
        run.strength = payload.get("strength", {})
        return run


def train_td(run: Run, config: Config, directory: runs.RunDirectory, progress: bool, resumed: bool,
             stop: StopSignals | None = None) -> Path:
    """Train ``run`` (new, or resumed from a checkpoint) to ``config.train.total_games`` in its run
    ``directory`` (locked and started by the caller, ``bgtrain.commands.train.train``): self-play steps,
    strength checks, checkpoints; returns the final checkpoint's path. On a signal (``stop``) the state
    after the current step is saved in ``latest.pt`` and the run stops."""
    from tqdm import tqdm

    log = runs.TensorBoardLog(directory.path / "tensorboard", *((run.games, run.log_points) if resumed else ()))
    if not resumed:
        log.add_text("hyperparameters", "```\n" + to_toml_text(config) + "\n```", 0)
    total = config.train.total_games
    next_evaluation = _next_multiple(run.games, config.evaluation.every_games)
    next_checkpoint = _next_multiple(run.games, config.checkpoint.every_games)
    last_checkpoint_time = time.monotonic()
    bar = tqdm(total=total, initial=min(run.games, total), unit="game", disable=not progress, dynamic_ncols=True)
    window_start, window_games = time.monotonic(), run.games
    while run.games < total:
        started = time.perf_counter()
        games_before = run.games
        metrics = run.step()
        run.train_seconds += time.perf_counter() - started
        bar.update(min(run.games, total) - min(games_before, total))
        if stop is not None and stop.received is not None:
            bar.close()
            stop.stopped(_save_on_signal(run, config, directory, log))
        if metrics:
            for key, value in metrics.items():
                namespace = "charts" if key in ("learning_rate", "staleness", "weights_version") else "losses"
                log.add_scalar(f"{namespace}/{key}", value, run.games)
        now = time.monotonic()
        if now - window_start >= 5.0:
            rate = (run.games - window_games) / (now - window_start)
            log.add_scalar("charts/games_per_second", rate, run.games)
            bar.set_postfix_str(strength_text(run.strength).lstrip("; "))  # tqdm shows the rate itself
            window_start, window_games = now, run.games

        finished = run.games >= total
        if finished or (config.evaluation.every_games and run.games >= next_evaluation):
            run.strength = evaluate_strength(run.network, config, run.rules, run.previous_network)
            run.strength["games"] = run.games
            run.strength["train_seconds"] = run.train_seconds
            log_strength(log, run.strength, run.games)
            if config.evaluation.benchmark:
                from bgtrain.benchmark.scorer import log_error_rates

                log_error_rates(log, run.network, run.rules, run.games, config.evaluation.benchmark_decisions)
            run.previous_network = copy.deepcopy(run.network).eval()
            next_evaluation = _next_multiple(run.games, config.evaluation.every_games)
            bar.set_postfix_str(strength_text(run.strength).lstrip("; "))
            window_start, window_games = time.monotonic(), run.games
        due_by_games = config.checkpoint.every_games and run.games >= next_checkpoint
        due_by_time = config.checkpoint.every_seconds and now - last_checkpoint_time >= config.checkpoint.every_seconds
        if finished or due_by_games or due_by_time:
            run.log_points = [point for point in log.latest_points() if point[2] == run.games]
            directory.save(run.payload(), run.games, config.checkpoint.keep_last)
            next_checkpoint = _next_multiple(run.games, config.checkpoint.every_games)
            last_checkpoint_time = time.monotonic()
    bar.close()
    log.close()
    run.close()
    return save_checkpoint(directory.path / "final.pt", run.payload(with_training_state=False))


def _save_on_signal(run: Run, config: Config, directory: runs.RunDirectory, log) -> str:
    """The full training state after the step just taken, as a checkpoint would write it."""
    run.log_points = [point for point in log.latest_points() if point[2] == run.games]
    latest = directory.save(run.payload(), run.games, config.checkpoint.keep_last)
    log.close()
    run.close()
    return resume_hint(latest, f"{run.games:,} games")


def _next_multiple(games: int, every: int) -> int:
    return (games // every + 1) * every if every else 1 << 62
