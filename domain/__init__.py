"""The games: cards, fair shuffle, rules, aggregates and their events.

Pure: no I/O, no clock, no randomness (seeds and times come in as arguments).
"""
