"""The registry: every game a table can be opened for, one line each, by the name the API uses.

Everything outside a game's package (the API's schemas, the audit, the reserved names, the read model's
rounds) reads the games from here.
"""

from __future__ import annotations

from domain import card_lottery, chemin_de_fer, punto_banco
from domain.game import Game
from domain.rounds import RoundMarks
from domain.events import SERVICE
from domain.sight import SHARED, Concealment


def registry(*games: Game) -> dict[str, Game]:
    return {game.name: game for game in games}


GAMES: dict[str, Game] = registry(
    chemin_de_fer.GAME,
    card_lottery.GAME,
    punto_banco.GAME,
)

ROUND_MARKS: dict[str, RoundMarks] = {name: game.rounds for name, game in GAMES.items()}

# What every game's events hide, for an output that cannot rebuild its table to ask its game (a damaged log):
# event types are one game's each, so one reading serves every table (a type declared twice is refused here).
SECRETS: Concealment = sum((game.concealment for game in GAMES.values()), SHARED)


def reserved_names() -> frozenset[str]:
    """Names no player may take, at any table: every game's accounts, actors and reserved names, and the
    service itself."""
    return frozenset({SERVICE}).union(*(game.reserved_names for game in GAMES.values()))
