"""Each player's part in each finished round, for his history across tables (GET /players/{player}/rounds).

Kept beside the round tracker by the table's projection (service/readmodel/projection.py), from the same events
as the events API shows them, with a state that is plain JSON (kept in the table's row between batches). A
player takes part in a round when he has money at stake in it, money moves to or from him in it, or cards are
dealt to him in it. His part: what he staked and on what, what the round's payments moved for him (his
result), his balance at the table after it, and what his stakes were expected to cost him (the theoretical
loss, as GET /tables/{id}/decisions rates them: each game's ``Rating``, domain/game.py). Nothing here shows a
card.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from domain.corrections import MOVEMENTS
from domain.games import GAMES

Event = dict[str, Any]
# A row's place in a player's history: the notification that ends the round, times this, plus the seat's
# index at the table (two seats of a table that fold to one name stay two rows). Tables seat far fewer.
SEATS = 256


class Seats:
    """One table's players' parts in its open round, their balances, and what the game needs carried over
    from round to round (Chemin de fer's banker and the stakes of a coup dealt again)."""

    def __init__(self, game: str, players: list[str], state: dict[str, Any]) -> None:
        self.game, self.players, self.state = game, players, state
        self.rules: dict[str, Any] = state["rules"]
        # The game's own reading of its stakes (domain/game.py Rating), which keeps what it carries from event to
        # event in this state (Chemin de fer: "banker" and "stakes", the keys it always had here).
        self.rating, self.secrets = GAMES[game].rating, GAMES[game].secrets
        self.joining = GAMES[game].joining_events

    @staticmethod
    def opened(rules: dict[str, Any], players: list[str]) -> dict[str, Any]:
        """The state of a table just opened with these rules and players."""
        return {"rules": rules, "seq": 0, "balances": {p: 0 for p in players}, "banker": "", "stakes": {},
                "round": None, "parts": {}}

    def note(self, seq: int, e: Event, open_round: int | None) -> None:
        """Reads the next event; ``open_round``: the number of the round it belongs to (None: between rounds)."""
        st = self.state
        if open_round is not None and st["round"] != open_round:
            st["round"], st["parts"] = open_round, {}
        in_round = open_round is not None
        kind, data = e["type"], e["data"]
        if kind in self.joining and data["player"] not in st["balances"]:
            # A player not named at the opening (punto banco's bettor): seated after the named ones.
            st.setdefault("joined", []).append(data["player"])
            st["balances"][data["player"]] = 0
        if kind in MOVEMENTS:  # a payment, or one a void reversed
            self._paid(data, in_round)
        elif in_round and kind == "StakeReturned" and data["player"] in st["balances"]:
            self._part(data["player"])  # his stake went back: the round voided is in his history, as void
        elif in_round and kind == "CardDealt" and data["to"] in st["balances"]:
            self._part(data["to"])
        elif in_round:  # cards a game's event hands out face down (the Card lottery's stage-2 hands)
            for spot in self.secrets.spots(kind, data, e["version"]):
                if spot.owner in st["balances"]:
                    self._part(spot.owner)
        for player, spot, amount, edge in self.rating.settled(e, self.rules, st):
            if in_round:
                self._stake(player, spot, amount, amount * edge)
        st["seq"] = seq

    def finish(self, finished: dict[str, Any]) -> list[dict[str, Any]]:
        """The players' rows of a round just finished (``finished``: the tracker's row of it), each with its
        ``key`` in the players' histories."""
        st = self.state
        parts = st["parts"] if st["round"] == finished["round"] else {}
        st["round"], st["parts"] = None, {}
        rows = []
        for name, part in parts.items():
            loss = Fraction(*part["loss"]) if self.rating.rated else None
            rows.append({
                "player": name, "key": st["seq"] * SEATS + self._seat(name) % SEATS, "game": self.game,
                **{k: finished[k] for k in ("round", "first_version", "last_version", "started_at", "ended_at",
                                            "summary")},
                "stakes": part["stakes"], "staked": sum(part["stakes"].values()), "result": part["result"],
                "balance": st["balances"][name], "loss": None if loss is None else [loss.numerator, loss.denominator],
            })
        return rows

    def _seat(self, name: str) -> int:
        """The player's seat: his place among the names listed at the opening, then among those who joined."""
        if name in self.players:
            return self.players.index(name)
        return len(self.players) + self.state["joined"].index(name)

    def _part(self, name: str) -> dict[str, Any]:
        parts = self.state["parts"]
        if name not in parts:
            parts[name] = {"stakes": {}, "result": 0, "loss": [0, 1]}
        return parts[name]

    def _paid(self, data: dict[str, Any], in_round: bool) -> None:
        balances = self.state["balances"]
        for who, sign in ((data["payer"], -1), (data["payee"], 1)):
            if who not in balances:
                continue  # the house, the pot, the bank, the kitty
            balances[who] += sign * data["amount"]
            if in_round:
                self._part(who)["result"] += sign * data["amount"]

    def _stake(self, name: str, on: str, amount: int, loss: Fraction) -> None:
        if name not in self.state["balances"]:
            return
        part = self._part(name)
        part["stakes"][on] = part["stakes"].get(on, 0) + amount
        total = Fraction(*part["loss"]) + loss
        part["loss"] = [total.numerator, total.denominator]
