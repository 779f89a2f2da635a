"""Error rates of agents on benchmark decisions: mean equity lost per decision, times 1000.

An agent's loss on a decision is the listed loss of the play it chooses; a play that is not listed
is charged the worst listed loss of that decision (GNU Backgammon's rule: the listed plays are the
best candidates, so an unlisted one is at least about that bad). The error rate of a class is the
mean loss over its decisions times 1000 (GNU Backgammon's unit: contact 10.5 for its 0-ply, 44.2 for
pubeval on its own benchmark), with a 95% interval from the normal approximation (1.96 standard
errors). Two agents are compared on the same decisions: the interval of their difference is over
the per-decision differences (paired), much narrower than the two intervals apart.

Performance: all decisions go through the engine's move generator and the agent's ``choose`` in
batches of ``batch`` decisions; matching the chosen plays to the listed candidates is one tensor
comparison per batch.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

import torch

from bgtrain.arena.agents import Agent, GreedyValueAgent
from bgtrain.benchmark.decisions import CLASSES, STAGES, DecisionSet, class_kind, stages_of
from engine.movegen import legal_afterstates
from engine.rules import STANDARD, Rules
from engine.state import State

Z95 = 1.959963984540054  # two-sided 95% quantile of the normal distribution
BATCH = 8192  # decisions per call of the move generator and the agent


def decision_state(board: torch.Tensor, dice: torch.Tensor) -> State:
    """A ``State`` for positions ``int8[B, 28]`` with their rolls ``int[B, 2]``, as an agent's
    ``choose`` takes it (seat 0 to move, turn 0, no game over): agents look at board and dice only."""
    batch = board.shape[0]
    dice = torch.sort(dice.to(torch.int8), dim=1, descending=True).values
    zeros = torch.zeros(batch, dtype=torch.int8, device=board.device)
    return State(
        board=board, dice=dice, seat=zeros, turn=zeros.to(torch.int32),
        game_over=zeros.to(torch.bool), result=zeros,
    )


def agent_choices(agent: Agent, board: torch.Tensor, dice: torch.Tensor, batch: int = BATCH,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """The afterstate ``agent`` plays in each position: ``int8[B, 28]`` on the CPU, computed ``batch``
    positions at a time on ``device``."""
    chosen = []
    for start in range(0, board.shape[0], batch):
        part_board, part_dice = board[start:start + batch].to(device), dice[start:start + batch].to(device)
        afterstates = legal_afterstates(part_board, part_dice, STANDARD)
        choice = agent.choose(decision_state(part_board, part_dice), afterstates)
        chosen.append(afterstates.select(choice).cpu())
    if not chosen:
        return torch.zeros((0, board.shape[1]), dtype=torch.int8)
    return torch.cat(chosen)


def losses_of_plays(decisions: DecisionSet, chosen: torch.Tensor, loss: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss of playing ``chosen: int8[D, 28]`` (one afterstate per decision): ``(loss float64[D],
    listed bool[D])``; an unlisted play is charged its decision's worst listed loss. ``loss``: other
    per-candidate losses to charge (``float[C]``, e.g. cross-fitted ones) instead of ``decisions.loss``."""
    owner = decisions.owner
    loss = decisions.loss.double() if loss is None else loss.double()
    same = (decisions.candidate == chosen.to(decisions.candidate.dtype)[owner]).all(1)
    listed = torch.zeros(len(decisions), dtype=torch.int64).scatter_reduce(0, owner, same.long(), "amax").bool()
    found = torch.zeros(len(decisions), dtype=torch.float64).scatter_add(0, owner, torch.where(same, loss, 0.0))
    worst = torch.full((len(decisions),), -torch.inf, dtype=torch.float64).scatter_reduce(0, owner, loss, "amax")
    return torch.where(listed, found, worst), listed


