"""The sections of the run configuration (``bgtrain.training.config``): one frozen dataclass per TOML section,
one documented field per knob, each validated when it is built (a ValueError naming the key)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bgtrain.model.encoding import ENCODERS
from bgtrain.model.network import layer_activations
from engine.variants import VARIANTS

DEVICE_PATTERN = re.compile(r"^(cpu|cuda|cuda:\d+)$")


def _choice(section: str, name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"[{section}] {name} = {value!r}: must be one of {', '.join(map(repr, choices))}")


def _positive(section: str, name: str, value: float, allow_zero: bool = False) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"[{section}] {name} = {value!r}: must be a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"[{section}] {name} = {value!r}: must be {'>= 0' if allow_zero else '> 0'}")


SIBLING_TEMPERATURE = 0.02  # the softmax move-choice term's equity scale: about a close pair of plays' gap
SEED_LIMIT = 1 << 63  # torch generators take 64-bit seeds; a run adds small offsets to its seed


def _seed(section: str, name: str, value: int) -> None:
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"[{section}] {name} = {value}: must be in 0 .. 2**63 - 1")


def _finite(section: str, name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"[{section}] {name} = {value!r}: must be a finite number")


@dataclass(frozen=True)
class RunConfig:
    name: str = "default"
    """Run name; the run directory is ``out_dir/name``."""
    seed: int = 0
    """Seeds every generator of the run (dice, exploration, initial weights)."""
    device: str = "cpu"
    """Torch device for self-play and training: "cpu", "cuda" or "cuda:N"."""
    out_dir: str = "runs"
    """Parent directory of run directories (config, TensorBoard events, checkpoints)."""
    variant: str = "backgammon"
    """Rules variant by name (``engine.variants.VARIANTS``): "backgammon", "nackgammon", "hypergammon", ..."""

    def __post_init__(self) -> None:
        _choice("run", "variant", self.variant, tuple(VARIANTS))
        if not self.name or "/" in self.name:
            raise ValueError(f"[run] name = {self.name!r}: must be a non-empty name without '/'")
        if not DEVICE_PATTERN.match(self.device):
            raise ValueError(f"[run] device = {self.device!r}: must be 'cpu', 'cuda' or 'cuda:N'")
        _seed("run", "seed", self.seed)


@dataclass(frozen=True)
class ModelConfig:
    encoder: str = "tesauro198"
    """Input encoder by registry name (``bgtrain.model.encoding.ENCODERS``)."""
    hidden: tuple[int, ...] = (80,)
    """Hidden layer sizes, input side first."""
    activation: str = "sigmoid"
    """Hidden activation: "sigmoid", "relu", "tanh" or "silu"; or "FIRST-LATER", FIRST after the first hidden
    layer and LATER after the others ("sigmoid-relu": a network deepened by ``distillation.deepen``)."""

    def __post_init__(self) -> None:
        _choice("model", "encoder", self.encoder, tuple(sorted(ENCODERS)))
        try:
            layer_activations(self.activation)
        except ValueError as error:
            raise ValueError(f"[model] activation: {error}") from None
        if not self.hidden or any(size <= 0 for size in self.hidden):
            raise ValueError(f"[model] hidden = {list(self.hidden)}: must be a non-empty list of sizes > 0")


@dataclass(frozen=True)
class SelfplayConfig:
    games_in_parallel: int = 512
    """Games played in lock step: every turn evaluates all their afterstates in one batch."""
    exploration_epsilon: float = 0.0
    """Probability that a mover plays a uniformly random legal move instead of the greedy one."""
    turn_limit: int = 400
    """A game still running after this many turns is truncated: its last position is bootstrapped from
    the network's own evaluation, never scored as a loss."""

    def __post_init__(self) -> None:
        _positive("selfplay", "games_in_parallel", self.games_in_parallel)
        if not 0.0 <= self.exploration_epsilon <= 1.0:
            raise ValueError(
                f"[selfplay] exploration_epsilon = {self.exploration_epsilon}: must be in [0, 1]"
            )
        _positive("selfplay", "turn_limit", self.turn_limit)


