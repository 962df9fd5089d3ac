"""The rules of punto banco as small pure functions (docs/rules/punto-banco.md).

Each function is named after the rule it implements and quotes it. Points, naturals and the classic
draw rules are the baccarat core's (domain/baccarat.py), the same as Chemin de fer's; what is punto
banco's own is here: every draw is fixed (nobody chooses), the house banks every coup, players back the
player's hand, the banker's hand or a tie, and the house pays winners and takes a commission on banker
wins. Nothing here reads a clock or a random source: a shoe's order comes in as an argument.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from math import gcd
from typing import Any

from domain.errors import BadArgument, InvalidPlayers, InvalidRules
from domain.game import OptionSpec
from domain.words import as_sent

GAME = "punto-banco"
MIN_PLAYERS, MAX_PLAYERS = 1, 14

# The three spots a stake can back, which are also the three outcomes of a coup.
PLAYER, BANKER, TIE = "player", "banker", "tie"
SPOTS = (PLAYER, BANKER, TIE)
# Backing both hands at once cancels out but for the commission; the house refuses it.
OPPOSITE = {PLAYER: BANKER, BANKER: PLAYER}

# Whom an open table offers its stakes to in ``expects``: anyone (never a player's name: reserved).
ANYONE = "*"
# Who acts: the croupier named when the table opens, the players at the table; the house is an account.
HOUSE = "house"

DECKS_ALLOWED = (6, 8)
TIE_PAYS_ALLOWED = (8, 9)
MIN_STOP_CARD, MAX_STOP_CARD = 12, 52
MAX_COMMISSION_PERCENT = 10
# Money stays exact in every JSON reader, including those that hold numbers as doubles: even a tie
# paying 9 to 1 on the largest stake stays far below 2**53.
MAX_STAKE_LIMIT = 10**12

DEFAULT_RULES: dict[str, Any] = {
    "decks": 8,
    "stop_card": 16,
    "commission_percent": 5,
    "tie_pays": 8,
    "min_stake": 20,
    "max_stake": 10_000,
}
# Options a studio's table may set, recorded only when given: a table opened without them is recorded (and
# replays) exactly as every table was before they existed. Absent, each means what its default says.
OPEN_SEATS = "open_seats"
MIN_WINDOW, MAX_WINDOW = "min_window", "max_window"
MAX_EXPOSURE = "max_exposure"
# The most a spot takes, where it differs from max_stake: the banker's and the tie's own limits.
SPOT_LIMITS = {BANKER: "max_banker_stake", TIE: "max_tie_stake"}
LATER_DEFAULTS: dict[str, Any] = {OPEN_SEATS: False, MIN_WINDOW: 5, MAX_WINDOW: 60,
                                  SPOT_LIMITS[BANKER]: None, SPOT_LIMITS[TIE]: None, MAX_EXPOSURE: None}
WINDOW_LIMIT = 3600  # a betting window lasts at most an hour, whatever a table allows
MAX_EXPOSURE_LIMIT = 10**15  # every stake of the largest open table, paid at the best odds, stays below 2**53
# An open table's bettors, besides the players named at the opening: its state lists every one of them.
MAX_BETTORS = 5000

# The options as the API's documents show them; ``resolve_rules`` is what checks them (decks and tie_pays
# take one of two values, and max_stake must reach min_stake and a banker stake).
OPTIONS = (
    OptionSpec("decks", "int", DEFAULT_RULES["decks"], min(DECKS_ALLOWED), max(DECKS_ALLOWED),
               doc="52-card decks in the shoe: 6 or 8."),
    OptionSpec("stop_card", "int", DEFAULT_RULES["stop_card"], MIN_STOP_CARD, MAX_STOP_CARD,
               doc="The stop card stands this many cards from the end; the coup in which it comes out is "
                   "finished and one more coup is played."),
    OptionSpec("commission_percent", "int", DEFAULT_RULES["commission_percent"], 0, MAX_COMMISSION_PERCENT,
               doc="The house's commission on a winning banker stake, never rounded: banker stakes are "
                   "multiples of 100 / gcd(100, percent)."),
    OptionSpec("tie_pays", "int", DEFAULT_RULES["tie_pays"], min(TIE_PAYS_ALLOWED), max(TIE_PAYS_ALLOWED),
               doc="A winning tie stake is paid 8 or 9 to 1."),
    OptionSpec("min_stake", "int", DEFAULT_RULES["min_stake"], 1, MAX_STAKE_LIMIT,
               doc="The least total a player may have on a spot in a coup."),
    OptionSpec("max_stake", "int", DEFAULT_RULES["max_stake"], 1, MAX_STAKE_LIMIT,
               doc="The most total a player may have on a spot in a coup; at least min_stake."),
    OptionSpec(SPOT_LIMITS[BANKER], "int", DEFAULT_RULES["max_stake"], 1, MAX_STAKE_LIMIT,
               doc="The most total a player may have on the banker in a coup, from min_stake to max_stake "
                   "(absent: max_stake)."),
    OptionSpec(SPOT_LIMITS[TIE], "int", DEFAULT_RULES["max_stake"], 1, MAX_STAKE_LIMIT,
               doc="The most total a player may have on a tie in a coup, from min_stake to max_stake "
                   "(absent: max_stake)."),
    OptionSpec(MAX_EXPOSURE, "int", MAX_EXPOSURE_LIMIT, 1, MAX_EXPOSURE_LIMIT,
               doc="The most the house may lose on one coup, counted from every stake on the table "
                   "(absent: no limit but the stakes' own)."),
    OptionSpec(OPEN_SEATS, "bool", False,
               doc="An open table: any player may stake without being named at the opening; his first "
                   "stake records that he joined."),
    OptionSpec(MIN_WINDOW, "int", LATER_DEFAULTS[MIN_WINDOW], 1, WINDOW_LIMIT,
               doc="The shortest betting window the croupier may open, in seconds."),
    OptionSpec(MAX_WINDOW, "int", LATER_DEFAULTS[MAX_WINDOW], 1, WINDOW_LIMIT,
               doc="The longest betting window the croupier may open, in seconds; at least min_window."),
)

WON, LOST, PUSH = "won", "lost", "push"


class StakeRefused(BadArgument):
    """A stake the table refuses (limits, the commission's unit, opposite spots); ``details`` says what
    would have been allowed."""

    def __init__(self, field: str, message: str, **allowed: Any) -> None:
        super().__init__(field, message)
        self.details.update(allowed)
        self.allowed = allowed


# --- options ---------------------------------------------------------------------------------------

def resolve_rules(options: Mapping[str, Any]) -> dict[str, Any]:
    """The table's options with defaults filled in; refuses unknown options and values out of range.

    decks 6 or 8 (default 8); stop_card 12-52 cards from the end (default 16); commission_percent 0-10
    (default 5); tie_pays 8 or 9 to 1 (default 8); min_stake from 1 and max_stake from min_stake, both
    at most 10**12 (defaults 20 and 10,000). Recorded when the table opens and never changed, so a
    replay runs under the rules the table was played with.
    """
    if not isinstance(options, Mapping):
        raise BadArgument("rules", "'rules' must be an object of options.")
    known = {**DEFAULT_RULES, **LATER_DEFAULTS}
    unknown = sorted(str(name) for name in options if name not in known)
    if unknown:
        raise InvalidRules(
            unknown[0],
            f"Unknown rules option '{unknown[0]}' for {GAME}; the options are: {', '.join(known)}.",
        )
    rules = {**DEFAULT_RULES, **options}
    _require_one_of(rules, "decks", DECKS_ALLOWED)
    _require_int(rules, "stop_card", MIN_STOP_CARD, MAX_STOP_CARD)
    _require_int(rules, "commission_percent", 0, MAX_COMMISSION_PERCENT)
    _require_one_of(rules, "tie_pays", TIE_PAYS_ALLOWED)
    _require_int(rules, "min_stake", 1, MAX_STAKE_LIMIT)
    _require_int(rules, "max_stake", rules["min_stake"], MAX_STAKE_LIMIT, low_name="min_stake")
    unit = commission_unit(rules["commission_percent"])
    if smallest_banker_stake(rules) > rules["max_stake"]:
        raise InvalidRules(
            "max_stake",
            f"With a {rules['commission_percent']}% commission a banker stake must be a multiple of {unit}, "
            f"and there is none from min_stake {rules['min_stake']} to max_stake {rules['max_stake']}; "
            f"raise max_stake to at least {smallest_banker_stake(rules)}.",
        )
    _check_studio_options(rules)
    return rules


def _check_studio_options(rules: dict[str, Any]) -> None:
    """The options recorded only when given: the spots' own limits within the table's, the exposure, an open
    table, the betting window's bounds."""
    for spot, name in SPOT_LIMITS.items():
        if name in rules:
            _require_int(rules, name, rules["min_stake"], rules["max_stake"], low_name="min_stake")
    if SPOT_LIMITS[BANKER] in rules and smallest_banker_stake(rules) > spot_limit(rules, BANKER):
        raise InvalidRules(SPOT_LIMITS[BANKER], f"No banker stake fits from min_stake {rules['min_stake']} to "
                           f"{SPOT_LIMITS[BANKER]} {rules[SPOT_LIMITS[BANKER]]}: banker stakes are multiples of "
                           f"{commission_unit(rules['commission_percent'])}; raise it to at least "
                           f"{smallest_banker_stake(rules)}.")
    if MAX_EXPOSURE in rules:
        _require_int(rules, MAX_EXPOSURE, 1, MAX_EXPOSURE_LIMIT)
    if OPEN_SEATS in rules and not isinstance(rules[OPEN_SEATS], bool):
        raise InvalidRules(OPEN_SEATS, f"Option '{OPEN_SEATS}' must be true or false; got {as_sent(rules[OPEN_SEATS])}.")
    if MIN_WINDOW in rules:
        _require_int(rules, MIN_WINDOW, 1, WINDOW_LIMIT)
    if MAX_WINDOW in rules:
        _require_int(rules, MAX_WINDOW, window_bounds(rules)[0], WINDOW_LIMIT, low_name=MIN_WINDOW)
    low, high = window_bounds(rules)
    if low > high:
        raise InvalidRules(MIN_WINDOW, f"Option '{MIN_WINDOW}' must be at most {MAX_WINDOW} ({high}); got {low}.")


def rule(rules: Mapping[str, Any], name: str) -> Any:
    """An option's value at a table: recorded, or its default where the table was opened without it."""
    return rules.get(name, LATER_DEFAULTS.get(name))


def is_open(rules: Mapping[str, Any]) -> bool:
    """"At an open table any player with a valid identity stakes without being named at the opening."
    """
    return bool(rule(rules, OPEN_SEATS))


def timed(rules: Mapping[str, Any]) -> bool:
    """"A table whose rules bound its betting windows (min_window, max_window) has timed windows": the croupier
    may open the stakes of a coup for a number of seconds. Other tables close the stakes by "no more bets" only."""
    return MIN_WINDOW in rules or MAX_WINDOW in rules


def window_bounds(rules: Mapping[str, Any]) -> tuple[int, int]:
    """The shortest and the longest betting window the croupier may open, in seconds."""
    return rule(rules, MIN_WINDOW), rule(rules, MAX_WINDOW)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require_int(rules: dict[str, Any], name: str, low: int, high: int, low_name: str = "") -> None:
    value = rules[name]
    if not _is_int(value) or not low <= value <= high:
        lowest = f"{low} (the {low_name})" if low_name else f"{low}"
        raise InvalidRules(name, f"Option '{name}' must be a whole number from {lowest} to {high}; got {as_sent(value)}.")


def _require_one_of(rules: dict[str, Any], name: str, allowed: tuple[int, ...]) -> None:
    value = rules[name]
    if not _is_int(value) or value not in allowed:
        choices = " or ".join(str(a) for a in allowed)
        raise InvalidRules(name, f"Option '{name}' must be {choices}; got {as_sent(value)}.")


# --- who may do what -------------------------------------------------------------------------------

def check_croupier(croupier: Any, players: Collection[str]) -> str:
    """"A croupier is named when the table opens": a person, not one of the players who stake, not the house.

    ``players`` are the players who stake (the table lists the croupier among its names besides them)."""
    if not isinstance(croupier, str) or not croupier.strip():
        raise BadArgument("croupier", "Punto banco needs a 'croupier': the name of the person who runs the table.")
    if croupier in players:
        raise BadArgument("croupier", f"The croupier '{croupier}' cannot also be one of the players.")
    if croupier == HOUSE:
        raise BadArgument("croupier", "'house' is the bank's account; name the croupier as a person.")
    return croupier


def check_named_players(stakers: Collection[str], rules: Mapping[str, Any]) -> None:
    """"A table names 1 to 14 players who stake; an open table may name none, its bettors join as they stake."
    """
    if not stakers and not is_open(rules):
        raise InvalidPlayers(f"Punto banco seats the croupier and {MIN_PLAYERS} to {MAX_PLAYERS} players who stake; "
                             f"only the croupier was listed. An open table ('{OPEN_SEATS}': true) may list the "
                             "croupier alone.")


# --- stakes ----------------------------------------------------------------------------------------

def commission_unit(percent: int) -> int:
    """The smallest banker stake on which ``percent`` is a whole number of units (20 for 5%, 10 for 10%,
    1 for no commission). Banker stakes are multiples of it, so the commission is never rounded."""
    return 100 // gcd(100, percent)


def smallest_banker_stake(rules: Mapping[str, Any]) -> int:
    """The least banker stake the table takes: the first multiple of the commission's unit from min_stake."""
    unit = commission_unit(rules["commission_percent"])
    return -(-rules["min_stake"] // unit) * unit


def check_stake(rules: Mapping[str, Any], own_stakes: Mapping[str, int], spot: Any, amount: Any) -> int:
    """Validates one stake by a player who already has ``own_stakes`` (spot -> amount) in this coup and
    returns the player's new total on ``spot``.

    "A player backs the player, the banker or a tie, in whole units. Stakes on a spot add up; the total
    on each spot stays within the table's limits. A banker stake is a multiple of the commission's unit,
    so that the commission is exact. Nobody backs both the player and the banker in one coup."
    """
    if spot not in SPOTS:
        raise BadArgument("spot", f"Stake on 'player', 'banker' or 'tie'; got {as_sent(spot)}.")
    if not _is_int(amount) or amount <= 0:
        raise BadArgument("amount", f"A stake is a whole number of units above 0; got {as_sent(amount)}.")
    opposite = OPPOSITE.get(spot)
    if opposite and own_stakes.get(opposite, 0) > 0:
        raise StakeRefused(
            "spot",
            f"You already back the {opposite} in this coup; the house does not take stakes on both the player "
            "and the banker.",
            backed=opposite,
        )
    unit = commission_unit(rules["commission_percent"]) if spot == BANKER else 1
    # A banker total must stay a multiple of the unit, which moves the limits to the multiples inside them.
    low = -(-rules["min_stake"] // unit) * unit
    high = spot_limit(rules, spot) // unit * unit
    before = own_stakes.get(spot, 0)
    total = before + amount
    limits = {"min_stake": low, "max_stake": high, "total": total}
    if total > high:
        room = high - before
        if not before:
            advice = f"stake at most {high}."
        elif room:
            advice = f"you may add at most {room}."
        else:
            advice = "your stake there is already at the maximum."
        raise StakeRefused(
            "amount",
            f"That would bring your stake on the {spot} to {total}, above {high}, the most the table takes "
            f"on the {spot}; {advice}",
            max_allowed=room,
            **limits,
        )
    if total < low:
        raise StakeRefused(
            "amount", f"The least the table takes on the {spot} is {low}; got {total}.", **limits
        )
    if total % unit:
        raise StakeRefused(
            "amount",
            f"A banker stake must be a multiple of {unit}, so that the {rules['commission_percent']}% commission "
            f"is exact; {total} is not.",
            multiple_of=unit,
            **limits,
        )
    return total


def stake_room(rules: Mapping[str, Any], own_stakes: Mapping[str, int], spot: str) -> tuple[int, int, int] | None:
    """What a player who has ``own_stakes`` in this coup may still add on ``spot``: the least and the most
    amount, and the multiple every amount must be (the commission's unit on the banker, else 1); None when
    nothing can be added (the spot is at its limit, or the player backs the opposite hand).

    Every multiple of the unit from the least to the most is a stake ``check_stake`` takes, and nothing
    outside them is.
    """
    opposite = OPPOSITE.get(spot)
    if opposite and own_stakes.get(opposite, 0) > 0:
        return None
    unit = commission_unit(rules["commission_percent"]) if spot == BANKER else 1
    low = -(-rules["min_stake"] // unit) * unit
    high = spot_limit(rules, spot) // unit * unit
    before = own_stakes.get(spot, 0)  # a total check_stake took: a multiple of the unit
    least, most = max(low - before, unit), high - before
    return (least, most, unit) if least <= most else None


def spot_limit(rules: Mapping[str, Any], spot: str) -> int:
    """"The tie and the banker may have limits of their own": the most a player may have on ``spot`` in a coup."""
    own = SPOT_LIMITS.get(spot)
    return rules.get(own, rules["max_stake"]) if own else rules["max_stake"]


def spot_totals(stakes: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Every stake on the table by spot (``stakes``: player -> spot -> total)."""
    return {spot: sum(spots.get(spot, 0) for spots in stakes.values()) for spot in SPOTS}


def house_losses(rules: Mapping[str, Any], totals: Mapping[str, int]) -> dict[str, int]:
    """What the house loses on each outcome of a coup with these stakes on the table (``totals``: spot -> every
    stake on it; a gain is a negative loss): a player win pays the player stakes and takes the banker and tie
    stakes; a banker win pays the banker stakes less the commission and takes the others; a tie pays the tie
    stakes ``tie_pays`` to 1 and returns the others."""
    p, b, t = totals[PLAYER], totals[BANKER], totals[TIE]
    banker_wins = b - commission(b, rules["commission_percent"])
    return {PLAYER: p - b - t, BANKER: banker_wins - p - t, TIE: t * rules["tie_pays"]}


def exposure(rules: Mapping[str, Any], totals: Mapping[str, int]) -> int:
    """"The table's exposure is the most the house may lose on one coup, counted from every stake on the
    table": the largest loss over the three outcomes, 0 when the house loses on none."""
    return max(0, *house_losses(rules, totals).values())


def exposure_room(rules: Mapping[str, Any], totals: Mapping[str, int], spot: str) -> int | None:
    """The most that may still be added on ``spot`` (by anyone) without passing the table's exposure limit, in
    multiples of the spot's unit; None where the table has no such limit. Adding on a spot raises the house's
    loss on that outcome only (and lowers it on the others), so the room is read from that outcome alone."""
    limit = rules.get(MAX_EXPOSURE)
    if limit is None:
        return None
    loss = house_losses(rules, totals)[spot]
    if spot == PLAYER:
        return max(0, limit - loss)
    if spot == TIE:
        return max(0, (limit - loss) // rules["tie_pays"])
    # A banker stake of n units of u costs the house n * (u - commission(u)) more if the banker wins.
    unit = commission_unit(rules["commission_percent"])
    per_unit = unit - commission(unit, rules["commission_percent"])
    return max(0, (limit - loss) // per_unit) * unit


def check_exposure(rules: Mapping[str, Any], totals: Mapping[str, int], spot: str, amount: int) -> None:
    """"A stake that would bring the table's exposure above its limit is refused, naming the limit and what is
    left of it." ``totals``: every stake on the table in this coup by spot, before this one."""
    room = exposure_room(rules, totals, spot)
    if room is None or amount <= room:
        return
    limit = rules[MAX_EXPOSURE]
    left = limit - max(0, house_losses(rules, totals)[spot])
    advice = f"at most {room} more may be staked on the {spot} now" if room else f"nothing more may be staked on the {spot} now"
    raise StakeRefused(
        "amount",
        f"That stake would bring what the house may lose on this coup above the table's limit of {limit} "
        f"({MAX_EXPOSURE}); {left} of it is left on a {spot} win, so {advice}.",
        max_allowed=room, max_exposure=limit, exposure_left=left,
    )


def check_window(rules: Mapping[str, Any], seconds: int) -> int:
    """"The croupier opens the stakes for a coup for a number of seconds within the table's window limits."
    """
    low, high = window_bounds(rules)
    if not low <= seconds <= high:
        raise BadArgument("seconds", f"A betting window at this table lasts from {low} to {high} seconds; got {seconds}.")
    return seconds


def stakes_closable(stakes: Mapping[str, Mapping[str, int]]) -> bool:
    """"No more bets" needs at least one stake on the table: a coup nobody backs is not dealt."""
    return any(amount > 0 for spots in stakes.values() for amount in spots.values())


# --- settlement ------------------------------------------------------------------------------------

def commission(amount: int, percent: int) -> int:
    """"The house takes ``percent`` of what a winning banker stake wins." Exact: banker stakes are
    multiples of ``commission_unit(percent)``."""
    return amount * percent // 100


@dataclass(frozen=True)
class StakeResult:
    """What one stake came to: won, lost or a push; what the house pays, what it takes back as commission."""

    result: str
    winnings: int
    commission: int
    amount: int


def settle_stake(spot: str, amount: int, coup_outcome: str, rules: Mapping[str, Any]) -> StakeResult:
    """"A stake on the winning hand is paid 1 to 1, a banker stake less the commission. A tie pays tie
    stakes ``tie_pays`` to 1 and returns the player and banker stakes (a push). Every other stake is lost
    to the house."""
    if coup_outcome == TIE and spot != TIE:
        return StakeResult(PUSH, 0, 0, amount)
    if spot != coup_outcome:
        return StakeResult(LOST, 0, 0, amount)
    if spot == TIE:
        return StakeResult(WON, amount * rules["tie_pays"], 0, amount)
    fee = commission(amount, rules["commission_percent"]) if spot == BANKER else 0
    return StakeResult(WON, amount, fee, amount)


def settlement(
    stakes: Mapping[str, Mapping[str, int]], coup_outcome: str, rules: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Who pays whom after a coup: the house banks every stake. ``stakes`` is player -> spot -> amount.

    One payment per stake won ("stake won", the house to the player), per commission ("commission",
    the player to the house) and per stake lost ("stake lost", the player to the house). A push moves
    no money: stakes are promises until the coup is settled. Players in the order given, spots in the
    order player, banker, tie.
    """
    payments: list[dict[str, Any]] = []
    for name, spots in stakes.items():
        for spot in SPOTS:
            amount = spots.get(spot, 0)
            if not amount:
                continue
            settled = settle_stake(spot, amount, coup_outcome, rules)
            if settled.result == WON:
                payments.append(_payment(HOUSE, name, settled.winnings, "stake won", spot))
                if settled.commission:
                    payments.append(_payment(name, HOUSE, settled.commission, "commission", spot))
            elif settled.result == LOST:
                payments.append(_payment(name, HOUSE, amount, "stake lost", spot))
    return payments


def _payment(payer: str, payee: str, amount: int, reason: str, spot: str) -> dict[str, Any]:
    return {"payer": payer, "payee": payee, "amount": amount, "reason": reason, "spot": spot}
