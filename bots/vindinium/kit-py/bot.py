"""The kit's bot: what it plays, given the state the server sent (the original
JSON: `game`, `hero`, `token`, `viewUrl`, `playUrl`; `pos.x` is the row)."""

import random

DIRECTIONS = ["Stay", "North", "South", "East", "West"]


class RandomBot:
    """Plays a random direction, as the original kits' bot does. Replace choose_move."""

    def __init__(self, seed):
        self.random = random.Random(seed)

    def choose_move(self, state):
        return self.random.choice(DIRECTIONS)
