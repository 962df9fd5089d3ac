"""Who may issue a command for an actor (domain/acting.py): every cell of the table of cases, and the opening
field that chooses it."""

from __future__ import annotations

import pytest

from domain.acting import check_acting, players_act_option, why_not_acting
from domain.errors import BadArgument, NotYourSeat

HOUSE = frozenset({"marta"})

# (players_act, actor, the credential's player (None: the house's), allowed)
CASES = [
    ("croupier", "anna", None, True),  # the croupier keys in anna's decision
    ("croupier", "marta", None, True),  # the house's own seat
    ("croupier", "anna", "anna", True),  # anna with her own credential
    ("croupier", "anna", "boris", False),  # boris's credential speaks for boris only
    ("croupier", "marta", "marta", False),  # a player's credential never takes the house's seat
    ("self", "anna", None, False),  # at a self table the house does not act for anna
    ("self", "marta", None, True),  # the house's seat stays the operator's
    ("self", "anna", "anna", True),
    ("self", "anna", "boris", False),
    ("self", "marta", "marta", False),
]


@pytest.mark.parametrize(("players_act", "actor", "player", "allowed"), CASES)
def test_who_may_issue_a_command_for_an_actor(players_act, actor, player, allowed):
    reason = why_not_acting(players_act, HOUSE, actor, player)
    assert (reason is None) is allowed
    if not allowed:
        with pytest.raises(NotYourSeat) as refused:
            check_acting(players_act, HOUSE, actor, player)
        assert refused.value.details == {"actor": actor} and actor in refused.value.message


def test_a_refusal_at_a_self_table_says_the_player_acts_for_himself():
    assert "'players_act': 'self'" in why_not_acting("self", HOUSE, "anna", None)  # type: ignore[operator]


@pytest.mark.parametrize(("given", "taken"), [(None, "croupier"), ("croupier", "croupier"), ("self", "self")])
def test_players_act_is_croupier_unless_self_is_asked_for(given, taken):
    assert players_act_option(given) == taken


@pytest.mark.parametrize("given", ["Self", "players", "", 1, True])
def test_players_act_refuses_anything_else_naming_what_is_allowed(given):
    with pytest.raises(BadArgument) as refused:
        players_act_option(given)
    assert "'croupier', 'self'" in refused.value.message
