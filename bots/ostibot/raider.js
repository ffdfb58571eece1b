/*
 * Raider: an example Ostibot bot, written the way players write them on
 * ostibot.com: a plain script that defines `script = { shop(input), play(input) }`.
 * Run it on the farm through the harness:
 *
 *   cmd:node bots/ostibot/harness.js bots/ostibot/raider.js
 *
 * What it does:
 *   shop  Buys the best weapon the bank can pay for, for each unarmed adventurer,
 *         and equips items its adventurers picked up into empty slots.
 *   play  Each adventurer, in order:
 *           1. drinks a potion when below half hp, or equips a picked-up item
 *              into an empty slot;
 *           2. heads for a portal (hitting it open, then stepping in) when the
 *              spreading corruption or the turn limit would otherwise catch it
 *              on the way; one adventurer per portal, since a portal closes
 *              after one use;
 *           3. an adventurer left without a portal hands its gold to a teammate
 *              who has one, by walking into it (gold left on the map is lost);
 *           4. otherwise raids: picks up gold and items, breaks chests and vases,
 *              choosing the best value per turn of travel;
 *           5. otherwise explores the nearest cell it has not seen this round.
 *
 * Paths come from a Dijkstra search over the map: it knows that stepping on ice
 * or treadmills moves you further, that breaking a chest, door or portal takes
 * hp / damage hits, and it avoids spikes and corrupted cells when it can.
 *
 * Memory lives in `state` (returned by play, given back next call), so the bot
 * works even when each call runs in a fresh sandbox: chests, vases, doors and
 * portals come back every round in the same places (the map resets), so their
 * positions are remembered across rounds; what was seen and broken resets.
 */

// --- constants -----------------------------------------------------------------

var DIRECTIONS = [
    { name: 'UP', dx: 0, dy: -1 },
    { name: 'DOWN', dx: 0, dy: 1 },
    { name: 'LEFT', dx: -1, dy: 0 },
    { name: 'RIGHT', dx: 1, dy: 0 },
];
var TREADMILL = { U: 0, D: 1, L: 2, R: 3 }; // treadmill character -> index in DIRECTIONS

// Used when input.rules lacks a key (the rules object normally has them all).
var DEFAULT_RULES = {
    nbRounds: 2, adventurerHp: 120, adventurerDamage: 20, visionLength: 5, corruptionStartAt: 30,
    corruptionSpreadSpeed: 4, maxTurnsPerRound: 200, healCost: 2, chestHp: 100, chestGold: 12,
    vaseHp: 40, vaseGold: 3, doorHp: 40, portalHp: 100,
    items: {
        rusty_sword: { slot: 'weapon', cost: 2, damage: 5 },
        steel_blade: { slot: 'weapon', cost: 5, damage: 10 },
        enchanted_axe: { slot: 'weapon', cost: 10, damage: 20 },
        leather_vest: { slot: 'armor', cost: 2, armor: 5 },
        chainmail: { slot: 'armor', cost: 5, armor: 10 },
        plate_armor: { slot: 'armor', cost: 10, armor: 15 },
        scouts_binocular: { slot: 'accessory', cost: 2, vision: 5 },
        speed_boots: { slot: 'accessory', cost: 5, vision: 2 },
        big_boots: { slot: 'accessory', cost: 4 },
        health_potion: { slot: 'consumable', cost: 3, heal: 80 },
        greater_health_potion: { slot: 'consumable', cost: 6, heal: 160 },
    },
};

// Extra path cost, in turns, of cells that hurt (20 hp each).
var SPIKE_PENALTY = 4;
var CORRUPTION_PENALTY = 10;
// Extra cost of walking through a teammate's cell (see findPaths).
var FRIEND_PENALTY = 2;
// Turns of slack kept between passing a cell on the way out and the fire reaching it.
var ESCAPE_MARGIN = 3;

// --- small helpers ---------------------------------------------------------------

