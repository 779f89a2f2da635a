"""Match equity tables (METs) in GNU Backgammon's XML format, and match winning chances read from them.

A match equity table gives a player's match winning chance (MWC) at the start of a game, from how many
points each side still needs ("away"). GNU Backgammon's format (``met.dtd``, shipped beside the default
table in ``bgtrain/data/met/``) holds two tables:

* ``pre-crawford-table``: ``length`` rows of ``length`` ``<me>`` values; row ``i``, entry ``j`` (from 0) is
  the MWC of a player ``i + 1`` away against an opponent ``j + 1`` away, in a game that is not
  post-Crawford. Rows and columns for 1-away are Crawford games (no cube).
* ``post-crawford-table``: entry ``n`` is the MWC of the trailer ``n + 1`` away against a leader 1-away,
  in a post-Crawford game. One table with ``player="both"`` (or no ``player``), or one per player
  (``player="0"``, ``player="1"``).

Only explicit tables are read (``type="explicit"`` or no type); GNU Backgammon can also generate tables
from parameters (``type="zadeh"``, ``type="mec"``), which are rejected here with a clear error.
Malformed files raise ``ValueError`` naming the file and the problem.

Longer matches than the file covers are served as GNU Backgammon serves them (``matchequity.c``
``ExtendMET`` and ``initPostCrawfordMET``), up to ``MAX_MATCH_LENGTH``: pre-Crawford entries from David
Montgomery's normal approximation, post-Crawford entries from Zadeh's recurrence with a 25% trailer
gammon rate. ``MatchEquityTable.native_length`` says how far the file's own values reach.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from xml.etree import ElementTree

MAX_MATCH_LENGTH = 64  # GNU Backgammon's MAXSCORE
DEFAULT_MET = "data/met/Kazaross-XG2.xml"
COMPLEMENT_TOLERANCE = 1e-3  # pre[i][j] + pre[j][i] must be 1 within this (tables are rounded to 5 digits)

# matchequity.c ExtendMET: standard deviation of points won per game, by the player's away score (1..10);
# 1.77 beyond 10-away.
_EXTENSION_STDDEV = (0.0, 1.24, 1.27, 1.47, 1.50, 1.60, 1.61, 1.66, 1.68, 1.70, 1.72, 1.77)
_POST_CRAWFORD_GAMMON_RATE = 0.25  # matchequity.c GAMMONRATE, for extending the post-Crawford table


@dataclass(frozen=True, eq=False)
class MatchEquityTable:
    """A match equity table, extended to ``MAX_MATCH_LENGTH``. Compared and hashed by identity (tables are
    loaded once and shared; ``default_met`` is cached).

    ``pre_crawford[i][j]``: MWC of a player ``i + 1`` away against ``j + 1`` away (not post-Crawford).
    ``post_crawford[n]``: MWC of the trailer ``n + 1`` away against a leader 1-away, post-Crawford.
    """

    name: str
    description: str
    native_length: int  # the length the file declares; entries beyond it are extrapolated
    pre_crawford: tuple[tuple[float, ...], ...]
    post_crawford: tuple[float, ...]
    source: str = ""

    @property
    def max_length(self) -> int:
        return len(self.pre_crawford)

    def pre(self, away: int, opponent_away: int) -> float:
        """MWC of a player ``away`` points from winning against ``opponent_away``, not post-Crawford.

        ``away == 1`` or ``opponent_away == 1`` is the Crawford game.
        """
        self._check_away(away, "away")
        self._check_away(opponent_away, "opponent_away")
        return self.pre_crawford[away - 1][opponent_away - 1]

    def post(self, trailer_away: int) -> float:
        """MWC of the trailer ``trailer_away`` points away against a leader 1-away, post-Crawford."""
        self._check_away(trailer_away, "trailer_away")
        return self.post_crawford[trailer_away - 1]

    def _check_away(self, away: int, what: str) -> None:
        if not 1 <= away <= self.max_length:
            raise ValueError(f"match equity table: {what}={away} is outside 1..{self.max_length}")


def load_met(path: str | Path) -> MatchEquityTable:
    """Read a GNU Backgammon XML match equity table from ``path``; ``ValueError`` if it is malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"match equity table {str(path)!r}: cannot be read ({error.strerror})") from None
    return parse_met(text, source=str(path))


