"""Chemin de fer ("Zheleznaya doroga"), docs/rules/chemin-de-fer.md."""

from domain.chemin_de_fer import concealed, rating, roads, rounds, rules, void
from domain.chemin_de_fer.table import ChemindeferTable
from domain.chemin_de_fer.view import view
from domain.game import Game
from domain.events import DEALER_RULE

GAME = Game(
    name=rules.GAME,
    title="Chemin de fer",
    table=ChemindeferTable,
    players=(rules.MIN_PLAYERS, rules.MAX_PLAYERS),
    rounds=rounds.MARKS,
    view=view,
    rating=rating.RATING,
    roads=roads.ROADS,
    void=void.VOID,
    options=rules.OPTIONS,
    accounts=("house",),
    actors=(DEALER_RULE,),
    concealment=concealed.CONCEALMENT,
    reserved=("banker", "punter"),  # the two hands' names
    held=void.held,
)