function rulesOf(input) {
    var rules = Object.assign({}, DEFAULT_RULES, input.rules || {});
    if (!rules.items || typeof rules.items !== 'object') rules.items = DEFAULT_RULES.items;
    return rules;
}

function itemInfo(rules, itemType) {
    return rules.items[itemType] || DEFAULT_RULES.items[itemType] || { slot: 'unknown', cost: 0 };
}

function isBlocking(entity) {
    // Gold piles and ground items never block; open portals are entered (escape).
    return entity.type === 'adventurer' || entity.type === 'door' || entity.type === 'chest' ||
        entity.type === 'vase' || (entity.type === 'portal' && !isOpen(entity));
}

function isOpen(portal) {
    return portal.open === true || portal.hp <= 0;
}

// --- shop ------------------------------------------------------------------------

function shop(input) {
    var rules = rulesOf(input);
    var bank = (input.teamsGold || {})[String(input.you)] || 0;
    // In the last round keep half the bank: gold spent then comes back at 50% at best.
    if (input.round >= rules.nbRounds) bank = Math.floor(bank / 2);
    var actions = [];

    // Weapons, best first: more damage breaks chests and portals in fewer turns.
    var weapons = Object.keys(rules.items)
        .filter(function (type) { return rules.items[type].slot === 'weapon'; })
        .sort(function (a, b) { return (rules.items[b].damage || 0) - (rules.items[a].damage || 0); });

    (input.adventurers || []).forEach(function (adventurer) {
        var equipment = adventurer.equipment || {};
        // Put picked-up equipment into empty slots first: it is free.
        var filled = {};
        (adventurer.inventory || []).forEach(function (item) {
            var slot = itemInfo(rules, item.itemType).slot;
            var equippable = slot === 'weapon' || slot === 'armor' || slot === 'accessory';
            if (equippable && !equipment[slot] && !filled[slot]) {
                actions.push({ equip: { adventurerId: adventurer.id, itemId: item.id } });
                filled[slot] = true;
            }
        });
        if (equipment.weapon || filled.weapon) return;
        for (var i = 0; i < weapons.length; i++) {
            var cost = rules.items[weapons[i]].cost;
            if (cost <= bank) {
                actions.push({ buy: { adventurerId: adventurer.id, itemType: weapons[i], equip: true } });
                bank -= cost;
                return;
            }
        }
    });
    // No "state" key: the state play() keeps is left as it is.
    return { actions: actions };
}

// --- the world as the bot sees it -----------------------------------------------

function buildWorld(input, rules, memory) {
    var game = input.gameState;
    var world = {
        width: game.width,
        height: game.height,
        map: game.map,
        turn: game.turn,
        corrupted: new Uint8Array(game.width * game.height),
        blocker: {}, // cell index -> blocking entity
        loot: {}, // cell index -> list of gold piles and items
        seenEntityIds: {},
    };
    (game.corrupted || []).forEach(function (xy) {
        if (inside(world, xy[0], xy[1])) world.corrupted[cellIndex(world, xy[0], xy[1])] = 1;
    });
    (game.entities || []).forEach(function (entity) {
        world.seenEntityIds[entity.id] = true;
        addEntity(world, entity);
    });
    // Objects remembered from earlier turns or rounds, now out of sight: assume
    // they are still there, intact, unless we saw them gone this round.
    Object.keys(memory.objects).forEach(function (id) {
        var known = memory.objects[id];
        if (world.seenEntityIds[id] || memory.gone.indexOf(id) >= 0) return;
        var hp = rules[known.type + 'Hp'] || 1; // chestHp, vaseHp, doorHp, portalHp
        addEntity(world, { id: id, type: known.type, x: known.x, y: known.y, hp: hp, remembered: true });
    });
    return world;
}