@functools.lru_cache(maxsize=1)
def default_met() -> MatchEquityTable:
    """The default table, Kazaross XG2 (25 points), as GNU Backgammon ships it."""
    text = resources.files("bgtrain").joinpath(DEFAULT_MET).read_text(encoding="utf-8")
    return parse_met(text, source=DEFAULT_MET)


def parse_met(text: str, source: str = "<string>") -> MatchEquityTable:
    """Parse the XML text of a match equity table. ``source`` names it in error messages."""

    def fail(message: str) -> ValueError:
        return ValueError(f"match equity table {source!r}: {message}")

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise fail(f"not well-formed XML ({error})") from None
    if root.tag != "met":
        raise fail(f"the root element is <{root.tag}>, expected <met>")

    info = root.find("info")
    if info is None:
        raise fail("no <info> element")
    name = (info.findtext("name") or "").strip()
    description = (info.findtext("description") or "").strip()
    length_text = info.findtext("length")
    if length_text is None:
        raise fail("no <length> in <info>")
    try:
        length = int(length_text.strip())
    except ValueError:
        raise fail(f"<length> is {length_text.strip()!r}, not a whole number") from None
    if not 1 <= length <= MAX_MATCH_LENGTH:
        raise fail(f"<length> {length} is outside 1..{MAX_MATCH_LENGTH}")

    pre_tables = root.findall("pre-crawford-table")
    if len(pre_tables) != 1:
        raise fail(f"expected one <pre-crawford-table>, found {len(pre_tables)}")
    pre = _read_rows(pre_tables[0], "pre-crawford-table", fail)
    if len(pre) != length:
        raise fail(f"<pre-crawford-table> has {len(pre)} rows, expected {length} (the <length>)")
    for i, row in enumerate(pre):
        if len(row) != length:
            raise fail(f"<pre-crawford-table> row {i + 1} has {len(row)} <me> values, expected {length}")
    for i in range(length):
        for j in range(length):
            if abs(pre[i][j] + pre[j][i] - 1.0) > COMPLEMENT_TOLERANCE:
                raise fail(
                    f"<pre-crawford-table> is inconsistent: {i + 1}-away vs {j + 1}-away is {pre[i][j]} and "
                    f"{j + 1}-away vs {i + 1}-away is {pre[j][i]}; they must add up to 1"
                )

    post_tables = root.findall("post-crawford-table")
    if not post_tables:
        raise fail("no <post-crawford-table>")
    post_by_player: dict[str, list[float]] = {}
    for table in post_tables:
        player = table.get("player", "both")
        if player not in ("both", "0", "1"):
            raise fail(f"<post-crawford-table player={player!r}>: player must be 'both', '0' or '1'")
        rows = _read_rows(table, f"post-crawford-table player={player!r}", fail)
        if len(rows) != 1:
            raise fail(f"<post-crawford-table player={player!r}> has {len(rows)} rows, expected 1")
        if player in post_by_player:
            raise fail(f"two post-Crawford tables for player={player!r}")
        post_by_player[player] = rows[0]
    if set(post_by_player) not in ({"both"}, {"0", "1"}):
        raise fail(
            "post-Crawford tables: give one with player='both' (or no player) or one each for players "
            f"'0' and '1', not {sorted(post_by_player)}"
        )
    tables = list(post_by_player.values())
    if len(tables) == 2 and any(abs(a - b) > 1e-12 for a, b in zip(tables[0], tables[1], strict=False)):
        # GNU Backgammon keys these by player number; our states are seen from the side to move and
        # carry no player number, so only symmetric tables have a meaning here.
        raise fail("post-Crawford tables differ between players '0' and '1', which bgtrain does not support")
    post = min(tables, key=len)
    # A length-N match can be post-Crawford with the trailer N-away at most; GNU Backgammon's own files
    # sometimes stop at N - 1 (the first "legal" post-Crawford score), extended below like the rest.
    if len(post) < length - 1:
        raise fail(f"the post-Crawford table has {len(post)} entries, expected at least {length - 1}")
    if abs(post[0] - 0.5) > COMPLEMENT_TOLERANCE:
        raise fail(f"the post-Crawford entry for 1-away vs 1-away is {post[0]}, expected 0.5")

    return MatchEquityTable(
        name=name,
        description=description,
        native_length=length,
        pre_crawford=_extend_pre_crawford(pre),
        post_crawford=_extend_post_crawford(post[:length]),
        source=source,
    )


