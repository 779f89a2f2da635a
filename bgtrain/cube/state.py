"""Cube states and the games they are played in: money sessions and matches to N points, with gammon prices
and conversions between match winning chances and equivalent-money-game equities."""

from __future__ import annotations

from dataclasses import dataclass, field

from bgtrain.cube.met import MatchEquityTable, default_met

# The cube's owner, always from the side to move: the one representation in bgtrain (the same strings
# as ``engine.xgid``'s). Seat numbers (0, 1; None for centred), as the benchmark's slots and GNU's
# match ID ("player0", "player1") hold them, are converted at the edges by the functions below.
CENTRED, MOVER, OPPONENT = "centred", "mover", "opponent"
OWNERS = (CENTRED, MOVER, OPPONENT)
_MATCH_ID_HOLDERS = {"centred": None, "player0": 0, "player1": 1}  # engine.match_id's cube_owner


def owner_seen_by(holder: int | None, seat: int) -> str:
    """The owner, as the side in ``seat`` (0 or 1) sees it, of a cube held by seat ``holder`` (None: centred)."""
    if holder is None:
        return CENTRED
    return MOVER if holder == seat else OPPONENT


def holder_seat(owner: str, seat: int) -> int | None:
    """The seat holding the cube that the side in ``seat`` sees as ``owner`` (None: centred)."""
    if owner not in OWNERS:
        raise ValueError(f"unknown cube owner {owner!r}: expected one of {', '.join(OWNERS)}")
    return None if owner == CENTRED else (seat if owner == MOVER else 1 - seat)


def owner_from_match_id(cube_owner: str, player_on_roll: int) -> str:
    """``engine.match_id.MatchState.cube_owner`` ("centred", "player0", "player1") seen by the player on roll."""
    return owner_seen_by(_MATCH_ID_HOLDERS[cube_owner], player_on_roll)


def match_id_owner(owner: str, player_on_roll: int) -> str:
    """The inverse of ``owner_from_match_id``: a match ID's ``cube_owner`` for the player on roll's ``owner``."""
    holder = holder_seat(owner, player_on_roll)
    return "centred" if holder is None else f"player{holder}"


# ---------------------------------------------------------------------------------------------------
# States and rules


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


@dataclass(frozen=True)
class CubeState:
    """The cube: its value and who owns it, from the side to move.

    ``owner``: ``"centred"`` (either side may double), ``"mover"`` (only the side to move may
    redouble) or ``"opponent"`` (the side to move may not double).
    """

    value: int = 1
    owner: str = "centred"

    def __post_init__(self) -> None:
        if (
            isinstance(self.value, bool)
            or not isinstance(self.value, int)
            or not _is_power_of_two(self.value)
        ):
            raise ValueError(f"cube value must be a power of two >= 1, not {self.value!r}")
        if self.owner not in OWNERS:
            raise ValueError(f"unknown cube owner {self.owner!r}: expected one of {', '.join(OWNERS)}")

    def flipped(self) -> CubeState:
        """The same cube seen by the other side."""
        owner = {"mover": "opponent", "opponent": "mover"}.get(self.owner, self.owner)
        return CubeState(self.value, owner)

    def doubled(self) -> CubeState:
        """The cube after the side to move doubles and the opponent takes."""
        return CubeState(2 * self.value, "opponent")


@dataclass(frozen=True)
class MoneyGame:
    """Money play rules.

    ``jacoby``: gammons and backgammons count only once the cube has been turned (GNU's default on).
    ``beavers``: the taker may immediately redouble and keep the cube (reported, as GNU does).
    ``cube_limit``: the highest cube value allowed (a power of two), ``None`` for no limit.
    ``automatic_doubles``: how many tied opening rolls may each double the centred cube (0: off).
    """

    jacoby: bool = True
    beavers: bool = False
    cube_limit: int | None = None
    automatic_doubles: int = 0

    def __post_init__(self) -> None:
        if self.cube_limit is not None and (
            isinstance(self.cube_limit, bool) or not _is_power_of_two(int(self.cube_limit))
        ):
            raise ValueError(f"cube limit must be a power of two >= 1 or None, not {self.cube_limit!r}")
        if self.automatic_doubles < 0:
            raise ValueError(f"automatic_doubles must be >= 0, not {self.automatic_doubles}")

    def can_double(self, cube: CubeState) -> bool:
        """Whether the cube may go from ``cube.value`` to twice that under the limit."""
        return self.cube_limit is None or 2 * cube.value <= self.cube_limit


def initial_cube(game: MoneyGame, opening_ties: int) -> CubeState:
    """The centred cube at the start of a money game after ``opening_ties`` tied opening rolls.

    With automatic doubles each tie doubles the cube, at most ``game.automatic_doubles`` times and
    never past the cube limit; the cube stays centred (it has not been turned, so the Jacoby rule
    still applies).
    """
    if opening_ties < 0:
        raise ValueError(f"opening_ties must be >= 0, not {opening_ties}")
    value = 2 ** min(opening_ties, game.automatic_doubles)
    if game.cube_limit is not None:
        value = min(value, game.cube_limit)
    return CubeState(value, "centred")