function addEntity(world, entity) {
    if (!inside(world, entity.x, entity.y)) return;
    var cell = cellIndex(world, entity.x, entity.y);
    if (entity.remembered && world.blocker[cell]) return; // what we see wins over memory
    if (isBlocking(entity) || entity.type === 'portal') {
        world.blocker[cell] = entity;
    } else if (entity.type === 'gold' || entity.type === 'item') {
        (world.loot[cell] = world.loot[cell] || []).push(entity);
    }
}

function inside(world, x, y) {
    return x >= 0 && y >= 0 && x < world.width && y < world.height;
}

function cellIndex(world, x, y) {
    return y * world.width + x;
}

function terrain(world, x, y) {
    var row = inside(world, x, y) ? world.map[y] : undefined;
    return row && x < row.length ? row[x] : '#'; // out of bounds counts as wall
}

/** Cells nobody can enter: walls and intact spawners (digits). */
function isSolid(ch) {
    return ch === '#' || (ch >= '1' && ch <= '9');
}

// --- vision (the spec's line of sight), to know what we have seen -------------------

function lineIsClear(world, x0, y0, x1, y1) {
    var dx = Math.abs(x1 - x0), sx = Math.sign(x1 - x0);
    var dy = -Math.abs(y1 - y0), sy = Math.sign(y1 - y0);
    var err = dx + dy;
    // The spec's integer line (Settled question 14): only cells strictly between
    // the two ends can block it.
    for (;;) {
        if (x0 === x1 && y0 === y1) return true;
        var e2 = 2 * err;
        if (e2 >= dy) { err += dy; x0 += sx; }
        if (e2 <= dx) { err += dx; y0 += sy; }
        if (x0 === x1 && y0 === y1) return true;
        var blocker = world.blocker[cellIndex(world, x0, y0)];
        if (terrain(world, x0, y0) === '#' || (blocker && blocker.type === 'door')) return false;
    }
}

function visibleCells(world, adventurer) {
    var radius = adventurer.vision || 5;
    var cells = [];
    for (var y = adventurer.y - radius; y <= adventurer.y + radius; y++) {
        for (var x = adventurer.x - radius; x <= adventurer.x + radius; x++) {
            var dx = x - adventurer.x, dy = y - adventurer.y;
            if (!inside(world, x, y) || dx * dx + dy * dy > radius * radius) continue;
            if (lineIsClear(world, adventurer.x, adventurer.y, x, y) || lineIsClear(world, x, y, adventurer.x, adventurer.y)) {
                cells.push(cellIndex(world, x, y));
            }
        }
    }
    return cells;
}

// --- corruption forecast -------------------------------------------------------------

/**
 * For every cell, the turn at whose end corruption should reach it: it starts
 * on the spawners at corruptionStartAt and spreads one cell (not onto walls)
 * every corruptionSpreadSpeed turns.
 */
function corruptionForecast(world, rules) {
    var start = rules.corruptionStartAt, speed = Math.max(1, rules.corruptionSpreadSpeed);
    var eta = new Float64Array(world.width * world.height).fill(Infinity);
    var queue = [], step;
    var burning = [];
    for (var i = 0; i < eta.length; i++) if (world.corrupted[i]) burning.push(i);
    if (burning.length > 0) {
        // Already spreading: the next spread is the first spread turn from now on.
        var next = start + speed;
        while (next < world.turn) next += speed;
        burning.forEach(function (cell) { eta[cell] = world.turn - 1; queue.push(cell); });
        step = function (from) { return from === world.turn - 1 ? next : from + speed; };
    } else {
        for (var y = 0; y < world.height; y++) {
            for (var x = 0; x < world.width; x++) {
                var ch = terrain(world, x, y);
                if (ch >= '1' && ch <= '9') { eta[cellIndex(world, x, y)] = start; queue.push(cellIndex(world, x, y)); }
            }
        }
        step = function (from) { return from + speed; };
    }
    for (var head = 0; head < queue.length; head++) {
        var cell = queue[head];
        var cx = cell % world.width, cy = (cell - cx) / world.width;
        DIRECTIONS.forEach(function (d) {
            var nx = cx + d.dx, ny = cy + d.dy;
            if (terrain(world, nx, ny) === '#') return; // never spreads onto walls
            var n = cellIndex(world, nx, ny);
            if (eta[n] !== Infinity) return;
            eta[n] = step(eta[cell]);
            queue.push(n);
        });
    }
    return eta;
}

