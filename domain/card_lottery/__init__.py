"""The Card lottery ("Kartochnaya lotereya"), RULES.md Game B."""