@dataclass(frozen=True)
class MatchGame:
    """A game of a match to ``length`` points, seen from the side to move.

    ``score``: (mover's points, opponent's points), each below ``length``. ``crawford``: this is the
    Crawford game (the first game after a side reached ``length - 1``; no doubling). A game with a
    side at ``length - 1`` that is not the Crawford game is post-Crawford.
    """

    length: int
    score: tuple[int, int] = (0, 0)
    crawford: bool = False
    met: MatchEquityTable = field(default_factory=default_met, repr=False)

    def __post_init__(self) -> None:
        mover, opponent = self.score
        if self.length < 1:
            raise ValueError(f"match length must be >= 1, not {self.length}")
        if self.length > self.met.max_length:
            raise ValueError(
                f"a {self.length}-point match is longer than the match equity table's {self.met.max_length}"
            )
        if mover < 0 or opponent < 0:
            raise ValueError(f"score {mover}-{opponent}: scores must be >= 0")
        if mover >= self.length or opponent >= self.length:
            raise ValueError(
                f"score {mover}-{opponent} is beyond a {self.length}-point match: each score must be below "
                f"{self.length}"
            )
        if self.crawford and (self.mover_away == 1) == (self.opponent_away == 1):
            raise ValueError(
                f"score {mover}-{opponent} in a {self.length}-point match cannot be the Crawford game: "
                "exactly one side must be 1-away"
            )

    @property
    def mover_away(self) -> int:
        return self.length - self.score[0]

    @property
    def opponent_away(self) -> int:
        return self.length - self.score[1]

    @property
    def post_crawford(self) -> bool:
        return not self.crawford and (self.mover_away == 1 or self.opponent_away == 1)

    def flipped(self) -> MatchGame:
        """The same game seen by the other side."""
        return MatchGame(self.length, (self.score[1], self.score[0]), self.crawford, self.met)

    def mwc_after(self, mover_points: int) -> float:
        """The mover's match winning chance once this game ends with the mover winning ``mover_points``
        (negative: losing that many). Follows GNU Backgammon's ``getME``."""
        mover_away = self.mover_away - max(mover_points, 0)
        opponent_away = self.opponent_away - max(-mover_points, 0)
        if mover_away <= 0:
            return 1.0
        if opponent_away <= 0:
            return 0.0
        if self.crawford or self.post_crawford:
            # The next game is post-Crawford, and the leader is still 1-away.
            if mover_away == 1:
                return 1.0 - self.met.post(opponent_away)
            return self.met.post(mover_away)
        return self.met.pre(mover_away, opponent_away)


Game = MoneyGame | MatchGame


def match_winning_chance(game: MatchGame) -> float:
    """The mover's match winning chance before this game starts (from the table)."""
    if game.crawford or not game.post_crawford:
        return game.met.pre(game.mover_away, game.opponent_away)
    if game.mover_away == 1:
        return 1.0 - game.met.post(game.opponent_away)
    return game.met.post(game.mover_away)


def mwc_to_emg(mwc, game: MatchGame, cube_value: int = 1):
    """Match winning chance -> equity on the money scale (EMG) for a cube of ``cube_value``.

    Linear, with the mover winning ``cube_value`` points mapped to +1 and losing them to -1
    (GNU Backgammon's ``mwc2eq``). Works on floats, numpy arrays and tensors.
    """
    win, lose = game.mwc_after(cube_value), game.mwc_after(-cube_value)
    return (2.0 * mwc - (win + lose)) / (win - lose)


def emg_to_mwc(emg, game: MatchGame, cube_value: int = 1):
    """Inverse of ``mwc_to_emg`` (GNU Backgammon's ``eq2mwc``)."""
    win, lose = game.mwc_after(cube_value), game.mwc_after(-cube_value)
    return 0.5 * (emg * (win - lose) + (win + lose))


@dataclass(frozen=True)
class GammonPrices:
    """What each outcome adds on the EMG scale at a match score and cube (GNU's ``arGammonPrice``).

    ``win_gammon``: extra equity of winning a gammon rather than a single game; ``win_backgammon``:
    extra of a backgammon over a gammon; ``lose_*`` the same for losses. Money play: all 1 (0 with the
    Jacoby rule and a centred cube). The classic "gammon value" (MWC gained by the gammon over the MWC
    at stake in a single game, win minus loss) is half of ``win_gammon``.
    """

    win_gammon: float
    win_backgammon: float
    lose_gammon: float
    lose_backgammon: float


def gammon_prices(game: Game, cube: CubeState = CubeState()) -> GammonPrices:
    """Gammon and backgammon prices for the mover at this score and cube (``matchequity.c``
    ``getGammonPrice``; money play: 1 or, with the Jacoby rule and a centred cube, 0)."""
    if isinstance(game, MoneyGame):
        price = 0.0 if game.jacoby and cube.owner == "centred" else 1.0
        return GammonPrices(price, price, price, price)
    value = cube.value
    win, lose = game.mwc_after(value), game.mwc_after(-value)
    half_span = (win - lose) / 2.0
    if half_span <= 1e-7:
        return GammonPrices(0.0, 0.0, 0.0, 0.0)
    win_gammon = (game.mwc_after(2 * value) - win) / half_span
    win_backgammon = (game.mwc_after(3 * value) - game.mwc_after(2 * value)) / half_span
    lose_gammon = (lose - game.mwc_after(-2 * value)) / half_span
    lose_backgammon = (game.mwc_after(-2 * value) - game.mwc_after(-3 * value)) / half_span
    return GammonPrices(
        *(max(price, 0.0) for price in (win_gammon, win_backgammon, lose_gammon, lose_backgammon))
    )