// --- path finding ------------------------------------------------------------------

/**
 * Dijkstra from one adventurer. Returns, for every cell it can reach or bump
 * into, `touch[cell]`: the turns needed to step onto it (or hit it until it
 * breaks and then step in, or bump into it, or slide over it), and
 * `firstMove[cell]`: the first direction to take; plus parent links to rebuild
 * the path. Cells passed in a slide are touched but not stood on, so standing
 * places (`dist`) are tracked apart from touched ones.
 */
function findPaths(world, rules, adventurer) {
    var size = world.width * world.height;
    var dist = new Float64Array(size).fill(Infinity); // cost to stand on a cell
    var standFirst = new Int8Array(size).fill(-1); // first move towards a standing place
    var standParent = new Int32Array(size).fill(-1);
    var touch = new Float64Array(size).fill(Infinity); // cost to reach, hit or pass a cell
    var firstMove = new Int8Array(size).fill(-1);
    var touchParent = new Int32Array(size).fill(-1); // the standing place it is reached from
    var damage = adventurer.damage || rules.adventurerDamage;
    var start = cellIndex(world, adventurer.x, adventurer.y);
    var heap = new MinHeap();
    dist[start] = 0;
    heap.push(0, start);
    // The adventurer leaves its cell when it moves, so it does not block its own
    // slides (stepping LEFT onto an R treadmill brings it back to where it was).
    var self = world.blocker[start];
    delete world.blocker[start];

    function reach(cell, cost, first, from) {
        if (cost < touch[cell]) { touch[cell] = cost; firstMove[cell] = first; touchParent[cell] = from; }
    }
    function penalty(cell, x, y) {
        var ch = terrain(world, x, y);
        return (ch === '^' && !adventurer.spikeImmune ? SPIKE_PENALTY : 0) + (world.corrupted[cell] ? CORRUPTION_PENALTY : 0);
    }

    while (heap.size() > 0) {
        var top = heap.pop();
        var here = top.value;
        if (top.key > dist[here]) continue; // stale entry
        var hx = here % world.width, hy = (here - hx) / world.width;
        for (var d = 0; d < 4; d++) {
            var first = here === start ? d : standFirst[here];
            var x = hx + DIRECTIONS[d].dx, y = hy + DIRECTIONS[d].dy;
            var ch = terrain(world, x, y);
            if (isSolid(ch)) continue; // would cost block damage: never planned
            var cell = cellIndex(world, x, y);
            var cost = dist[here] + 1;
            var entity = world.blocker[cell];
            var enemy = entity && entity.type === 'adventurer' && entity.team !== adventurer.team;
            if (ch === 'H' || enemy || (entity && entity.type === 'portal' && isOpen(entity))) {
                // Bump targets: heal, attack, or escape. Never walked through.
                reach(cell, cost, first, here);
                continue;
            }
            if (entity && entity.type === 'adventurer') {
                // A teammate: bumping it hands it our gold. Plan through it at a
                // small extra cost, since it usually moves on; routing around it
                // instead makes both dither when they meet in a corridor.
                reach(cell, cost, first, here);
                cost += FRIEND_PENALTY;
            } else if (entity) {
                cost += Math.ceil(Math.max(entity.hp, 1) / damage); // hits before it breaks
            }
            if (entity && entity.type === 'portal') { reach(cell, cost, first, here); continue; } // opens, then escape
            // Step in, then follow ice and treadmills as the engine would.
            cost += penalty(cell, x, y);
            reach(cell, cost, first, here);
            var landing = slide(world, x, y, d, function (passed, px, py) {
                cost += penalty(passed, px, py);
                reach(passed, cost, first, here);
            });
            if (landing >= 0 && cost < dist[landing]) {
                dist[landing] = cost;
                standFirst[landing] = first;
                standParent[landing] = here;
                heap.push(cost, landing);
            }
        }
    }
    if (self) world.blocker[start] = self;
    return { touch: touch, firstMove: firstMove, touchParent: touchParent, standParent: standParent, start: start };
}

