"""Checks what a caller sends before any rule is consulted: the players' names and a command's fields.

Players' names are kept as given, and compared after NFKC and case folding: ``Anna``, ``anna`` and ``ＡＮＮＡ``
are one name. Two names of one table must not look alike either: names are confusable when their
confusables skeletons (Unicode's UTS #39, computed by ICU's SpoofChecker from Unicode's confusables data)
are equal, whether compared with their case (``ANNA`` and Greek ``ΑΝΝΑ``) or without it (``anna`` and
``аnna`` with a Cyrillic ``а``, ``boris`` and ``b0ris``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from icu import SpoofChecker

from domain.errors import BadArgument, InvalidPlayers, UnknownCommand
from domain.game import CommandSpec
from domain.words import as_sent, counted

MAX_NAME_LENGTH = 40
# Its skeletons depend only on Unicode's data, never on a check's settings; getSkeleton is safe from any thread.
_SPOOF_CHECKER = SpoofChecker()


def reserved_names() -> frozenset[str]:
    # The registry imports every game, and every game imports this module: read it when it is needed.
    from domain.games import reserved_names as registered

    return registered()


def validate_players(players: Any, low: int, high: int) -> list[str]:
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise InvalidPlayers("'players' must be a list of names.")
    if not low <= len(players) <= high:
        listed = counted(len(players), "player was", "players were")
        raise InvalidPlayers(f"This game seats {low} to {high} players; {listed} listed.")
    for p in players:
        validate_name(p)
    dupes = sorted({p for p in players if players.count(p) > 1})
    if dupes:
        raise InvalidPlayers(f"Each player is listed once; listed twice: {', '.join(dupes)}.")
    refuse_one_name_written_twice(players)
    refuse_names_that_look_alike(players)
    return list(players)


def folded(name: str) -> str:
    """The form names are compared in: NFKC, case folded, NFKC again (Unicode's NFKC_Casefold but for the
    default ignorable characters, which the input policy refuses anyway)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def skeletons(name: str) -> tuple[str, str]:
    """The name's UTS #39 skeletons: of its NFKC form, case kept, and of its folded form, folded again."""
    return (_SPOOF_CHECKER.getSkeleton(0, unicodedata.normalize("NFKC", name)),
            _SPOOF_CHECKER.getSkeleton(0, folded(name)).casefold())


def refuse_one_name_written_twice(players: list[str]) -> None:
    """Two names that are one after NFKC and case folding (``Anna`` and ``anna``, ``ﬁona`` and ``fiona``)."""
    seen: dict[str, str] = {}
    for p in players:
        first = seen.setdefault(folded(p), p)
        if first != p:
            raise InvalidPlayers(
                f"'{first}' and '{p}' are one name: names are compared regardless of case and of compatibility "
                "forms (ligatures, full-width letters); list each player once.", field="players", names=[first, p])


def refuse_names_that_look_alike(players: list[str]) -> None:
    """Two names whose confusables skeletons are equal (``anna`` and ``аnna`` with a Cyrillic ``а``)."""
    seen: dict[str, str] = {}
    for p in players:
        for key in skeletons(p):
            first = seen.setdefault(key, p)
            if first != p:
                raise InvalidPlayers(
                    f"'{first}' and '{p}' look alike{_difference(first, p)}; give each player a name that cannot "
                    "be mistaken for another's.", field="players", names=[first, p])


def _difference(first: str, second: str) -> str:
    """Where two names of one length differ first, by the characters' Unicode names."""
    if len(first) != len(second):
        return ""
    at, a, b = next((at, a, b) for at, (a, b) in enumerate(zip(first, second), 1) if a != b)
    return f" (character {at}: {_char(a)} against {_char(b)})"


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip()


def validate_name(name: str) -> str:
    """One player's name: 1 to MAX_NAME_LENGTH characters without surrounding spaces, and not reserved."""
    if not name.strip() or len(name) > MAX_NAME_LENGTH or name != name.strip():
        raise InvalidPlayers(
            f"Player names are 1 to {MAX_NAME_LENGTH} characters without surrounding spaces; got {name!r}."
        )
    reserved = reserved_names()
    if name in reserved:
        raise InvalidPlayers(f"'{name}' is reserved (names not allowed: {', '.join(sorted(reserved))}).")
    return name


def parse_args(game: str, commands: Mapping[str, CommandSpec], command: str, args: dict[str, Any]) -> dict[str, Any]:
    """Checks a command's fields before any rule is consulted: known command, no missing or unknown field,
    each field of its kind (``FieldSpec``)."""
    if command not in commands:
        raise UnknownCommand(command, game, sorted(commands))
    spec = commands[command].fields
    extra = sorted(set(args) - set(spec))
    if extra:
        takes = f"takes {', '.join(spec)}" if spec else "takes no fields besides 'command' and 'player'"
        raise BadArgument(extra[0], f"'{command}' {takes}; unexpected field '{extra[0]}'.")
    out: dict[str, Any] = {}
    for name, field in spec.items():
        if name not in args:
            if field.optional:
                continue
            raise BadArgument(name, f"'{command}' needs the field '{name}' ({field.describe()}).")
        value = args[name]
        if not field.fits(value):
            raise BadArgument(name, f"'{name}' must be {field.describe()}; got {as_sent(value)}.")
        out[name] = value
    return out
