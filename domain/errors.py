"""Typed domain errors. Each carries the data a client needs and a sentence a croupier understands.

The API maps the classes to status codes in one place (api/errors.py); the wording lives here, next to
the rule that refuses, so that the message can name what would have been allowed.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base of every refusal by the rules. ``details`` is plain data for the error body; ``about``: the player
    whose hidden cards the reason lies in (a forced draw, a card not held), so that a caller who may not see
    them is told only that the rules do not allow it (domain/table.py ``Table.refusal_seen``)."""

    about: str | None = None

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRules(DomainError):
    """A table option is unknown or out of range (refused when the table is opened)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message, option=option)
        self.option = option


class InvalidPlayers(DomainError):
    pass


class UnknownCommand(DomainError):
    def __init__(self, command: str, game: str, allowed: list[str]) -> None:
        super().__init__(
            f"'{command}' is not a command of {game}; the commands are: {', '.join(allowed)}.",
            command=command,
            allowed=allowed,
        )


class BadArgument(DomainError):
    """A command's field is missing, superfluous or of the wrong shape."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)
        self.field = field


class NotAllowedNow(DomainError):
    """The command exists but the table is not waiting for it, or not from this player (``command``, ``player``:
    what was refused, for the refusal to be worded again for whoever reads it)."""

    def __init__(self, message: str, expects: list[dict[str, str]], command: str = "", player: str = "") -> None:
        super().__init__(message, expects=expects)
        self.expects = expects
        self.command, self.player = command, player


class StakeAboveBank(DomainError):
    def __init__(self, amount: int, max_allowed: int) -> None:
        super().__init__(
            f"A stake of {amount} is above what is left of the bank; the largest stake allowed is {max_allowed}.",
            amount=amount,
            max_allowed=max_allowed,
        )
        self.max_allowed = max_allowed


class IllegalDraw(DomainError):
    """A draw or stand the draw rule forbids (A.9, A.10)."""

    def __init__(self, choice: str, rule: str, required: str, about: str | None = None) -> None:
        super().__init__(f"{choice} is not allowed: {rule}", choice=choice, required=required)
        self.required = required
        self.about = about  # whose face-down hand the rule read


class IllegalPlay(DomainError):
    """A move a game's rules forbid (cards not held, a beat that does not beat, ...); ``about``: the player whose
    face-down hand the refusal reads, where it reads one."""

    def __init__(self, message: str, about: str | None = None) -> None:
        super().__init__(message)
        self.about = about


class NotYourSeat(DomainError):
    """The credential may not issue a command for this actor: a player acts only for himself, and at a
    self-acting table only he does (the API answers 403)."""

    def __init__(self, message: str, actor: str) -> None:
        super().__init__(message, actor=actor)