/**
 * Forced steps after entering (x, y) moving in direction d: ice keeps the
 * direction, a treadmill imposes its own; a blocked step just stops. Calls
 * onPass for every cell slid into. Returns where the adventurer stops, or -1
 * when it slides into an open portal (that escapes: not a place to stand).
 */
function slide(world, x, y, d, onPass) {
    for (var steps = 0; steps < 64; steps++) {
        var ch = terrain(world, x, y);
        if (ch === '~') { /* keep d */ } else if (ch in TREADMILL) { d = TREADMILL[ch]; } else { break; }
        var nx = x + DIRECTIONS[d].dx, ny = y + DIRECTIONS[d].dy;
        var next = terrain(world, nx, ny);
        var entity = world.blocker[cellIndex(world, nx, ny)];
        if (entity && entity.type === 'portal' && isOpen(entity)) {
            onPass(cellIndex(world, nx, ny), nx, ny);
            return -1;
        }
        if (isSolid(next) || next === 'H' || entity) break;
        x = nx;
        y = ny;
        onPass(cellIndex(world, x, y), x, y);
    }
    return cellIndex(world, x, y);
}

/** The cells on the way to `cell` (its parents back to the start). */
function pathTo(paths, cell) {
    var cells = [cell];
    for (var c = paths.touchParent[cell]; c >= 0 && c !== paths.start; c = paths.standParent[c]) cells.push(c);
    return cells;
}

// A small binary heap keyed by path cost.
function MinHeap() { this.items = []; }
MinHeap.prototype.size = function () { return this.items.length; };
MinHeap.prototype.push = function (key, value) {
    var items = this.items, i = items.length;
    items.push({ key: key, value: value });
    while (i > 0) {
        var up = (i - 1) >> 1;
        if (items[up].key <= items[i].key) break;
        var t = items[up]; items[up] = items[i]; items[i] = t; i = up;
    }
};
MinHeap.prototype.pop = function () {
    var items = this.items, top = items[0], last = items.pop();
    if (items.length > 0) {
        items[0] = last;
        for (var i = 0; ;) {
            var l = 2 * i + 1, r = l + 1, m = i;
            if (l < items.length && items[l].key < items[m].key) m = l;
            if (r < items.length && items[r].key < items[m].key) m = r;
            if (m === i) break;
            var t = items[m]; items[m] = items[i]; items[i] = t; i = m;
        }
    }
    return top;
};

// --- memory (the persistent state) -------------------------------------------------

function loadMemory(input) {
    var game = input.gameState;
    var saved = input.state && input.state.raider === 1 ? input.state : null;
    var memory = {
        raider: 1, // marks a state this script wrote
        round: game.round,
        objects: saved ? saved.objects : {}, // id -> {type, x, y}: chests, vases, doors, portals
        gone: saved && saved.round === game.round ? saved.gone : [], // broken or used this round
        seen: saved && saved.round === game.round ? saved.seen : '', // '1' per cell seen this round
        leaving: saved && saved.round === game.round ? saved.leaving : {}, // id -> portal cell it heads for
    };
    if (memory.seen.length !== game.width * game.height) memory.seen = '0'.repeat(game.width * game.height);
    return memory;
}

