"""Punto banco: casino baccarat with every draw fixed and the house as bank (docs/games/punto-banco.md)."""