@dataclass(frozen=True)
class TrainConfig:
    method: str = "lambda_return"
    """"lambda_return": each state's target is the TD(lambda) return truncated at the end of a rolling
    buffer of ``buffer_turns`` turns (bootstrapped from the network there, exact at game ends), trained by
    minibatch gradient steps. "eligibility_traces": classic online TD(lambda) (Sutton 1988, Tesauro 1992),
    one update per turn with per-game eligibility traces."""
    td_lambda: float = 0.7
    """The lambda of TD(lambda), in [0, 1]: 0 bootstraps from the next state only, 1 uses the game's result."""
    learning_rate: float = 1e-3
    """Initial learning rate (the schedule below scales it)."""
    optimizer: str = "adam"
    """"adam" or "sgd" (plain SGD, Tesauro's choice; with eligibility traces the step is lr x error x trace)."""
    momentum: float = 0.0
    """SGD momentum (ignored by Adam)."""
    weight_decay: float = 0.0
    """L2 weight decay (decoupled for Adam: AdamW)."""
    lr_schedule: str = "constant"
    """Learning-rate schedule over ``total_games``: "constant", "linear" (to ``lr_final_fraction`` x lr at
    the end), "cosine" (likewise) or "inverse_sqrt" (lr / sqrt(1 + games / lr_decay_games))."""
    lr_final_fraction: float = 0.1
    """Final learning rate as a fraction of the initial one, for "linear" and "cosine"."""
    lr_decay_games: int = 100_000
    """Time constant in games of the "inverse_sqrt" schedule."""
    lr_warmup_games: int = 0
    """Games over which the learning rate ramps up linearly from 0 before the schedule starts."""
    buffer_turns: int = 16
    """Turns kept per game in the rolling buffer of "lambda_return"; returns are truncated after this many
    turns, whose weight is lambda ** buffer_turns (0.7 ** 16 = 0.003)."""
    update_every_turns: int = 8
    """Lock-step turns between updates ("lambda_return"): each update learns from the
    games_in_parallel x update_every_turns states whose targets became ready since the previous one."""
    minibatch_size: int = 4096
    """States per gradient step within an update; 0 takes all ready states in one step."""
    epochs_per_update: int = 1
    """Passes over the ready states per update."""
    loss: str = "mse"
    """Per-output loss against the target probabilities: "mse" or "bce" (binary cross-entropy)."""
    gradient_clip: float = 0.0
    """Clip the gradient's global norm to this value; 0 turns clipping off."""
    total_games: int = 1_000_000
    """Self-play games to train on; the learning-rate schedule spans them."""
    init_from: str = ""
    """A checkpoint whose network starts the self-play training (another variant's model, or an earlier run's
    ``final.pt`` to train on at a new schedule); "" starts from random weights under ``run.seed``. The
    [model] section must describe the same network. A resume ignores it (the checkpoint has the weights)."""

    def __post_init__(self) -> None:
        _choice("train", "method", self.method, ("lambda_return", "eligibility_traces", "supervised"))
        if not 0.0 <= self.td_lambda <= 1.0:
            raise ValueError(f"[train] td_lambda = {self.td_lambda}: must be in [0, 1]")
        _positive("train", "learning_rate", self.learning_rate)
        _choice("train", "optimizer", self.optimizer, ("adam", "sgd"))
        if self.method == "eligibility_traces" and self.optimizer != "sgd":
            raise ValueError("[train] method = 'eligibility_traces' needs optimizer = 'sgd'")
        for name in ("td_lambda", "momentum", "lr_final_fraction"):
            _finite("train", name, getattr(self, name))
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"[train] momentum = {self.momentum}: must be in [0, 1)")
        _positive("train", "weight_decay", self.weight_decay, allow_zero=True)
        _choice("train", "lr_schedule", self.lr_schedule, ("constant", "linear", "cosine", "inverse_sqrt"))
        if not 0.0 <= self.lr_final_fraction <= 1.0:
            raise ValueError(f"[train] lr_final_fraction = {self.lr_final_fraction}: must be in [0, 1]")
        _positive("train", "lr_decay_games", self.lr_decay_games)
        _positive("train", "lr_warmup_games", self.lr_warmup_games, allow_zero=True)
        _positive("train", "buffer_turns", self.buffer_turns)
        _positive("train", "update_every_turns", self.update_every_turns)
        _positive("train", "minibatch_size", self.minibatch_size, allow_zero=True)
        _positive("train", "epochs_per_update", self.epochs_per_update)
        _choice("train", "loss", self.loss, ("mse", "bce"))
        _positive("train", "gradient_clip", self.gradient_clip, allow_zero=True)
        _positive("train", "total_games", self.total_games)


