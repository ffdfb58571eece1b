#!/usr/bin/env python3
"""Example Maze (Code Keeper - The Hero) bot for matchfarm.

It explores, fights with the weapon that pays best against the monsters in
range, picks up treasure and leaves by the exit in time. It is a line-by-line
port of the Rust example (bots/maze/explorer-rs), so the two play alike.

Protocol (the farm's `stdio` transport, the original's text format):
  * Every turn the farm writes several lines on stdin:
      x y health score chargesHammer chargesScythe chargesBow
      n                          (the number of visible entities)
      ex ey etype evalue         (n lines)
    etype: 0 exit, 1 obstacle, 2 treasure, 3 potion, 4/5/6 hammer/scythe/bow
    chest, 7 box, 8 skeleton, 9 gargoyle, 10 orc, 11 vampire. evalue is a
    monster's hp. The hero sees every cell within 3 steps in any direction
    (a 7x7 square), walls or not.
  * The bot answers ONE line and flushes:
      MOVE x y [message]      one step towards the target cell (a step onto a
                              monster is a sword attack; your own cell waits)
      ATTACK w x y [message]  w: 0 sword, 1 hammer, 2 scythe, 3 bow
  * An invalid line or a late one (1 s for the first turn, 50 ms after) ends
    the game with score -10000. Python starts slowly: do the heavy lifting
    after reading the first turn, not at import time.
  * stderr is the bot's log; never print anything else to stdout.
  * When stdin closes the game is over: exit with status 0.

Randomness (only to break ties) is seeded from FARM_SEED and FARM_SEAT.
Standard library only.
"""

import heapq
import os
import random
import sys
from collections import deque

WIDTH, HEIGHT = 16, 12
CELLS = WIDTH * HEIGHT
MAX_TURNS = 150
FOV = 3
MAX_HP = 20

EXIT, OBSTACLE, TREASURE, POTION, BOX = 0, 1, 2, 3, 7
UNKNOWN, OPEN, WALL = 0, 1, 2

# Damage of the sword, hammer, scythe and bow.
DAMAGE = (10, 6, 7, 8)
# (max hp, view, attack range, damage) by monster type.
STATS = {7: (1, 0, 0, 0), 8: (6, 1, 1, 1), 9: (14, 2, 1, 2), 10: (8, 2, 2, 2), 11: (10, 3, 1, 3)}

# How much a step closer to the goal is worth, at first.
PROGRESS = 3.0
# Every this many turns without setting foot on a new cell, progress is worth one
# PROGRESS more: the bot grows bolder instead of dithering.
BOLDNESS_TURNS = 6.0
# How much the damage threatened for next turn counts against the damage taken now.
NEXT_TURN = 1.0
# A kill is worth the monster's score plus this much per point of its damage.
KILL_PER_DAMAGE = 4.0
# Hurting without killing is worth this share of a kill, per share of its hp.
PARTIAL = 0.5
INF = float("inf")


def log(message):
    """Write one line to the bot's log (stderr). Never log to stdout."""
    print(f"[maze explorer_bot.py] {message}", file=sys.stderr, flush=True)


def env_u64(name):
    """Read an unsigned 64-bit integer from the environment; 0 if missing or bad."""
    try:
        value = int(os.environ.get(name, "").strip())
    except ValueError:
        return 0
    return value if 0 <= value < 2**64 else 0


def make_rng():
    seed, seat = env_u64("FARM_SEED"), env_u64("FARM_SEAT")
    log(f"seed {seed}, seat {seat}")
    return random.Random((seed * 1_000_003 + seat) % 2**64)


def in_maze(pos):
    return 0 <= pos[0] < WIDTH and 0 <= pos[1] < HEIGHT


def index(pos):
    return pos[1] * WIDTH + pos[0]


def chebyshev(a, b):
    return max(abs(a[0] - b[0]), abs(a[1] - b[1]))


