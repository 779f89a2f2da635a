"""One turn of the person's play, checker by checker: which single moves may start (or continue) a
full legal play, derived from the engine's set of legal plays.

The engine (``engine.movegen.legal_afterstates``) gives the legal complete plays of a roll: the
distinct afterstates that the dice-usage rule allows ("use both dice if you can, else the larger
one; with doubles as many as you can"; acey-deucey's 1-2 with its chosen double). A person moves one
checker by one die at a time, so the page needs the tree of partial plays. A node of that tree is a
board part-way through the turn with the dice still to play; its children are the single-checker
moves of one die (``engine.reference.single_moves``) after which some legal complete play can still
be reached. A node may end the turn exactly when its board (with acey-deucey's extra-roll flag) is one
of the engine's legal plays. The rule therefore holds by construction: a move that would leave the
larger die unplayable, or a double short of what could be played, has no legal play below it and is
never offered.

Acey-deucey (``Rules.acey_deucey``): after the 1 and the 2 of a 1-2 are both played the person chooses
a double (a node of kind ``choose_double``), plays it as far as it goes, and rolls again when it was
played in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from engine.movegen import legal_afterstates
from engine.reference import BORNE_OFF, apply_move, single_moves
from engine.rules import Rules

Board = tuple[int, ...]


@dataclass(frozen=True)
class Node:
    """A board part-way through the turn (mover's side), the dice still to play (larger first,
    four entries for a double), and the stage: ``"roll"`` for the roll's own dice, ``"chosen"`` for an
    acey-deucey double chosen after the 1-2."""

    board: Board
    dice_left: tuple[int, ...]
    stage: str = "roll"


@dataclass(frozen=True)
class Step:
    """One checker moved by one die: ``source`` 1..24, 25 (bar) or 26 (hand); ``target`` 1..24 or 0
    (borne off); ``hit`` whether a blot was sent to the bar."""

    source: int
    target: int
    die: int
    hit: bool


class TurnTree:
    """The partial plays of one roll from ``board`` (mover's side), under ``rules``."""

    def __init__(self, board: Board, dice: tuple[int, int], rules: Rules) -> None:
        self.board = tuple(int(count) for count in board)
        self.dice = (max(dice), min(dice))
        self.rules = rules
        afterstates = legal_afterstates(torch.tensor([self.board], dtype=torch.int8),
                                        torch.tensor([self.dice]), rules)
        boards = [tuple(row) for row in afterstates.boards.tolist()]
        flags = afterstates.extra_roll.tolist()
        # The legal complete plays: (afterstate, extra roll) pairs.
        self.plays: frozenset[tuple[Board, bool]] = frozenset(zip(boards, flags))
        self.dice_used = max(afterstates.dice_used.tolist())
        self.acey_deucey_roll = rules.acey_deucey and sorted(self.dice) == [1, 2]
        self._viable = lru_cache(maxsize=None)(self._viable_uncached)

    @property
    def root(self) -> Node:
        double = self.dice[0] == self.dice[1]
        return Node(self.board, self.dice * 2 if double else self.dice)

    @property
    def no_move(self) -> bool:
        """No checker can move: the turn passes."""
        return self.dice_used == 0

    @property
    def forced(self) -> bool:
        """Exactly one legal play (that moves something): it can be made for the person."""
        return not self.no_move and len(self.plays) == 1

    # --- the tree ---------------------------------------------------------------------------------

    def chooses_double(self, node: Node) -> bool:
        """Acey-deucey: the 1 and the 2 are played, a double must now be chosen."""
        # The roll's dice are used up only when both the 1 and the 2 were played.
        return self.acey_deucey_roll and node.stage == "roll" and not node.dice_left

    def ends_turn(self, node: Node) -> bool:
        """Whether the turn may be confirmed at this node: its board is a legal complete play."""
        if self.chooses_double(node):
            # A double must be chosen; a double that cannot be played at all still ends here, as
            # "(after the 1-2, no extra roll)", which the double's own node confirms.
            return False
        extra = node.stage == "chosen" and not node.dice_left
        return (node.board, extra) in self.plays

    def children(self, node: Node) -> list[tuple[Step, Node]]:
        """Single moves from ``node`` below which a legal complete play lies."""
        return [(step, child) for step, child in self._expand(node) if self._viable(child)]

    def double_choices(self, node: Node) -> list[int]:
        """Acey-deucey: the doubles that may be chosen at ``node`` (those that lead to a legal play)."""
        if not self.chooses_double(node):
            return []
        return [die for die in range(1, 7) if self._viable(Node(node.board, (die,) * 4, "chosen"))]

    def choose_double(self, node: Node, die: int) -> Node:
        if die not in self.double_choices(node):
            raise ValueError(f"the double {die}-{die} cannot be chosen here")
        return Node(node.board, (die,) * 4, "chosen")

    def _expand(self, node: Node) -> list[tuple[Step, Node]]:
        out = []
        seen_dice = set()
        for index, die in enumerate(node.dice_left):
            if die in seen_dice:
                continue
            seen_dice.add(die)
            rest = node.dice_left[:index] + node.dice_left[index + 1:]
            for source, target, hit in single_moves(node.board, die, self.rules):
                board = list(node.board)
                apply_move(board, (source, target, hit))
                out.append((Step(source, target, die, hit), Node(tuple(board), rest, node.stage)))
        return out

    def _viable_uncached(self, node: Node) -> bool:
        if self.ends_turn(node):
            return True
        if self.chooses_double(node):
            return any(self._viable(Node(node.board, (die,) * 4, "chosen")) for die in range(1, 7))
        return any(self._viable(child) for _, child in self._expand(node))

    # --- what the page shows ----------------------------------------------------------------------

    def destinations(self, node: Node) -> dict[int, list[dict]]:
        """Per source point, where its checker can go from ``node``: ``{"target", "steps", "kind"}``,
        ``kind`` ``"single"`` (one die) or ``"combined"`` (the same checker by several dice in a row,
        every step legal and still leading to a legal play). One entry per target: the fewest steps,
        then the smallest first die."""
        options: dict[int, dict[int, list[Step]]] = {}
        for step, child in self.children(node):
            self._follow(step.source, [step], child, options)
        return {
            source: [
                {"target": target, "steps": [step.__dict__ for step in steps],
                 "kind": "single" if len(steps) == 1 else "combined"}
                for target, steps in sorted(targets.items())
            ]
            for source, targets in options.items()
        }

    def _follow(self, source: int, steps: list[Step], node: Node, options: dict) -> None:
        targets = options.setdefault(source, {})
        target = steps[-1].target
        known = targets.get(target)
        if known is None or (len(steps), steps[0].die) < (len(known), known[0].die):
            targets[target] = list(steps)
        if target == BORNE_OFF:
            return
        for step, child in self.children(node):
            if step.source == target:
                self._follow(source, steps + [step], child, options)

    def sequence_to(self, after: Board, extra_roll: bool = False) -> tuple[list[Step], int | None]:
        """A sequence of single moves from the root that makes the legal play ``after`` (for showing
        the bot's play step by step), and the acey-deucey double chosen on the way (or None)."""
        target = (tuple(after), bool(extra_roll))
        if target not in self.plays:
            raise ValueError("not a legal play of this roll")
        path = self._search(self.root, target, set())
        if path is None:  # pragma: no cover - every legal play is reachable
            raise ValueError("no move sequence reaches this play")
        return path

    def _search(self, node: Node, target, dead: set) -> tuple[list[Step], int | None] | None:
        """Depth first; ``dead`` holds the nodes already known not to lead to ``target`` (many
        orders of the same moves meet at one node)."""
        if node in dead:
            return None
        extra = node.stage == "chosen" and not node.dice_left
        if (node.board, extra) == target and self.ends_turn(node):
            return [], None
        if self.chooses_double(node):
            for die in self.double_choices(node):
                found = self._search(Node(node.board, (die,) * 4, "chosen"), target, dead)
                if found is not None:
                    return found[0], die
        else:
            for step, child in self.children(node):
                found = self._search(child, target, dead)
                if found is not None:
                    return [step] + found[0], found[1]
        dead.add(node)
        return None