@dataclass(frozen=True)
class SupervisedConfig:
    """Supervised training on labelled datasets (``train.method = "supervised"``, ``bgtrain.training.supervised``)."""

    datasets: tuple[str, ...] = ()
    """Dataset directories (``bgtrain dataset generate``), their complete shards concatenated; ``DIR@N``
    takes DIR's first N shards only."""
    kinds: tuple[str, ...] = ("contact", "crashed", "race")
    """Position kinds to train on (``engine.position_kinds.PositionKind`` names, lower case)."""
    epochs: int = 20
    """Passes over the training split."""
    batch_size: int = 256
    learning_rate: float = 1e-3
    """AdamW's initial learning rate."""
    weight_decay: float = 1e-4
    """AdamW's decoupled weight decay."""
    lr_schedule: str = "cosine"
    """"cosine" (to lr_final_fraction x lr at the last step), "step" (x lr_step_factor every
    lr_step_epochs epochs) or "constant"."""
    lr_final_fraction: float = 0.05
    lr_step_epochs: int = 5
    lr_step_factor: float = 0.3
    loss: str = "bce"
    """"bce" (cross-entropy on each of the five cumulative probabilities) or "mse"."""
    heldout_fraction: float = 0.05
    """Fraction of the positions held out (a fixed draw under run.seed) for the held-out loss, at most 0.5
    (most positions train); 0 holds none out and records no held-out loss."""
    heldout_by: str = "row"
    """How the held-out draw goes (``bgtrain.training.heldout``): "row" (each row, or a plays dataset's move
    choice, on its own) or "position" (keyed by the position, so none that trains in one row is held out in
    another: for datasets listed twice, or beside their relabelling)."""
    init_from: str = ""
    """A checkpoint whose network starts the training (a TD-trained model, say); "" starts from scratch."""
    checkpoint_every_epochs: int = 1
    """Write the resumable checkpoint (and an ``epoch_N.pt``) after every this many epochs and the last."""
    sibling_weight: float = 0.0
    """Weight of the move-choice term (``bgtrain.training.move_choices``): each step also draws
    ``sibling_groups`` groups of a plays dataset's rows (the plays of one roll) and adds this times the
    mean squared error of the student's equity differences within a group against the labels'. 0: none."""
    sibling_groups: int = 32
    """Groups drawn a step for the move-choice term."""
    sibling_loss: str = "mse"
    """The move-choice term: "mse" (``sibling_loss``: every difference within a group alike) or "softmax"
    (``softmax_choice_loss``: the two choices as distributions at ``sibling_temperature``, the plays near the
    teacher's best weighed most)."""
    sibling_temperature: float = SIBLING_TEMPERATURE
    """With ``sibling_loss = "softmax"``: the equity scale of the choice distributions."""

    def __post_init__(self) -> None:
        for kind in self.kinds:
            _choice("supervised", "kinds", kind, ("contact", "crashed", "race", "bearoff"))
        _positive("supervised", "epochs", self.epochs)
        _positive("supervised", "batch_size", self.batch_size)
        _positive("supervised", "learning_rate", self.learning_rate)
        _positive("supervised", "weight_decay", self.weight_decay, allow_zero=True)
        _choice("supervised", "lr_schedule", self.lr_schedule, ("cosine", "step", "constant"))
        _positive("supervised", "lr_step_epochs", self.lr_step_epochs)
        _choice("supervised", "loss", self.loss, ("bce", "mse"))
        _choice("supervised", "heldout_by", self.heldout_by, ("row", "position"))
        _positive("supervised", "checkpoint_every_epochs", self.checkpoint_every_epochs)
        _positive("supervised", "sibling_weight", self.sibling_weight, allow_zero=True)
        _positive("supervised", "sibling_groups", self.sibling_groups)
        _choice("supervised", "sibling_loss", self.sibling_loss, ("mse", "softmax"))
        _positive("supervised", "sibling_temperature", self.sibling_temperature)
        if not 0.0 <= self.heldout_fraction <= 0.5:  # NaN fails both comparisons
            raise ValueError(f"[supervised] heldout_fraction = {self.heldout_fraction}: must be in [0, 0.5] "
                             "(0 holds out nothing; most positions must train)")


