"""The HTTP layer: translates requests to one service call each, and answers back."""