def _read_rows(table: ElementTree.Element, what: str, fail) -> list[list[float]]:
    kind = table.get("type", "explicit")
    if kind != "explicit":
        raise fail(
            f"<{what}> has type={kind!r}: only explicit tables (rows of <me> values) are supported, "
            "not tables generated from parameters"
        )
    rows = []
    for i, row in enumerate(table.findall("row")):
        values = []
        for j, cell in enumerate(row.findall("me")):
            raw = (cell.text or "").strip()
            try:
                value = float(raw)
            except ValueError:
                raise fail(f"<{what}> row {i + 1} entry {j + 1} is {raw!r}, not a number") from None
            if not 0.0 <= value <= 1.0:
                raise fail(f"<{what}> row {i + 1} entry {j + 1} is {value}, not a probability in [0, 1]")
            values.append(value)
        rows.append(values)
    return rows


def _normal_area(low: float, high: float, sigma: float) -> float:
    """Area under the centred normal density with standard deviation ``sigma`` between ``low`` and ``high``."""
    return 0.5 * (math.erf(high / (sigma * math.sqrt(2.0))) - math.erf(low / (sigma * math.sqrt(2.0))))


def _extend_pre_crawford(pre: list[list[float]]) -> tuple[tuple[float, ...], ...]:
    """matchequity.c ``ExtendMET``: David Montgomery's extension, independent of the native entries."""
    native = len(pre)
    table = [[0.0] * MAX_MATCH_LENGTH for _ in range(MAX_MATCH_LENGTH)]
    for i in range(native):
        table[i][:native] = pre[i]
    for i in range(native, MAX_MATCH_LENGTH):
        away = i + 1
        stddev = _EXTENSION_STDDEV[away] if away <= 10 else 1.77
        for j in range(i + 1):
            opponent_away = j + 1
            opponent_stddev = _EXTENSION_STDDEV[opponent_away] if opponent_away <= 10 else 1.77
            games = (away + opponent_away) / 2.0
            sigma = math.sqrt(stddev**2 + opponent_stddev**2) * math.sqrt(games)
            lead = away - opponent_away  # >= 0: the opponent needs fewer points
            table[i][j] = _normal_area(lead, 6.0 * sigma, sigma) if 6.0 * sigma > lead else 0.0
    for i in range(MAX_MATCH_LENGTH):
        for j in range(native if i < native else i + 1, MAX_MATCH_LENGTH):
            table[i][j] = 1.0 - table[j][i]
    return tuple(tuple(row) for row in table)


def _extend_post_crawford(post: list[float]) -> tuple[float, ...]:
    """matchequity.c ``initPostCrawfordMET``: the trailer wins a game (single or, at the gammon rate, a
    gammon) half the time; entries past the file's come from this recurrence.

    GNU Backgammon recomputes the file's last native entry too; bgtrain keeps the file's value.
    """
    table = list(post)
    gammon = _POST_CRAWFORD_GAMMON_RATE
    for i in range(len(table), MAX_MATCH_LENGTH):
        after_gammon = table[i - 4] if i >= 4 else 1.0
        after_single = table[i - 2] if i >= 2 else 1.0
        value = gammon * 0.5 * after_gammon + (1.0 - gammon) * 0.5 * after_single
        # Zadeh's free-drop corrections: the leader's free drop is worth 1.5% at 2-away, 0.4% at 4-away.
        value -= {1: 0.015, 3: 0.004}.get(i, 0.0)
        table.append(value)
    return tuple(table)
