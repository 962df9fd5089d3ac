"""The Card lottery ("Kartochnaya lotereya"), docs/rules/card-lottery.md."""

from domain.card_lottery import concealed, rating, rounds, rules, void
from domain.card_lottery.table import CardLotteryTable
from domain.card_lottery.view import view
from domain.game import Game
from domain.events import DEALER_RULE

GAME = Game(
    name=rules.GAME,
    title="Card lottery",
    table=CardLotteryTable,
    players=(2, rules.MAX_HOLDERS + 2),
    rounds=rounds.MARKS,
    view=view,
    rating=rating.RATING,
    void=void.VOID,
    options=rules.OPTIONS,
    roles={
        "banker": "The banker, one of the players: collects, lays out, spreads the pot and reveals.",
        "dealer": "The dealer, another of the players: deals the holders' cards.",
    },
    accounts=("pot", "kitty"),
    actors=(DEALER_RULE,),
    concealment=concealed.CONCEALMENT,
    opening_events=("TableOpened", "RolesAssigned"),
)
