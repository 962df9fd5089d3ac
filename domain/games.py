"""The games a table can be opened for, by the name the API uses."""

from __future__ import annotations

from domain.card_lottery import rounds as lottery_rounds
from domain.card_lottery.table import CardLotteryTable
from domain.chemin_de_fer import rounds as chemin_rounds
from domain.chemin_de_fer.table import ChemindeferTable
from domain.rounds import RoundMarks
from domain.table import Table

GAMES: dict[str, type[Table]] = {
    ChemindeferTable.GAME: ChemindeferTable,
    CardLotteryTable.GAME: CardLotteryTable,
}

ROUND_MARKS: dict[str, RoundMarks] = {
    ChemindeferTable.GAME: chemin_rounds.MARKS,
    CardLotteryTable.GAME: lottery_rounds.MARKS,
}
