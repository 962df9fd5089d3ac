"""What the project's scripts share in reading their arguments: a mistake is one line and exit 2.

argparse's own answer to a mistake is the usage (several lines) then the error; a script run by hand or by
another program is easier to read, and to test, with the one line that says what is wrong and what is
allowed (README "Exit codes"). Each bound is checked here, before the script starts anything.
(The stand-alone client scripts, demo, verify-shoe, audit and odds, carry the same few lines of their own.)
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose mistakes are one line: ``<prog>: error: <what> (--help shows the usage)``."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (--help shows the usage)\n")


def whole(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (to ``high``)."""
    bounds = f"from {low} to {high}" if high is not None else f"of {low} or more"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be a whole number {bounds}, not {text!r}")
        return value

    return parse


def seconds(low: float) -> Callable[[str], float]:
    """An argparse type: a number of seconds of at least ``low``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= low):
            raise argparse.ArgumentTypeError(f"must be a number of seconds of at least {low:g}, not {text!r}")
        return value

    return parse


def sizes(text: str) -> str:
    """An argparse type: whole numbers of 1 or more, comma-separated (history lengths), kept as written."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be whole numbers of 1 or more, comma-separated, not {text!r}")
    return text
