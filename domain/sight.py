"""Who sees which card: the face-down cards a table hides, from whom and until when, and each viewer's view.

A card dealt face down (``CardDealt`` with ``face_up`` false) is hidden from everyone but the player it was
dealt to (``to``) until an event of the game shows it to all (REVEALS: Chemin de fer's hands shown, the
lottery cards turned, a holder's card won or played) or the seed of its deck is revealed. The table keeps
the cards hidden now in ``Table.hidden``, a ledger that each event applied updates (``track``): one entry a
face-down card, with the version that dealt it, its shoe, deck, card, player, and ``over`` once its round
is over (what an auditor may see).

A viewer is a kind and, for a player, his name (docs/api.md "What each role sees"):

- a **player** sees the cards dealt to him, and what the game has shown to all;
- an **operator** sees the table as its croupier does: what the game has shown to all;
- an **auditor** sees that, and every card of a round that is over;
- **surveillance** sees every card as it is dealt.

An output is made at a reading moment: a state at its version, a page or an export at the table's head, a
live stream at each event's own moment. ``Sight`` holds the viewer and the ledgers of that moment and of
now; ``conceals`` says which parts of an event's data hold what was hidden when it was recorded, and
``shown_event`` puts ``"??"`` (a card) or None (a total) in each part this viewer may not see yet. Digests
are left as recorded: they are over the full events (docs/design.md "Views per viewer").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PLAYER, OPERATOR, AUDITOR, SURVEILLANCE = "player", "operator", "auditor", "surveillance"
KINDS = (PLAYER, OPERATOR, AUDITOR, SURVEILLANCE)
HIDDEN = "??"

Entry = dict[str, Any]  # {"version", "shoe", "deck", "card", "to", "over"}: JSON, as snapshots store it
Match = Callable[[Entry], bool]


@dataclass(frozen=True)
class Viewer:
    """Who reads: a kind of KINDS and, for a player, his name."""

    kind: str
    player: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"A viewer is one of {', '.join(KINDS)}; got {self.kind!r}.")
        if (self.kind == PLAYER) != (self.player is not None):
            raise ValueError("A player's viewer names the player, and only a player's does.")


EVERYTHING = Viewer(SURVEILLANCE)
CROUPIER = Viewer(OPERATOR)  # what anyone at the table sees: the default view of a table


# --- the ledger: what is hidden now ------------------------------------------------------------------------

SHOWN, OVER = "shown", "over"


# What each event does to the face-down cards it concerns, by its type: SHOWN (shown to all: out of the
# ledger) or OVER (its round is over: an auditor may see it), with which entries it concerns.
REVEALS: Mapping[str, tuple[str, Callable[[Entry, dict[str, Any]], bool]]] = {
    # Chemin de fer A.8 / A.11: both hands are shown, every face-down card of the coup with them.
    "HandsShown": (SHOWN, lambda e, d: e["deck"] == "shoe"),
    # Card lottery B.5: the banker turns the four lottery cards; a holder's matching card is shown as won.
    "LotteryCardsRevealed": (SHOWN, lambda e, d: e["deck"] == "banker"),
    "PrizeWon": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] == d["card"]),
    # Card lottery stage 2: a card led, beaten with or played is on the table for all to see.
    "CardsLed": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] in d["cards"]),
    "CardsBeaten": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] in d["cards"]),
    "CardPlayed": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] == d["card"]),
    # Card lottery B.5: the round is over; its cards set aside stay face down for the players.
    "CardsSetAside": (OVER, lambda e, d: e["deck"] == "dealer"),
    "Stage2Ended": (OVER, lambda e, d: True),
    # Every game: a deck's seed revealed tells every card of it.
    "ShoeRevealed": (SHOWN, lambda e, d: e["shoe"] == d["shoe"]),
}


def track(ledger: list[Entry], kind: str, data: Mapping[str, Any], version: int, deck: str | None) -> list[Entry]:
    """The ledger after an event of type ``kind`` at ``version`` (``deck``: the label of a dealt card's deck)."""
    if kind == "CardDealt":
        if data["face_up"]:
            return ledger
        return [*ledger, {"version": version, "shoe": data["shoe"], "deck": deck, "card": data["card"],
                          "to": data["to"], "over": False}]
    case = REVEALS.get(kind)
    if case is None or not ledger:
        return ledger
    effect, concerns = case
    if effect == SHOWN:
        return [e for e in ledger if not concerns(e, dict(data))]
    return [{**e, "over": True} if concerns(e, dict(data)) else e for e in ledger]


# --- what an event's data hides ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spot:
    """A part of an event's data that was hidden when it was recorded: where it is (keys into the data), whose
    it is, and which entries of a ledger still hide it."""

    path: tuple[Any, ...]
    owner: str
    match: Match


def _piles(field: str) -> Callable[[dict[str, Any], int], list[Spot]]:
    """Each card of a mapping holder -> cards that were the holder's own face-down cards."""
    def spots(data: dict[str, Any], version: int) -> list[Spot]:
        return [Spot((field, holder, i), holder, _own_card(card, holder, version))
                for holder, cards in data[field].items() for i, card in enumerate(cards)]
    return spots


def _own_card(card: str, holder: str, version: int) -> Match:
    return lambda e: e["card"] == card and e["to"] == holder and e["version"] < version


def _dealt(data: dict[str, Any], version: int) -> list[Spot]:
    if data["face_up"]:
        return []
    return [Spot(("card",), data["to"], lambda e: e["version"] == version)]


def _stood(data: dict[str, Any], version: int) -> list[Spot]:
    """Chemin de fer A.9 / A.10: the total of a hand still face down."""
    player = data["player"]
    return [Spot(("total",), player, lambda e: e["to"] == player and e["deck"] == "shoe" and e["version"] < version)]


# The parts of an event's data that hold hidden cards (or what they add up to), by its type.
CONCEALS: Mapping[str, Callable[[dict[str, Any], int], list[Spot]]] = {
    "CardDealt": _dealt,
    "HandStood": _stood,
    "CardsSetAside": _piles("piles"),
    "Stage2Began": _piles("hands"),
}


def conceals(kind: str, data: dict[str, Any], version: int) -> list[Spot]:
    """The parts of an event's data that were hidden when it was recorded."""
    spots = CONCEALS.get(kind)
    return spots(data, version) if spots else []


# --- a viewer at a reading moment --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sight:
    """A viewer at a reading moment: ``at``, the ledger of that moment (None: each event at its own moment,
    as a live stream sends it, when everything it concealed was hidden); ``now``, the table's ledger now
    (None: unknown, so no round counts as over)."""

    viewer: Viewer
    at: tuple[Entry, ...] | None = ()
    now: tuple[Entry, ...] | None = None

    @property
    def everything(self) -> bool:
        return self.viewer.kind == SURVEILLANCE

    def hides(self, owner: str | None, match: Match) -> bool:
        """Whether this viewer is shown "??" for a card of ``owner`` that the ledger entries ``match`` hide."""
        if self.everything or (self.viewer.kind == PLAYER and self.viewer.player == owner):
            return False
        if self.at is not None and not any(match(e) for e in self.at):
            return False  # shown to all by the reading moment
        if self.viewer.kind == AUDITOR and self.now is not None:
            return not all(e["over"] for e in self.now if match(e))
        return True

    def card(self, card: str, owner: str | None, deck: str) -> str:
        """A card of a state's view, as this viewer sees it."""
        hidden = self.hides(owner, lambda e: e["card"] == card and e["to"] == owner and e["deck"] == deck)
        return HIDDEN if hidden else card

    def hidden_count(self, owner: str, deck: str) -> int:
        """How many of ``owner``'s face-down cards of ``deck`` this viewer may not see (the first cards of a
        hand that was dealt face down, then drew face up)."""
        entries = [e for e in self.at or () if e["to"] == owner and e["deck"] == deck]
        return sum(1 for e in entries if self.hides(owner, lambda x, v=e["version"]: x["version"] == v))

    def hides_hand_of(self, player: str) -> bool:
        """Whether any card of ``player``'s is hidden from this viewer (so bounds drawn from his hand are too)."""
        return any(self.hides(player, lambda x, v=e["version"]: x["version"] == v)
                   for e in self.at or () if e["to"] == player)

    def shown_event(self, shown: dict[str, Any]) -> dict[str, Any]:
        """An event (as present.event shows it) as this viewer sees it: every part it may not see yet replaced."""
        if self.everything:
            return shown
        spots = [s for s in conceals(shown["type"], shown["data"], shown["version"]) if self.hides(s.owner, s.match)]
        if not spots:
            return shown
        data = _copied(shown["data"])
        for spot in spots:
            *inner, last = spot.path
            place = data
            for key in inner:
                place = place[key]
            place[last] = None if spot.path == ("total",) else HIDDEN
        return {**shown, "data": data}


def _copied(data: dict[str, Any]) -> dict[str, Any]:
    return {k: ({h: list(v) for h, v in value.items()} if isinstance(value, dict) else value) for k, value in data.items()}


def sight(viewer: Viewer, at: list[Entry] | None, now: list[Entry] | None = None) -> Sight:
    """The Sight of ``viewer`` reading at a moment whose ledger is ``at`` (None: each event at its own
    moment), the table's ledger now being ``now`` (by default ``at``: a reading at the head)."""
    if at is None:
        return Sight(viewer, None, None if now is None else tuple(now))
    return Sight(viewer, tuple(at), tuple(at if now is None else now))
