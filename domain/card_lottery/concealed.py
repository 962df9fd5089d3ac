"""What the Card lottery's events hide and show: the holders' piles and stage-2 hands, the cards turned and played.

The dealer deals each holder's cards face down (the shared CardDealt); the cards a holder sets aside at the end
of a round (B.5) and the hands dealt for stage 2 stay his own, so the events listing them hide each card as its
dealing did. The banker's four lottery cards turned, a holder's card won, and a card led, beaten with or played
in stage 2 are on the table for all; a round's end (cards set aside, stage 2 ended) lets an auditor see its cards.
"""

from __future__ import annotations

from domain.sight import OVER, SHOWN, Concealment, piles

CONCEALMENT = Concealment(
    conceals={
        "CardsSetAside": piles("piles"),
        "Stage2Began": piles("hands"),
    },
    reveals={
        # B.5: the banker turns the four lottery cards; a holder's matching card is shown as won.
        "LotteryCardsRevealed": (SHOWN, lambda e, d: e["deck"] == "banker"),
        "PrizeWon": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] == d["card"]),
        # Stage 2: a card led, beaten with or played is on the table for all to see.
        "CardsLed": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] in d["cards"]),
        "CardsBeaten": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] in d["cards"]),
        "CardPlayed": (SHOWN, lambda e, d: e["deck"] == "dealer" and e["card"] == d["card"]),
        # B.5: the round is over; its cards set aside stay face down for the players.
        "CardsSetAside": (OVER, lambda e, d: e["deck"] == "dealer"),
        "Stage2Ended": (OVER, lambda e, d: True),
    },
)
