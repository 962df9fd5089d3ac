"""Who sees which card: the face-down cards a table hides, from whom and until when, and each viewer's view.

A card dealt face down (``CardDealt`` with ``face_up`` false) is hidden from everyone but the player it was
dealt to (``to``) until an event of the game shows it to all or the seed of its deck is revealed. Which events
hide a part of their data (a face-down card, a stood total, a pile set aside) and which show cards to all is
each game's own, declared in its folder as a ``Concealment`` (``Game.concealment``, domain/game.py); this module
holds the mechanism and the events every game shares. The table keeps the cards hidden now in ``Table.hidden``,
a ledger that each event applied updates (``Concealment.track``): one entry a face-down card, with the version
that dealt it, its shoe, deck, card, player, and ``over`` once its round is over (what an auditor may see).

A viewer is a kind and, for a player, his name (docs/api.md "What each role sees"):

- a **player** sees the cards dealt to him, and what the game has shown to all;
- an **operator** sees the table as its croupier does: what the game has shown to all;
- an **auditor** sees that, and every card of a round that is over;
- **surveillance** sees every card as it is dealt.

An output is made at a reading moment: a state at its version, a page or an export at the table's head, a
live stream at each event's own moment. ``Sight`` holds the viewer and the ledgers of that moment and of
now; ``shown_event`` puts ``"??"`` (a card) or None (a total) in each part this viewer may not see yet and,
under chain rule 3, gives its commitment instead of its salt, so that every reader checks every digest and
none learns a hidden part from it (docs/design.md "Concealed parts (chain rule 3)").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from domain import chain

PLAYER, OPERATOR, AUDITOR, SURVEILLANCE = "player", "operator", "auditor", "surveillance"
KINDS = (PLAYER, OPERATOR, AUDITOR, SURVEILLANCE)
HIDDEN = "??"

Entry = dict[str, Any]  # {"version", "shoe", "deck", "card", "to", "over"} and "void" (a voided round's): JSON
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


# --- what a game's events hide and show: each game declares its own (domain/game.py) -----------------------

SHOWN, OVER = "shown", "over"
SEED_SHOWN = "ShoeRevealed"  # the one event that shows every card of its shoe, a voided round's too

Conceal = Callable[[dict[str, Any], int], list["Spot"]]  # an event's data and version -> the parts it hides
# What an event does to the face-down cards it concerns: SHOWN (shown to all: out of the ledger) or OVER (its
# round is over: an auditor may see it), with which entries of the ledger it concerns.
Reveal = tuple[str, Callable[[Entry, dict[str, Any]], bool]]


@dataclass(frozen=True)
class Spot:
    """A part of an event's data that was hidden when it was recorded: where it is (keys into the data), whose
    it is, which entries of a ledger still hide it, and what a reader who may not see it is shown instead."""

    path: tuple[Any, ...]
    owner: str
    match: Match
    blank: Any = HIDDEN

    @property
    def pointer(self) -> str:
        """Its JSON Pointer inside the event's data, as chain rule 3 names it (domain/chain.py)."""
        return chain.pointer(self.path)


@dataclass(frozen=True, eq=False)
class Concealment:
    """What a game's events hide and show, by event type: ``conceals`` names the parts of an event's data that
    were hidden when it was recorded and whose they are; ``reveals`` what an event shows of the cards hidden so
    far. A game declares its own in its folder (``Game.concealment``); the events every game shares are
    declared here (``SHARED``), and a game's are added to them. Compared by identity, so a Sight holding one
    stays hashable."""

    conceals: Mapping[str, Conceal] = field(default_factory=dict)
    reveals: Mapping[str, Reveal] = field(default_factory=dict)

    def __add__(self, other: "Concealment") -> "Concealment":
        both = [name for name in (*other.conceals, *other.reveals) if name in self.conceals or name in self.reveals]
        if both:
            raise ValueError(f"event types declared twice: {', '.join(sorted(set(both)))}")
        return Concealment({**self.conceals, **other.conceals}, {**self.reveals, **other.reveals})

    def spots(self, kind: str, data: dict[str, Any], version: int) -> list[Spot]:
        """The parts of an event's data that were hidden when it was recorded."""
        spots = self.conceals.get(kind)
        return spots(data, version) if spots else []

    def track(self, ledger: list[Entry], kind: str, data: Mapping[str, Any], version: int,
              deck: str | None) -> list[Entry]:
        """The ledger after an event of type ``kind`` at ``version`` (``deck``: the label of a dealt card's deck)."""
        if kind == "CardDealt":
            if data["face_up"]:
                return ledger
            return [*ledger, {"version": version, "shoe": data["shoe"], "deck": deck, "card": data["card"],
                              "to": data["to"], "over": False}]
        case = self.reveals.get(kind)
        if case is None or not ledger:
            return ledger
        effect, concerns = case
        if effect == SHOWN:
            # A card of a voided round (domain/corrections.py) was never shown by the game: only its shoe's seed
            # shows it, never the next round's showdown.
            return [e for e in ledger if not concerns(e, dict(data)) or (e.get("void") and kind != SEED_SHOWN)]
        return [{**e, "over": True} if concerns(e, dict(data)) else e for e in ledger]