def decision_losses(agent: Agent, decisions: DecisionSet, batch: int = BATCH,
                    device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """``agent``'s loss on every decision: ``(loss float64[D], listed bool[D])``."""
    return losses_of_plays(decisions, agent_choices(agent, decisions.board, decisions.dice, batch, device))


def mean_interval(values: torch.Tensor) -> tuple[float, float]:
    """The mean of ``values`` and the half-width of its 95% interval (0 for fewer than two values)."""
    count = values.numel()
    if count == 0:
        return float("nan"), float("nan")
    mean = float(values.double().mean())
    if count < 2:
        return mean, 0.0
    return mean, Z95 * float(values.double().std()) / math.sqrt(count)


@dataclass(frozen=True)
class ErrorRate:
    """One agent on one class: ``error_rate`` is mean equity lost per decision × 1000."""

    agent: str
    position_class: str
    decisions: int
    error_rate: float
    interval95: float
    unlisted: float  # fraction of decisions whose chosen play was not listed (charged the worst listed loss)


@dataclass(frozen=True)
class PairedDifference:
    """``agent_a``'s error rate minus ``agent_b``'s on the same decisions, with a paired 95% interval."""

    agent_a: str
    agent_b: str
    position_class: str
    decisions: int
    difference: float
    interval95: float


@dataclass(frozen=True)
class StageShare:
    """One agent's error on the decisions of one stage (``decisions.STAGES``) of one class: ``share`` is the
    part of the class's error rate they make (their summed loss over all the class's decisions, × 1000;
    the shares of a class add up to its error rate), ``error_rate`` the mean over the stage's own."""

    agent: str
    position_class: str
    stage: str
    decisions: int
    share: float
    error_rate: float


@dataclass(frozen=True)
class BenchmarkReport:
    rates: tuple[ErrorRate, ...]
    differences: tuple[PairedDifference, ...]
    stages: tuple[StageShare, ...] = ()

    def as_dict(self) -> dict:
        payload = {"error_rates": [asdict(rate) for rate in self.rates],
                   "differences": [asdict(difference) for difference in self.differences]}
        if self.stages:
            payload["stages"] = [asdict(stage) for stage in self.stages]
        return payload

    def table(self) -> str:
        """The error rates (one row per agent, one column per class) and the paired differences."""
        classes = list(dict.fromkeys(rate.position_class for rate in self.rates))
        agents = list(dict.fromkeys(rate.agent for rate in self.rates))
        by_key = {(rate.agent, rate.position_class): rate for rate in self.rates}
        width = max([len("agent")] + [len(agent) for agent in agents])
        counts = {c: next(r.decisions for r in self.rates if r.position_class == c) for c in classes}
        header = f"{'agent':<{width}}" + "".join(f"  {f'{c} ({counts[c]})':>22}" for c in classes)
        lines = ["error rate: mean equity lost per decision x 1000, 95% interval; [unlisted plays]", header]
        for agent in agents:
            cells = []
            for name in classes:
                rate = by_key[(agent, name)]
                cells.append(f"  {f'{rate.error_rate:.2f} ± {rate.interval95:.2f} [{rate.unlisted:.1%}]':>22}")
            lines.append(f"{agent:<{width}}" + "".join(cells))
        if self.differences:
            lines.append("")
            lines.append("paired differences (A - B, same decisions, 95% interval):")
            for difference in self.differences:
                lines.append(f"  {difference.agent_a} - {difference.agent_b} [{difference.position_class}]: "
                             f"{difference.difference:+.2f} ± {difference.interval95:.2f}")
        if self.stages:
            lines.append("")
            lines.extend(self.stage_table(agents, width))
        return "\n".join(lines)

    def stage_table(self, agents: list[str], width: int) -> list[str]:
        """Per class, each stage's share of every agent's error rate (its own mean in brackets)."""
        lines = ["by stage: share of the class's error rate x 1000 [mean over the stage's decisions]"]
        by_key = {(stage.agent, stage.position_class, stage.stage): stage for stage in self.stages}
        for name in dict.fromkeys(stage.position_class for stage in self.stages):
            present = [stage for stage in STAGES if (agents[0], name, stage) in by_key]
            counts = [f"{stage} ({by_key[(agents[0], name, stage)].decisions})" for stage in present]
            lines.append(f"{name:<{width}}" + "".join(f"  {count:>28}" for count in counts))
            for agent in agents:
                shares = [by_key[(agent, name, stage)] for stage in present]
                cells = [f"{share.share:.2f} [{share.error_rate:.2f}]" for share in shares]
                lines.append(f"{agent:<{width}}" + "".join(f"  {cell:>28}" for cell in cells))
        return lines


def stage_shares(agent: str, name: str, members: DecisionSet, loss: torch.Tensor) -> list[StageShare]:
    """How ``agent``'s losses on one class's decisions split over the stages (those with decisions)."""
    stage = stages_of(members.board)
    shares = []
    for index, stage_name in enumerate(STAGES):
        inside = stage == index
        if bool(inside.any()):
            shares.append(StageShare(agent, name, stage_name, int(inside.sum()),
                                     float(loss[inside].sum()) * 1000.0 / len(members),
                                     float(loss[inside].mean()) * 1000.0))
    return shares


def score_agents(agents: list[Agent], decisions: DecisionSet, classes: tuple[str, ...] = CLASSES,
                 batch: int = BATCH, device: torch.device | str = "cpu", by_stage: bool = False) -> BenchmarkReport:
    """Every agent's error rate per class of ``classes`` (classes without decisions are left out) and,
    for two or more agents, each pair's paired difference; with ``by_stage``, each class's error split
    over the stages of the bear-off (``stage_shares``)."""
    rates, differences, stages = [], [], []
    for name in classes:
        members = decisions.of_class(name)
        if len(members) == 0:
            continue
        losses = {}
        for agent in agents:
            loss, listed = decision_losses(agent, members, batch, device)
            losses[agent.name] = loss
            mean, interval = mean_interval(loss * 1000.0)
            rates.append(ErrorRate(agent.name, name, len(members), mean, interval, float((~listed).double().mean())))
            if by_stage:
                stages.extend(stage_shares(agent.name, name, members, loss))
        for i, first in enumerate(agents):
            for second in agents[i + 1:]:
                mean, interval = mean_interval((losses[first.name] - losses[second.name]) * 1000.0)
                differences.append(PairedDifference(first.name, second.name, name, len(members), mean, interval))
    return BenchmarkReport(tuple(rates), tuple(differences), tuple(stages))


def class_sample(decisions: DecisionSet, per_class: int, seed: int = 0) -> DecisionSet:
    """At most ``per_class`` decisions of each class, drawn without replacement (seeded); all when 0."""
    if per_class <= 0:
        return decisions
    generator = torch.Generator().manual_seed(seed)
    chosen = []
    for name in CLASSES:
        members = (decisions.kind == class_kind(name)).nonzero(as_tuple=True)[0]
        chosen.append(members[torch.randperm(members.numel(), generator=generator)[:per_class]])
    return decisions.select(torch.sort(torch.cat(chosen)).values)


@lru_cache(maxsize=2)
def _training_sample(per_class: int) -> DecisionSet:
    """The shipped decisions a training run scores, read once per process."""
    from bgtrain.benchmark.decisions import load_decisions

    return class_sample(load_decisions(), per_class)


def log_error_rates(writer, network, rules: Rules, games: int, per_class: int) -> dict[str, float]:
    """Training's evaluation hook: the network's 0-ply error rate per class on (a fixed sample of
    ``per_class`` decisions per class of) the shipped benchmark, written to TensorBoard as
    ``eval/error_rate/<class>`` at step ``games``. The benchmark is standard backgammon: other
    variants log nothing."""
    if rules != STANDARD:
        return {}
    decisions = _training_sample(per_class)
    device = next(network.parameters()).device
    was_training = network.training
    network.eval()
    with torch.no_grad():
        agent = GreedyValueAgent.from_network(network, "model", rules)
        report = score_agents([agent], decisions, device=device)
    network.train(was_training)
    values = {rate.position_class: rate.error_rate for rate in report.rates}
    for name, value in values.items():
        writer.add_scalar(f"eval/error_rate/{name}", value, games)
    return values
