"""Who may issue a command for an actor: the players themselves, the house for them, or the house alone.

A table is opened with ``players_act``: at a ``croupier`` table (the default, a live table whose croupier keys
in the players' decisions) the house's credential issues every command; at a ``self`` table each player issues
his own commands with his own credential, and the house's credential only the commands of the house's seats
(punto banco's croupier). A player's credential never speaks for anyone but its player, nor for a seat of the
house, at any table.
"""

from __future__ import annotations

from domain.errors import BadArgument, NotYourSeat
from domain.words import as_sent

CROUPIER = "croupier"
SELF = "self"
PLAYERS_ACT = (CROUPIER, SELF)


def players_act_option(value: object) -> str:
    """The opening field ``players_act``, checked: one of PLAYERS_ACT (absent: ``croupier``)."""
    if value is None:
        return CROUPIER
    if value not in PLAYERS_ACT:
        raise BadArgument("players_act", f"'players_act' is one of {', '.join(map(repr, PLAYERS_ACT))}; got {as_sent(value)}.")
    return value  # type: ignore[return-value]


def why_not_acting(players_act: str, house: frozenset[str], actor: str, player: str | None) -> str | None:
    """Why a credential may not issue a command whose actor is ``actor``, or None when it may. ``player``:
    the player a player's credential speaks for; None for the house's credentials (operator tokens)."""
    if player is not None:
        if actor != player:
            return f"A player's credential acts for its own player only: this one is {player}'s, the command {actor}'s."
        if actor in house:
            return f"{actor} holds a seat of the house here: the house's commands need an operator's credential."
        return None
    if players_act == SELF and actor not in house:
        return (f"At this table each player acts for himself ('players_act': 'self'): {actor}'s commands need "
                f"{actor}'s own credential.")
    return None


def check_acting(players_act: str, house: frozenset[str], actor: str, player: str | None) -> None:
    """Raises NotYourSeat where ``why_not_acting`` gives a reason."""
    reason = why_not_acting(players_act, house, actor, player)
    if reason is not None:
        raise NotYourSeat(reason, actor)