def piles(field_name: str) -> Conceal:
    """Each card of a mapping holder -> cards, each one the holder's own face-down card."""
    def spots(data: dict[str, Any], version: int) -> list[Spot]:
        return [Spot((field_name, holder, i), holder, own_card(card, holder, version))
                for holder, cards in data[field_name].items() for i, card in enumerate(cards)]
    return spots


def own_card(card: str, holder: str, version: int) -> Match:
    """The entries hiding ``card``, dealt to ``holder`` before ``version``."""
    return lambda e: e["card"] == card and e["to"] == holder and e["version"] < version


def _dealt(data: dict[str, Any], version: int) -> list[Spot]:
    if data["face_up"]:
        return []
    return [Spot(("card",), data["to"], lambda e: e["version"] == version)]


# The events every game shares (domain/events.py): a card dealt face down hides it from all but the player it
# was dealt to; a deck's seed revealed tells every card of that deck.
SHARED = Concealment(
    conceals={"CardDealt": _dealt},
    reveals={SEED_SHOWN: (SHOWN, lambda e, d: e["shoe"] == d["shoe"])},
)


# --- a viewer at a reading moment --------------------------------------------------------------------------


@dataclass(frozen=True)
class Sight:
    """A viewer at a reading moment: ``at``, the ledger of that moment (None: each event at its own moment,
    as a live stream sends it, when everything it concealed was hidden); ``now``, the table's ledger now
    (None: unknown, so no round counts as over); ``concealment``, what the game's events hide."""

    viewer: Viewer
    at: tuple[Entry, ...] | None = ()
    now: tuple[Entry, ...] | None = None
    concealment: Concealment = SHARED

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
        """An event (as present.event shows it) as this viewer sees it: every part it may not see yet replaced
        by its blank and, under chain rule 3, its salt replaced by its commitment (``concealed``), so that the
        reader checks the digest and learns nothing of the part (docs/design.md "Concealed parts")."""
        if self.everything:
            return shown
        spots = [s for s in self.concealment.spots(shown["type"], shown["data"], shown["version"])
                 if self.hides(s.owner, s.match)]
        if not spots:
            return shown
        salts = dict(shown.get("salts") or {})
        concealed = {}
        for spot in spots:
            if spot.pointer in salts:
                concealed[spot.pointer] = chain.commit(salts.pop(spot.pointer), chain.value_at(shown["data"], spot.pointer))
        out = {k: v for k, v in shown.items() if k not in ("salts", "concealed")}
        out["data"] = chain.committed(shown["data"], {spot.pointer: spot.blank for spot in spots})
        if salts:
            out["salts"] = salts
        if concealed:
            out["concealed"] = concealed
        return out


def sight(viewer: Viewer, at: list[Entry] | None, now: list[Entry] | None = None,
          concealment: Concealment = SHARED) -> Sight:
    """The Sight of ``viewer`` reading at a moment whose ledger is ``at`` (None: each event at its own
    moment), the table's ledger now being ``now`` (by default ``at``: a reading at the head), ``concealment``
    saying what the game's events hide."""
    if at is None:
        return Sight(viewer, None, None if now is None else tuple(now), concealment)
    return Sight(viewer, tuple(at), tuple(at if now is None else now), concealment)
