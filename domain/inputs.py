"""Checks what a caller sends before any rule is consulted: the players' names and a command's fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.errors import BadArgument, InvalidPlayers, UnknownCommand
from domain.game import CommandSpec
from domain.words import counted

MAX_NAME_LENGTH = 40


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
    return list(players)


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
            raise BadArgument(name, f"'{name}' must be {field.describe()}; got {value!r}.")
        out[name] = value
    return out
