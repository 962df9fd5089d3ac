"""Chemin de fer ("Zheleznaya doroga"), RULES.md Game A."""