@dataclass(frozen=True)
class EvaluationConfig:
    every_games: int = 50_000
    """Evaluate after every this many training games (and at the end); 0 only at the end."""
    games: int = 2000
    """Games per evaluation: games / 2 dice sequences, each played twice with the seats swapped."""
    opponent: str = "pubeval"
    """Benchmark opponent: "pubeval" or "random" (uniformly random legal moves)."""
    seed: int = 12345
    """Seed of the evaluation dice, fixed so that successive evaluations play the same games."""
    benchmark: bool = True
    """Also score the network's 0-ply plays on the move-error benchmark (``bgtrain.benchmark``), logged
    as ``eval/error_rate/contact|crashed|race`` (standard backgammon only)."""
    benchmark_decisions: int = 1000
    """Decisions per class the benchmark scores (a fixed sample; 0: all of them)."""

    def __post_init__(self) -> None:
        _positive("evaluation", "every_games", self.every_games, allow_zero=True)
        _positive("evaluation", "benchmark_decisions", self.benchmark_decisions, allow_zero=True)
        _positive("evaluation", "games", self.games)
        if self.games % 2:
            raise ValueError(f"[evaluation] games = {self.games}: must be even (each deal is played twice)")
        _choice("evaluation", "opponent", self.opponent, ("pubeval", "random"))
        _seed("evaluation", "seed", self.seed)


@dataclass(frozen=True)
class CheckpointConfig:
    every_games: int = 50_000
    """Write a checkpoint after every this many games (and at the end); 0 turns this trigger off."""
    every_seconds: float = 1800.0
    """Also write one when this many seconds have passed since the last; 0 turns this trigger off."""
    keep_last: int = 3
    """Checkpoints kept in the run directory, the newest ones (the final one is always kept); 0 keeps all."""

    def __post_init__(self) -> None:
        _positive("checkpoint", "every_games", self.every_games, allow_zero=True)
        _positive("checkpoint", "every_seconds", self.every_seconds, allow_zero=True)
        _positive("checkpoint", "keep_last", self.keep_last, allow_zero=True)


@dataclass(frozen=True)
class ExecutorConfig:
    mode: str = "local"
    """Where self-play runs: "local" (the learner plays its own games in lock step, ``bgtrain.training.td``),
    "process" or "ray" (self-play actors send the learner shards of games played with the latest
    weights they were sent, ``bgtrain.distributed.selfplay``; "process" runs them in this process on the
    same schedule as "ray")."""
    address: str = ""
    """Ray cluster to join: "auto" or "HOST:PORT"; empty joins $RAY_ADDRESS when it is set, else
    starts a private cluster on this machine (the line the run prints says which)."""
    workers: int = 0
    """Ray self-play actors; 0 is as many as the cluster's resources allow."""
    worker_cpus: float = 1.0
    """CPUs each actor reserves (and torch threads it runs)."""
    worker_gpus: float = 0.0
    """GPU each actor reserves, a fraction to share one GPU among several actors (then they play on it)."""
    shard_games: int = 512
    """Games each actor plays in lock step for one shard."""
    shard_turns: int = 128
    """Turns a shard records: shard_games x shard_turns positions, each with its lambda-return over the
    next train.buffer_turns turns (which the actor also plays). A shard's games all start at the
    opening, so it spans a few games per slot (a game lasts about 55 turns): at least 64."""
    broadcast_every: int = 4
    """Learner updates (one per shard) between two versions of the weights sent to the actors."""
    max_in_flight: int = 4
    """Shards asked for and not yet learned from. It fixes the schedule (which weights each shard is
    played with), so it is set here and never by the executor: "process" and "ray" at any number of
    actors train to the same weights. Keep it at least the number of actors (more keeps them busy
    while the learner trains). Staleness (weights versions between a shard's weights and the
    learner's) is at most ceil(max_in_flight / broadcast_every)."""

    task_timeout: float = 0.0
    """Ray: seconds a shard may take on its actor (or the job may have no actor left) before the run
    ends with an error naming the shard and the node; 0 is no limit per shard."""

    def __post_init__(self) -> None:
        _choice("executor", "mode", self.mode, ("local", "process", "ray"))
        _positive("executor", "task_timeout", self.task_timeout, allow_zero=True)
        _positive("executor", "workers", self.workers, allow_zero=True)
        _positive("executor", "worker_cpus", self.worker_cpus)
        _positive("executor", "worker_gpus", self.worker_gpus, allow_zero=True)
        _positive("executor", "shard_games", self.shard_games)
        if self.shard_turns < 64:
            raise ValueError(f"[executor] shard_turns = {self.shard_turns}: must be at least 64 (a shard "
                             "that is shorter than a game would finish no games)")
        _positive("executor", "broadcast_every", self.broadcast_every)
        _positive("executor", "max_in_flight", self.max_in_flight)
