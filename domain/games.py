"""The games a table can be opened for, by the name the API uses."""

from __future__ import annotations

from domain.card_lottery.table import CardLotteryTable
from domain.chemin_de_fer.table import ChemindeferTable
from domain.table import Table

GAMES: dict[str, type[Table]] = {
    ChemindeferTable.GAME: ChemindeferTable,
    CardLotteryTable.GAME: CardLotteryTable,
}