function updateMemory(memory, world, input, mine) {
    (input.gameState.entities || []).forEach(function (entity) {
        var kind = entity.type;
        if (kind === 'chest' || kind === 'vase' || kind === 'door' || kind === 'portal') {
            memory.objects[entity.id] = { type: kind, x: entity.x, y: entity.y };
        }
    });
    var seen = memory.seen.split('');
    mine.forEach(function (adventurer) {
        visibleCells(world, adventurer).forEach(function (cell) {
            seen[cell] = '1';
            // A remembered object on a cell we see, yet absent from the input: gone.
            var entity = world.blocker[cell];
            if (entity && entity.remembered && memory.gone.indexOf(entity.id) < 0) {
                memory.gone.push(entity.id);
                delete world.blocker[cell];
            }
        });
    });
    memory.seen = seen.join('');
    world.seen = memory.seen;
}

// --- play -------------------------------------------------------------------------

function play(input) {
    var rules = rulesOf(input);
    var game = input.gameState;
    var memory = loadMemory(input);
    var world = buildWorld(input, rules, memory);
    var mine = (game.entities || []).filter(function (e) { return e.type === 'adventurer' && e.team === input.you; });
    updateMemory(memory, world, input, mine);
    var eta = corruptionForecast(world, rules);
    var actions = [];
    var claimed = {}; // cell index -> true: a teammate already goes for it

    var plans = mine.map(function (adventurer) { return { adventurer: adventurer, paths: findPaths(world, rules, adventurer) }; });

    // Portals, one per adventurer. Those already on their way out keep the
    // portal they chose (remembered in state) while it is there; then the
    // cheapest (adventurer, portal) pairs go first.
    var portals = Object.keys(world.blocker).map(Number).filter(function (cell) { return world.blocker[cell].type === 'portal'; });
    plans.forEach(function (plan) {
        var kept = memory.leaving[plan.adventurer.id];
        plan.wasLeaving = kept !== undefined;
        if (plan.wasLeaving && portals.indexOf(kept) >= 0 && plan.paths.touch[kept] < Infinity && !claimed[kept]) {
            plan.portal = kept;
            claimed[kept] = true;
        }
    });
    var pairs = [];
    plans.forEach(function (plan) {
        portals.forEach(function (cell) {
            if (plan.paths.touch[cell] < Infinity) pairs.push({ plan: plan, cell: cell, cost: plan.paths.touch[cell] });
        });
    });
    pairs.sort(function (a, b) { return (b.plan.wasLeaving - a.plan.wasLeaving) || (a.cost - b.cost); });
    pairs.forEach(function (pair) {
        if (pair.plan.portal === undefined && !claimed[pair.cell]) {
            pair.plan.portal = pair.cell;
            claimed[pair.cell] = true;
        }
    });

    // Time to leave? When, going now, we would pass some cell of the path only
    // ESCAPE_MARGIN turns before the fire reaches it (or the round ends), or when
    // hurt and carrying gold. Once decided it stays decided for the round
    // (remembered in state), or the adventurer would dither as the estimate
    // moves by a turn or two.
    plans.forEach(function (plan) {
        if (plan.portal === undefined) return;
        var touch = plan.paths.touch;
        var slack = rules.maxTurnsPerRound - (game.turn + touch[plan.portal]);
        slack = Math.min(slack, eta[plan.paths.start] - game.turn);
        pathTo(plan.paths, plan.portal).forEach(function (cell) {
            slack = Math.min(slack, eta[cell] - (game.turn + touch[cell]));
        });
        var hurt = plan.adventurer.hp <= 40 && plan.adventurer.gold > 0;
        plan.leaving = plan.wasLeaving || slack <= ESCAPE_MARGIN || hurt;
        if (plan.leaving) memory.leaving[plan.adventurer.id] = plan.portal;
    });
    var leavers = plans.filter(function (plan) { return plan.leaving; });

    plans.forEach(function (plan) {
        var action = selfCare(plan.adventurer, rules) || chooseMove(plan, leavers, world, rules, claimed);
        if (action) actions.push(Object.assign({ adventurerId: plan.adventurer.id }, action));
    });

    return { actions: actions, state: memory };
}