def manhattan(a, b):
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# The 4-neighbours of every cell, in the rules' order: x - 1, x + 1, y - 1, y + 1.
NEIGHBORS = [
    [n for n in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)) if in_maze(n)]
    for y in range(HEIGHT)
    for x in range(WIDTH)
]


def weapon_cells(hero, weapon, target):
    """The cells `weapon` hits when the hero at `hero` targets `target`, or None
    when the target is not valid for it (the rules' weapon table)."""
    dx, dy = target[0] - hero[0], target[1] - hero[1]
    cheb, manh = chebyshev(hero, target), manhattan(hero, target)
    if not in_maze(target) or target == hero:
        return None
    valid = (manh <= 1, cheb <= 1, cheb <= 2 and manh != 3, cheb <= 3)[weapon]
    if not valid:
        return None
    tx, ty = target
    if weapon == 1:
        if dx == 0:
            extra = [(tx - 1, ty), (tx + 1, ty)]
        elif dy == 0:
            extra = [(tx, ty - 1), (tx, ty + 1)]
        else:
            extra = [(tx, hero[1]), (hero[0], ty)]
    elif weapon == 2:
        if cheb == 1:
            extra = [(tx + dx, ty + dy)]
        else:  # dx and dy are -2, 0 or 2 here
            extra = [(hero[0] + dx // 2, hero[1] + dy // 2)]
    else:
        extra = []
    return [target] + [cell for cell in extra if in_maze(cell)]


class Monster:
    __slots__ = ("pos", "kind", "hp")

    def __init__(self, pos, kind, hp):
        self.pos, self.kind, self.hp = pos, kind, hp

    def stats(self):
        return STATS.get(self.kind, STATS[BOX])

    def is_box(self):
        return self.kind == BOX

    def kill_value(self):
        """What killing it is worth: its score plus the damage it will not deal."""
        max_hp, _, _, damage = self.stats()
        return max_hp + KILL_PER_DAMAGE * damage

    def moved(self, pos=None, hp=None):
        return Monster(self.pos if pos is None else pos, self.kind, self.hp if hp is None else hp)


class Memory:
    """Everything the bot has seen so far."""

    def __init__(self):
        self.known = [UNKNOWN] * CELLS
        self.items = [None] * CELLS
        self.monsters = []
        self.visits = [0] * CELLS  # turns the hero has stood on each cell
        self.waited = 0  # turns in a row the bot has chosen to wait
        self.since_new = 0  # turns since the hero last entered a new cell
        self.turn = 0
        self.enter = None  # per-turn cache of enter_cost

    def update(self, hero, entities):
        self.turn += 1
        if in_maze(hero):
            i = index(hero)
            self.since_new = 0 if self.visits[i] == 0 else self.since_new + 1
            self.visits[i] += 1
        for y in range(max(0, hero[1] - FOV), min(HEIGHT, hero[1] + FOV + 1)):
            for x in range(max(0, hero[0] - FOV), min(WIDTH, hero[0] + FOV + 1)):
                self.known[index((x, y))] = OPEN
                self.items[index((x, y))] = None
        self.monsters = [m for m in self.monsters if chebyshev(m.pos, hero) > FOV]
        for x, y, etype, value in entities:
            if not in_maze((x, y)):
                continue
            if etype == OBSTACLE:
                self.known[index((x, y))] = WALL
            elif EXIT <= etype <= 6:
                self.items[index((x, y))] = etype
            else:
                self.monsters.append(Monster((x, y), etype, value))
        self.by_cell = {m.pos: m for m in self.monsters}
        self.enter = [self.enter_cost((i % WIDTH, i // WIDTH)) for i in range(CELLS)]

    def monster_at(self, pos):
        return self.by_cell.get(pos)

    def exit(self):
        for i in range(CELLS):
            if self.items[i] == EXIT:
                return (i % WIDTH, i // WIDTH)
        return None

    def threat(self, pos):
        """Damage the monsters in range of `pos` deal each turn."""
        total = 0
        for m in self.monsters:
            _, _, attack, damage = m.stats()
            if m.kind != BOX and chebyshev(m.pos, pos) <= attack:
                total += damage
        return total

    def enter_cost(self, pos):
        """One step, plus the sword hits a monster there takes, plus the danger of
        standing there."""
        cost = 1.0
        monster = self.monster_at(pos)
        if monster is not None:
            cost += (monster.hp + 9) // 10
        return cost + 0.7 * self.threat(pos)

    def costs_from(self, start, avoid):
        """Least costs from `start` to every cell over known open cells; `avoid`
        is never entered (the exit, when the bot is not leaving yet)."""
        cost = [INF] * CELLS
        cost[index(start)] = 0.0
        heap = [(0.0, start)]
        while heap:
            at_cost, pos = heapq.heappop(heap)
            if at_cost > cost[index(pos)]:
                continue
            for nxt in NEIGHBORS[index(pos)]:
                i = index(nxt)
                if self.known[i] != OPEN or nxt == avoid:
                    continue
                new_cost = at_cost + self.enter[i]
                if new_cost < cost[i]:
                    cost[i] = new_cost
                    heapq.heappush(heap, (new_cost, nxt))
        return cost

    def costs_to(self, goal, avoid):
        """Least costs from every cell to `goal`."""
        cost = [INF] * CELLS
        cost[index(goal)] = 0.0
        heap = [(0.0, goal)]
        while heap:
            at_cost, pos = heapq.heappop(heap)
            if at_cost > cost[index(pos)]:
                continue
            step = at_cost + self.enter[index(pos)]
            for nxt in NEIGHBORS[index(pos)]:
                i = index(nxt)
                if self.known[i] != OPEN or nxt == avoid:
                    continue
                if step < cost[i]:
                    cost[i] = step
                    heapq.heappush(heap, (step, nxt))
        return cost

    def is_frontier(self, i):
        return self.known[i] == OPEN and any(self.known[index(n)] == UNKNOWN for n in NEIGHBORS[i])


def choose_goal(memory, hero, hp):
    """(cell, why): where the bot is heading, or None."""
    exit_cell = memory.exit()
    left = MAX_TURNS - memory.turn + 1
    # Paths to anything but the exit go around it: stepping on it ends the game.
    from_hero = memory.costs_from(hero, exit_cell)
    exit_cost = None
    if exit_cell is not None:
        cost = memory.costs_from(hero, None)[index(exit_cell)]
        exit_cost = cost if cost < INF else None
    leave = (exit_cell, "leaving") if exit_cell is not None else None
    if exit_cost is not None and (left <= exit_cost + 12 or hp <= 8):
        return leave
    # Once the exit is known, only short detours are worth the risk of never using it.
    known = exit_cost is not None
    best, best_utility = None, -INF
    for i in range(CELLS):
        cell = (i % WIDTH, i // WIDTH)
        item = memory.items[i]
        candidates = []
        if item == TREASURE and hp >= 8:
            candidates.append((100.0, 6.0 if known else 10.0, "treasure"))
        elif item == POTION and hp <= 12:
            candidates.append(((MAX_HP - hp) * 6.0, 12.0, "potion"))
        elif item in (4, 5, 6):
            candidates.append((20.0, 3.0 if known else 6.0, "chest"))
        if not known and memory.is_frontier(i):
            candidates.append((80.0, INF, "exploring"))
        for value, reach, why in candidates:
            cost = from_hero[i]
            if cost == INF or cell == hero or cost > reach:
                continue
            if exit_cost is not None and left <= cost + exit_cost + 20:
                continue
            utility = value / (cost + 4.0)
            if utility > best_utility:
                best, best_utility = (cell, why), utility
    return best if best is not None else leave


def hurt(damage, hp):
    """The cost of taking `damage` with `hp` left: ruinous if it kills."""
    if damage <= 0:
        return 0.0
    left = hp - damage
    return 1e6 if left <= 0 else damage * (2.0 + 12.0 / left)


def monster_step(memory, monster, hero, monsters):
    """The step a monster takes towards the hero, as the rules' monsterPathfinding:
    BFS in the order x - 1, x + 1, y - 1, y + 1, within its view of its own cell,
    around walls (and cells never seen) and the other monsters."""
    view = monster.stats()[1]
    start = monster.pos
    occupied = {m.pos for m in monsters}

    def free(pos):
        return memory.known[index(pos)] == OPEN and chebyshev(pos, start) <= view and pos not in occupied

    first = {}
    queue = deque()
    for nxt in NEIGHBORS[index(start)]:
        if free(nxt):
            first[nxt] = nxt
            queue.append(nxt)
    best, best_distance = start, manhattan(start, hero)
    while queue:
        pos = queue.popleft()
        step = first[pos]
        if pos == hero:
            return start if step == hero else step
        distance = manhattan(pos, hero)
        if distance < best_distance:
            best, best_distance = step, distance
        for nxt in NEIGHBORS[index(pos)]:
            if nxt not in first and nxt != start and free(nxt):
                first[nxt] = step
                queue.append(nxt)
    return best


def monster_phase(memory, hero, monsters):
    """The monster phase after the hero's action: the damage dealt and where the
    monsters end up (in a fixed order; the real one is random)."""
    monsters = list(monsters)
    damage = 0
    for i, monster in enumerate(monsters):
        _, view, attack, dmg = monster.stats()
        distance = chebyshev(monster.pos, hero)
        if distance <= attack:
            damage += dmg
        elif distance <= view:
            monsters[i] = monster.moved(pos=monster_step(memory, monster, hero, monsters))
    return damage, monsters


def killable(monster, hero, charges):
    """Whether one attack next turn can kill `monster` from `hero`."""
    return any(
        charges[w] > 0 and monster.hp <= DAMAGE[w] and weapon_cells(hero, w, monster.pos) is not None
        for w in range(4)
    )


def next_threat(hero, monsters, charges):
    """Damage the monsters will deal next turn from where they stand, less the
    worst one the hero can kill first."""
    total = removable = 0
    for monster in monsters:
        if monster.is_box():
            continue
        _, _, attack, damage = monster.stats()
        if chebyshev(monster.pos, hero) <= attack:
            total += damage
            if killable(monster, hero, charges):
                removable = max(removable, damage)
    return total - removable


def danger(memory, hp, hero, monsters, charges):
    """The damage taken in the monster phase and the damage threatened for the
    next turn, as a cost."""
    damage, after = monster_phase(memory, hero, monsters)
    return hurt(damage, hp) + NEXT_TURN * hurt(next_threat(hero, after, charges), hp - damage)


def decide(memory, hero, hp, charges, rng):
    """The reply for this turn: (command, why)."""
    goal = choose_goal(memory, hero, hp)
    leaving = goal is not None and goal[1] == "leaving"
    avoid = None if leaving else memory.exit()
    to_goal = memory.costs_to(goal[0], avoid) if goal is not None else None
    # Bolder the longer nothing new is reached.
    boldness = PROGRESS * (1.0 + memory.since_new / BOLDNESS_TURNS)

    def progress(pos):
        if to_goal is None or to_goal[index(hero)] == INF or to_goal[index(pos)] == INF:
            return 0.0
        return boldness * (to_goal[index(hero)] - to_goal[index(pos)])

    why = goal[1] if goal is not None else "waiting"
    # Only the monsters that can act this turn matter for the simulation.
    near = [m for m in memory.monsters if chebyshev(m.pos, hero) <= FOV + 1]
    options = []

    # Waiting is never a plan: it costs more with every turn spent waiting.
    stalling = 8.0 + 6.0 * memory.waited
    options.append((-stalling - danger(memory, hp, hero, near, charges), ("MOVE", hero), why))

    # Steps.
    for nxt in NEIGHBORS[index(hero)]:
        i = index(nxt)
        if memory.known[i] != OPEN or memory.monster_at(nxt) is not None:
            continue
        value = progress(nxt) - min(memory.visits[i], 6)
        after_charges = list(charges)
        item = memory.items[i]
        if item == EXIT:
            # The game ends on the exit: no monster phase.
            options.append((value + (1e5 if leaving else -50.0), ("MOVE", nxt), why))
            continue
        if item == TREASURE:
            value += 100.0
        elif item == POTION:
            value += min(MAX_HP - hp, 10) * 3.0 - 2.0
        elif item in (4, 5, 6):
            value += 10.0
            after_charges[item - 3] += 1
        value -= danger(memory, hp, nxt, near, after_charges)
        options.append((value, ("MOVE", nxt), why))

    # Attacks that hit at least one monster.
    for weapon in range(4):
        if charges[weapon] <= 0:
            continue
        cost = 0.0 if weapon == 0 else 4.0 + 8.0 / charges[weapon]
        after_charges = list(charges)
        after_charges[weapon] -= 1
        for ty in range(hero[1] - 3, hero[1] + 4):
            for tx in range(hero[0] - 3, hero[0] + 4):
                cells = weapon_cells(hero, weapon, (tx, ty))
                if cells is None or not any(memory.monster_at(c) is not None for c in cells):
                    continue
                value = -cost
                after = []
                for monster in near:
                    if monster.pos not in cells:
                        after.append(monster)
                        continue
                    max_hp = monster.stats()[0]
                    worth = monster.kill_value()
                    if monster.hp <= DAMAGE[weapon]:
                        value += worth
                        # A monster or box in the way: clearing it is progress.
                        value += 0.5 * max(progress(monster.pos), 0.0)
                    else:
                        if not monster.is_box():
                            value += PARTIAL * worth * DAMAGE[weapon] / max_hp
                        after.append(monster.moved(hp=monster.hp - DAMAGE[weapon]))
                value -= danger(memory, hp, hero, after, after_charges)
                options.append((value, ("ATTACK", weapon, (tx, ty)), "fighting"))

    best, best_score = options[0], -INF
    for option in options:
        score = option[0] + rng.uniform(0.0, 0.01)
        if score > best_score:
            best, best_score = option, score
    return best[1], best[2]


def render(command, why):
    if command[0] == "MOVE":
        x, y = command[1]
        return f"MOVE {x} {y} {why}"
    weapon, (x, y) = command[1], command[2]
    return f"ATTACK {weapon} {x} {y} {why}"


def read_turn(stream):
    """One turn: (hero, hp, charges, entities); None at the end of input.
    Raises ValueError on a malformed turn (after reading all of it)."""
    head = stream.readline()
    count = stream.readline()
    if not head or not count:
        return None
    n = int(count)
    lines = [stream.readline() for _ in range(n)]
    if lines and not lines[-1]:
        return None
    x, y, hp, _score, hammer, scythe, bow = map(int, head.split())
    entities = []
    for line in lines:
        ex, ey, etype, evalue = map(int, line.split())
        entities.append((ex, ey, etype, evalue))
    return (x, y), hp, [10**9, hammer, scythe, bow], entities


def main():
    # Read stdin as UTF-8 whatever the locale, and never die on a bad byte.
    sys.stdin.reconfigure(encoding="utf-8", errors="replace")
    rng = make_rng()
    memory = Memory()
    hero = (0, 0)
    while True:
        try:
            turn = read_turn(sys.stdin)
        except ValueError as error:
            # Waiting is always a valid command.
            log(f"bad turn ({error!r}); waiting")
            print(render(("MOVE", hero), "confused"), flush=True)
            continue
        if turn is None:
            break
        hero, hp, charges, entities = turn
        memory.update(hero, entities)
        command, why = decide(memory, hero, hp, charges, rng)
        memory.waited = memory.waited + 1 if command == ("MOVE", hero) else 0
        # Exactly one reply line per turn, flushed at once.
        print(render(command, why), flush=True)
    log(f"input closed after {memory.turn} turns")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # The farm stopped reading: the match is over.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
