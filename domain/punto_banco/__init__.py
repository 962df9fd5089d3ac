"""Punto banco: casino baccarat with every draw fixed and the house as bank (docs/rules/punto-banco.md)."""

from domain.game import Game
from domain.punto_banco import rating, roads, rounds, rules, void
from domain.punto_banco.table import PuntoBancoTable
from domain.punto_banco.view import view
from domain.events import DEALER_RULE

GAME = Game(
    name=rules.GAME,
    title="Punto banco",
    table=PuntoBancoTable,
    players=(1, rules.MAX_PLAYERS + 1),  # the croupier and the players who stake (an open table: perhaps none)
    rounds=rounds.MARKS,
    view=view,
    rating=rating.RATING,
    roads=roads.ROADS,
    void=void.VOID,
    options=rules.OPTIONS,
    roles={
        "croupier": "The croupier, one of the players listed, who does not stake: shuffles, closes the stakes "
                    "and deals.",
    },
    accounts=(rules.HOUSE,),
    actors=(DEALER_RULE,),
    # the hands', the spots', the burn's names, and whom an open table offers its stakes to
    reserved=(rules.PLAYER, rules.BANKER, rules.TIE, "burn", rules.ANYONE),
    opening_events=("TableOpened", "RolesAssigned"),
    joining_events=("BettorJoined",),  # an open table's bettor, with his first stake
    # Nothing hidden of its own: its only face-down cards are the burned ones, shared CardDealt events.
)