/** A potion when badly hurt, or a picked-up item into an empty slot. */
function selfCare(adventurer, rules) {
    var inventory = adventurer.inventory || [];
    var equipment = adventurer.equipment || {};
    var maxHp = adventurer.maxHp || rules.adventurerHp;
    for (var i = 0; i < inventory.length; i++) {
        var info = itemInfo(rules, inventory[i].itemType);
        if (info.slot === 'consumable' && adventurer.hp <= maxHp / 2) {
            return { use: { itemId: inventory[i].id, reason: 'drink ' + inventory[i].itemType } };
        }
        if ((info.slot === 'weapon' || info.slot === 'armor' || info.slot === 'accessory') && !equipment[info.slot]) {
            return { use: { itemId: inventory[i].id, reason: 'equip ' + inventory[i].itemType } };
        }
    }
    return null;
}

function chooseMove(plan, leavers, world, rules, claimed) {
    var adventurer = plan.adventurer, paths = plan.paths;
    var moveTo = function (cell, reason) {
        var d = paths.firstMove[cell];
        return d < 0 ? null : { move: { direction: DIRECTIONS[d].name, reason: reason } };
    };

    if (plan.leaving) return moveTo(plan.portal, 'to the portal');

    // No portal for this one, but a teammate is escaping: give it our gold.
    if (plan.portal === undefined && adventurer.gold > 0) {
        var carrier = leavers
            .filter(function (other) { return other.adventurer.id !== adventurer.id; })
            .map(function (other) { return cellIndex(world, other.adventurer.x, other.adventurer.y); })
            .filter(function (cell) { return paths.touch[cell] < Infinity; })
            .sort(function (a, b) { return paths.touch[a] - paths.touch[b]; })[0];
        if (carrier !== undefined) return moveTo(carrier, 'gold to a teammate who escapes');
    }

    // Raid: the best value per turn of travel among loot, chests and vases.
    var best = null, bestScore = 0;
    var consider = function (cell, value, reason) {
        if (claimed[cell] || !(paths.touch[cell] < Infinity) || value <= 0) return;
        var score = value / (1 + paths.touch[cell]);
        if (score > bestScore) { best = { cell: cell, reason: reason }; bestScore = score; }
    };
    Object.keys(world.loot).forEach(function (key) {
        world.loot[key].forEach(function (thing) {
            if (thing.type === 'gold') consider(Number(key), thing.amount, 'pick up gold');
            else consider(Number(key), Math.max(1, Math.floor(itemInfo(rules, thing.itemType).cost / 2)), 'pick up ' + thing.itemType);
        });
    });
    Object.keys(world.blocker).forEach(function (key) {
        var entity = world.blocker[key];
        if (entity.type === 'chest') consider(Number(key), rules.chestGold, 'break a chest');
        if (entity.type === 'vase') consider(Number(key), rules.vaseGold, 'break a vase');
    });
    var maxHp = adventurer.maxHp || rules.adventurerHp;
    if (adventurer.hp <= maxHp / 2 && adventurer.gold >= rules.healCost) {
        for (var cell = 0; cell < world.width * world.height; cell++) {
            if (terrain(world, cell % world.width, Math.floor(cell / world.width)) === 'H') consider(cell, 10, 'heal');
        }
    }
    if (best) {
        claimed[best.cell] = true;
        return moveTo(best.cell, best.reason);
    }

    // Explore: the nearest cell not seen yet this round.
    var target = -1;
    for (var c = 0; c < world.width * world.height; c++) {
        if (world.seen[c] !== '1' && paths.touch[c] < Infinity && !claimed[c] &&
            (target < 0 || paths.touch[c] < paths.touch[target])) target = c;
    }
    if (target >= 0) {
        claimed[target] = true;
        return moveTo(target, 'explore');
    }
    // Nothing left to do: wait near the portal if we have one.
    return plan.portal !== undefined ? moveTo(plan.portal, 'to the portal (nothing left)') : null;
}

// The entry point the game (or the farm's harness) calls.
var script = {
    shop: shop,
    play: play,
};
