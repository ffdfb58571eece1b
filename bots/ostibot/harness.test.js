// Tests for the Ostibot bot side: the harness, raider.js and random_bot.py.
// They need no engine: each test starts the real bot process and talks the
// farm's stdio protocol to it. Run with `node --test bots/ostibot/`.
'use strict';

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const I = require('./testdata/inputs.js');

const HERE = __dirname;
const HARNESS = path.join(HERE, 'harness.js');
const RAIDER = path.join(HERE, 'raider.js');
const RANDOM_BOT = path.join(HERE, 'random_bot.py');
const fixture = (name) => path.join(HERE, 'testdata', name);
const DIRECTIONS = ['UP', 'DOWN', 'LEFT', 'RIGHT'];
const DELTA = { UP: [0, -1], DOWN: [0, 1], LEFT: [-1, 0], RIGHT: [1, 0] };
const SHOP_KINDS = ['buy', 'sell', 'equip', 'unequip', 'transfer'];

/** The environment of a bot process: ours without FARM_* and OSTIBOT_*, plus `extra`. */
function botEnv(extra = {}) {
    const env = {};
    for (const [key, value] of Object.entries(process.env)) {
        if (!key.startsWith('FARM_') && !key.startsWith('OSTIBOT_')) env[key] = value;
    }
    return Object.assign(env, extra);
}

/**
 * One bot process: `ask` writes a request line and resolves with the next reply
 * line; `finish` closes stdin and resolves with the exit code, stderr and any
 * stdout lines nobody asked for (there must be none).
 */
class Bot {
    constructor(command, args, env = {}) {
        this.child = spawn(command, args, { env: botEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
        this.stderr = '';
        this.child.stderr.setEncoding('utf8');
        this.child.stderr.on('data', (chunk) => { this.stderr += chunk; });
        this.lines = [];
        this.waiting = [];
        readline.createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on('line', (line) => {
            const waiter = this.waiting.shift();
            if (waiter) waiter(line);
            else this.lines.push(line);
        });
        this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    }

    static harness(script, env) {
        return new Bot(process.execPath, [HARNESS, script], env);
    }

    static python(env) {
        return new Bot('python3', [RANDOM_BOT], env);
    }

    /** Sends a raw line and resolves with the raw reply line. */
    askRaw(line, timeoutMs = 10000) {
        this.child.stdin.write(`${line}\n`);
        return this.nextLine(timeoutMs);
    }

    nextLine(timeoutMs = 10000) {
        if (this.lines.length > 0) return Promise.resolve(this.lines.shift());
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no reply within ${timeoutMs} ms; stderr:\n${this.stderr}`)), timeoutMs);
            this.waiting.push((line) => { clearTimeout(timer); resolve(line); });
        });
    }

    /** Sends a request object and resolves with the parsed reply. */
    async ask(request, timeoutMs) {
        const line = await this.askRaw(JSON.stringify(request), timeoutMs);
        return JSON.parse(line);
    }

    async finish() {
        this.child.stdin.end();
        const code = await this.exited;
        await new Promise((resolve) => setImmediate(resolve)); // let the last lines arrive
        return { code, stderr: this.stderr, extraLines: this.lines };
    }
}

const shopCall = (seq, fields) => ({ call: 'shop', seq, input: I.shopInput(fields) });
const playCall = (seq, fields) => ({ call: 'play', seq, input: I.playInput(fields) });
const TEAM1 = [{ id: 'a1', team: 1, x: 1, y: 1 }, { id: 'a2', team: 1, x: 1, y: 2 }, { id: 'a3', team: 1, x: 1, y: 3 }];

async function finishClean(bot) {
    const { code, extraLines, stderr } = await bot.finish();
    assert.equal(code, 0, `exit code; stderr:\n${stderr}`);
    assert.deepEqual(extraLines, [], 'nothing on stdout but the replies');
    return stderr;
}

// --- reply shape checks (ostibot.md "I/O JSON", Settled questions 19-20) ------------

function assertShopReply(reply, input) {
    assert.equal(typeof reply, 'object');
    assert.ok(Array.isArray(reply.actions), 'actions is an array');
    const ids = input.adventurers.map((a) => a.id);
    for (const action of reply.actions) {
        const kinds = Object.keys(action).filter((k) => SHOP_KINDS.includes(k) && action[k] !== null);
        assert.equal(kinds.length, 1, `one shop action per entry: ${JSON.stringify(action)}`);
        const body = action[kinds[0]];
        assert.equal(typeof body, 'object');
        if (kinds[0] === 'buy') {
            assert.ok(ids.includes(body.adventurerId), 'buys for one of ours');
            assert.ok(Object.keys(I.ITEMS).includes(body.itemType), `known item type ${body.itemType}`);
            assert.ok(body.equip === undefined || body.equip === null || typeof body.equip === 'boolean');
        }
    }
}

/** Checks a play reply; returns {adventurerId: action}. */
function assertPlayReply(reply, input) {
    assert.equal(typeof reply, 'object');
    assert.ok(Array.isArray(reply.actions), 'actions is an array');
    const own = input.gameState.entities.filter((e) => e.type === 'adventurer' && e.team === input.you);
    const byId = {};
    for (const action of reply.actions) {
        assert.equal(typeof action.adventurerId, 'string');
        const adventurer = own.find((a) => a.id === action.adventurerId);
        assert.ok(adventurer, `acts for one of ours: ${action.adventurerId}`);
        assert.ok(!(action.adventurerId in byId), 'one action per adventurer');
        const hasMove = action.move !== undefined && action.move !== null;
        const hasUse = action.use !== undefined && action.use !== null;
        assert.ok(hasMove !== hasUse, `exactly one of move/use: ${JSON.stringify(action)}`);
        if (hasMove) assert.ok(DIRECTIONS.includes(action.move.direction), `direction ${action.move.direction}`);
        if (hasUse) assert.ok(adventurer.inventory.some((item) => item.id === action.use.itemId), 'uses an item it has');
        byId[action.adventurerId] = action;
    }
    return byId;
}

/** The map character the move of `adventurer` steps to. */
function target(input, adventurer, direction) {
    const [dx, dy] = DELTA[direction];
    const row = input.gameState.map[adventurer.y + dy];
    return row === undefined ? '#' : row[adventurer.x + dx] || '#';
}

// --- the harness ------------------------------------------------------------------

describe('harness', () => {
    test('answers shop and play with one line each, seq first, state passed through', async () => {
        const bot = Bot.harness(fixture('echo_bot.js'));
        const shopLine = await bot.askRaw(JSON.stringify(shopCall(1, { state: { plan: 'rush' } })));
        assert.ok(shopLine.startsWith('{"seq":1,'), shopLine);
        const shop = JSON.parse(shopLine);
        assert.deepEqual(shop.actions, [{ buy: { adventurerId: 'a1', itemType: 'rusty_sword', equip: true } }]);
        assert.deepEqual(shop.state, { from: 'shop', previous: { plan: 'rush' }, calls: 1 });

        const input = I.playInput({ own: TEAM1, state: shop.state });
        const play = await bot.ask({ call: 'play', seq: 2, input });
        assert.equal(play.seq, 2);
        assertPlayReply(play, input);
        assert.equal(play.actions.length, 3);
        assert.equal(play.error, null);
        assert.deepEqual(play.state.previous, shop.state);
        assert.equal(play.state.calls, 2, 'module-level variables persist between calls');
        assert.equal(play.state.sameRealm, true, 'input objects belong to the script realm');
        await finishClean(bot);
    });

    test('console.log and console.error go to stderr, never stdout', async () => {
        const bot = Bot.harness(fixture('echo_bot.js'));
        await bot.ask(shopCall(1));
        await bot.ask(playCall(2, { own: TEAM1, turn: 4 }));
        const stderr = await finishClean(bot);
        assert.match(stderr, /shop called for round 1/);
        assert.match(stderr, /play called for turn 4/);
        assert.match(stderr, /an error line also goes to stderr/);
    });

    test('a throwing play() gets {"seq","error"} (no actions, no state) and the bot goes on', async () => {
        const bot = Bot.harness(fixture('echo_bot.js'));
        const failed = await bot.ask(playCall(7, { own: TEAM1, turn: 13 }));
        assert.deepEqual(Object.keys(failed), ['seq', 'error']);
        assert.equal(failed.seq, 7);
        assert.match(failed.error, /boom at turn 13/);
        const next = await bot.ask(playCall(8, { own: TEAM1, turn: 14 }));
        assert.equal(next.seq, 8);
        assert.equal(next.actions.length, 3);
        const stderr = await finishClean(bot);
        assert.match(stderr, /play threw: Error: boom at turn 13/);
    });

    test('malformed lines each get one error reply, and a later call still works', async () => {
        const bot = Bot.harness(fixture('echo_bot.js'));
        const bad = [
            'this is not JSON',
            '{"call":"play","seq":41,"input":{"you":', // cut short: seq salvaged
            '[1,2,3]',
            'null',
            '',
            '{"call":"dance","seq":42,"input":{}}',
            '{"call":"play","seq":43}',
            '{"call":"play","seq":44,"input":[]}',
        ];
        const replies = [];
        for (const line of bad) replies.push(JSON.parse(await bot.askRaw(line)));
        for (const reply of replies) {
            assert.equal(typeof reply.error, 'string', JSON.stringify(reply));
            assert.ok(!('actions' in reply) || reply.actions.length === 0);
            assert.ok(!('state' in reply), 'the team state is kept');
        }
        assert.deepEqual(replies.map((r) => r.seq), [undefined, 41, undefined, undefined, undefined, 42, 43, 44]);
        const good = await bot.ask(playCall(45, { own: TEAM1 }));
        assert.equal(good.seq, 45);
        assert.equal(good.actions.length, 3);
        await finishClean(bot);
    });

    test('a request without seq gets a reply without seq', async () => {
        const bot = Bot.harness(fixture('echo_bot.js'));
        const reply = await bot.ask({ call: 'shop', input: I.shopInput() });
        assert.ok(!('seq' in reply));
        assert.equal(reply.actions.length, 1);
        await finishClean(bot);
    });

    test('Math.random is seeded: same FARM_SEED/FARM_SEAT repeat, another seat differs', async () => {
        async function draws(env) {
            const bot = Bot.harness(fixture('echo_bot.js'), env);
            const first = await bot.ask(playCall(1, { own: TEAM1 }));
            const second = await bot.ask(playCall(2, { own: TEAM1, turn: 2 }));
            await finishClean(bot);
            return [...first.state.random, ...second.state.random];
        }
        const a = await draws({ FARM_SEED: '42', FARM_SEAT: '0' });
        const b = await draws({ FARM_SEED: '42', FARM_SEAT: '0' });
        const otherSeat = await draws({ FARM_SEED: '42', FARM_SEAT: '1' });
        const otherSeed = await draws({ FARM_SEED: '43', FARM_SEAT: '0' });
        const unset = await draws({});
        const garbage = await draws({ FARM_SEED: 'banana', FARM_SEAT: '-3' });
        assert.deepEqual(a, b);
        assert.notDeepEqual(a, otherSeat);
        assert.notDeepEqual(a, otherSeed);
        assert.deepEqual(unset, garbage, 'missing or bad values count as 0');
        for (const x of [...a, ...otherSeat]) assert.ok(x >= 0 && x < 1);
        assert.equal(new Set(a).size, a.length, 'draws differ from each other');
    });

    test('`const script` with `this` calls works', async () => {
        const bot = Bot.harness(fixture('const_bot.js'));
        const shop = await bot.ask(shopCall(1));
        assert.deepEqual(shop, {
            seq: 1,
            actions: [{ buy: { adventurerId: 'a1', itemType: 'rusty_sword', equip: true } }],
            state: { shopCount: 1 },
        });
        const play = await bot.ask(playCall(2, { turn: 9 }));
        assert.deepEqual(play, { seq: 2, actions: [], state: { kind: 'const', turn: 9 } });
        await finishClean(bot);
    });

    test('module.exports = {play} works, and a missing shop() means no actions', async () => {
        const bot = Bot.harness(fixture('exports_bot.js'));
        assert.deepEqual(await bot.ask(shopCall(1)), { seq: 1, actions: [] });
        assert.deepEqual(await bot.ask(playCall(2, { turn: 3 })), { seq: 2, actions: [], state: { kind: 'exports', turn: 3 } });
        await finishClean(bot);
    });

    test('promises are awaited; EOF waits for a pending call before exiting', async () => {
        const bot = Bot.harness(fixture('async_bot.js'));
        assert.deepEqual(await bot.ask(shopCall(1, { round: 2 })), { seq: 1, actions: [], state: { kind: 'async-shop', round: 2 } });
        const rejected = await bot.ask(playCall(2, { turn: 13 }));
        assert.equal(rejected.seq, 2);
        assert.match(rejected.error, /async boom/);
        bot.child.stdin.write(`${JSON.stringify(playCall(3, { turn: 5 }))}\n`);
        const { code, extraLines } = await bot.finish(); // stdin closed while play is pending
        assert.equal(code, 0);
        assert.equal(extraLines.length, 1);
        assert.deepEqual(JSON.parse(extraLines[0]), { seq: 3, actions: [], state: { kind: 'async-play', turn: 5 } });
    });

    test('odd return values: undefined, an array, a seq of its own, a huge state, BigInt, a loop', async () => {
        const bot = Bot.harness(fixture('odd_bot.js'), { OSTIBOT_CALL_TIMEOUT_MS: '300' });
        assert.deepEqual(await bot.ask(shopCall(1)), { seq: 1, actions: [] }, 'no shop(): no actions');
        assert.deepEqual(await bot.ask(playCall(2, { turn: 1 })), { seq: 2, actions: [] }, 'undefined: no actions');

        const array = await bot.ask(playCall(3, { turn: 2 }));
        assert.deepEqual(Object.keys(array), ['seq', 'error']);
        assert.match(array.error, /returned an array/);

        assert.deepEqual(await bot.ask(playCall(4, { turn: 3 })), { seq: 4, actions: [] }, 'our seq wins');

        const hugeLine = await bot.askRaw(JSON.stringify(playCall(5, { turn: 4 })));
        assert.ok(hugeLine.length < 1 << 20, 'the reply fits the farm limit');
        assert.deepEqual(JSON.parse(hugeLine), { seq: 5, actions: [] }, 'state dropped, actions kept');

        const bigint = await bot.ask(playCall(6, { turn: 5 }));
        assert.match(bigint.error, /JSON cannot encode/);

        const loop = await bot.ask(playCall(7, { turn: 6 }));
        assert.equal(loop.seq, 7);
        assert.match(loop.error, /timed out/);

        assert.deepEqual(await bot.ask(playCall(8, { turn: 7 })), { seq: 8, actions: [], state: { turn: 7 } }, 'alive after the loop');
        await finishClean(bot);
    });

    test('a script that fails to load answers every call with an error, and exits 0 at EOF', async () => {
        const bot = Bot.harness(fixture('broken_bot.js'));
        for (const request of [shopCall(1), playCall(2, {})]) {
            const reply = await bot.ask(request);
            assert.equal(reply.seq, request.seq);
            assert.match(reply.error, /failed to load: SyntaxError/);
            assert.ok(!('actions' in reply) && !('state' in reply));
        }
        const stderr = await finishClean(bot);
        assert.match(stderr, /failed to load/);
    });

    test('the spec example inputs, verbatim, get valid replies', async () => {
        // The "I/O JSON" examples of ostibot.md (its placeholders "..." included).
        const shopInput = {
            you: 1, round: 1, rules: I.RULES, teams: I.TEAMS, teamsGold: { 1: 3, 2: 3 },
            adventurers: [{ id: 'a1', team: 1, x: 1, y: 1, hp: 120, maxHp: 120, gold: 0,
                equipment: { weapon: null, armor: null, accessory: null }, inventory: [], veteran: false }],
            state: null,
        };
        const playInput = {
            you: 1, rules: { '...': 'as above' }, teams: I.TEAMS,
            gameState: { round: 1, turn: 7, width: 23, height: 11, teamsGold: { 1: 1, 2: 3 },
                map: ['#######################', '#1.....^..#.#.........#', '#1..###.#.....~~~~~...#', '...'],
                corrupted: [],
                entities: [
                    { id: 'a1', type: 'adventurer', team: 1, x: 3, y: 1, hp: 100, maxHp: 120, gold: 3, damage: 25, armor: 0,
                        vision: 5, spikeImmune: false,
                        equipment: { weapon: { id: 'i4', itemType: 'rusty_sword' }, armor: null, accessory: null },
                        inventory: [{ id: 'i9', itemType: 'health_potion' }] },
                    { id: 'a5', type: 'adventurer', team: 2, x: 5, y: 4, hp: 120, maxHp: 120,
                        equipment: { weapon: null, armor: { id: 'i7', itemType: 'leather_vest' }, accessory: null } },
                    { id: 'e3', type: 'chest', x: 11, y: 1, hp: 100 },
                    { id: 'e9', type: 'door', x: 7, y: 2, hp: 40 },
                    { id: 'e12', type: 'portal', x: 11, y: 5, hp: 60, open: false },
                    { id: 'g2', type: 'gold', x: 4, y: 1, amount: 3 },
                    { id: 'i15', type: 'item', itemType: 'chainmail', x: 4, y: 5 },
                ] },
            state: { plan: 'rush' },
        };
        for (const script of [RAIDER, fixture('echo_bot.js')]) {
            const bot = Bot.harness(script);
            assertShopReply(await bot.ask({ call: 'shop', seq: 1, input: shopInput }), shopInput);
            assertPlayReply(await bot.ask({ call: 'play', seq: 2, input: playInput }), playInput);
            await finishClean(bot);
        }
    });
});

// --- raider.js through the harness ----------------------------------------------------

describe('raider.js', () => {
    test('shop buys the best affordable weapon, equipped', async () => {
        const bot = Bot.harness(RAIDER);
        const cases = [
            [{ gold: 3 }, [['a1', 'rusty_sword']]],
            [{ gold: 1 }, []],
            [{ gold: 12 }, [['a1', 'enchanted_axe'], ['a2', 'rusty_sword']]],
            [{ gold: 12, round: 2 }, [['a1', 'steel_blade']]], // last round: spends at most half
        ];
        let seq = 0;
        for (const [fields, expected] of cases) {
            const request = shopCall(++seq, fields);
            const reply = await bot.ask(request);
            assertShopReply(reply, request.input);
            assert.deepEqual(reply.actions.map((a) => [a.buy.adventurerId, a.buy.itemType]), expected, JSON.stringify(fields));
            assert.ok(reply.actions.every((a) => a.buy.equip === true));
            assert.ok(!('state' in reply), 'shop leaves the state alone');
        }
        await finishClean(bot);
    });

    test('shop equips a picked-up weapon instead of buying one', async () => {
        const bot = Bot.harness(RAIDER);
        const adventurers = [{ id: 'a1', team: 1, x: 1, y: 1, inventory: [{ id: 'i7', itemType: 'steel_blade' }] }];
        const reply = await bot.ask(shopCall(1, { gold: 3, adventurers }));
        assert.deepEqual(reply.actions, [{ equip: { adventurerId: 'a1', itemId: 'i7' } }]);
        await finishClean(bot);
    });

    test('turn 1 on the sample map: valid moves, never into a wall or spawner', async () => {
        const bot = Bot.harness(RAIDER);
        const near = (o) => TEAM1.some((a) => (a.x - o.x) ** 2 + (a.y - o.y) ** 2 <= 25);
        const input = I.playInput({ own: TEAM1, enemies: [{ id: 'a4', team: 2, x: 21, y: 7 }], visible: near });
        const reply = await bot.ask({ call: 'play', seq: 1, input });
        const byId = assertPlayReply(reply, input);
        assert.deepEqual(Object.keys(byId).sort(), ['a1', 'a2', 'a3']);
        for (const adventurer of input.gameState.entities.filter((e) => e.team === 1)) {
            const ch = target(input, adventurer, byId[adventurer.id].move.direction);
            assert.ok(!/[#1-9]/.test(ch), `${adventurer.id} moves ${byId[adventurer.id].move.direction} into '${ch}'`);
        }
        assert.equal(reply.state.raider, 1, 'play returns its memory as state');
        await finishClean(bot);
    });

    // A small room for the scenario tests (team 1 spawns on the left).
    const ROOM = [
        '###########',
        '#1........#',
        '#1........#',
        '#1........#',
        '###########',
    ];

    test('breaks an adjacent vase, picks up adjacent gold', async () => {
        const bot = Bot.harness(RAIDER);
        const vase = await bot.ask(playCall(1, { rows: ROOM, own: [{ id: 'a1', team: 1, x: 4, y: 2 }],
            objects: [{ id: 'e27', type: 'vase', x: 5, y: 2, hp: 40 }] }));
        assert.equal(vase.actions[0].move.direction, 'RIGHT');
        assert.match(vase.actions[0].move.reason, /vase/);
        const gold = await bot.ask(playCall(2, { rows: ROOM, own: [{ id: 'a1', team: 1, x: 4, y: 2 }],
            extra: [{ id: 'g1', type: 'gold', x: 4, y: 1, amount: 3 }] }));
        assert.equal(gold.actions[0].move.direction, 'UP');
        assert.match(gold.actions[0].move.reason, /gold/);
        await finishClean(bot);
    });

    test('prefers gold it can reach without crossing corruption', async () => {
        const bot = Bot.harness(RAIDER);
        // Same gold 2 steps left and 2 steps right; the left way burns.
        const reply = await bot.ask(playCall(1, { rows: ROOM, turn: 31, spawnersBurnt: true,
            own: [{ id: 'a1', team: 1, x: 5, y: 2 }],
            corrupted: [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3], [3, 1], [3, 2], [3, 3], [4, 1], [4, 2], [4, 3]],
            extra: [{ id: 'g1', type: 'gold', x: 3, y: 2, amount: 3 }, { id: 'g2', type: 'gold', x: 7, y: 2, amount: 3 }] }));
        assert.deepEqual(reply.actions[0].move, { direction: 'RIGHT', reason: 'pick up gold' });
        await finishClean(bot);
    });

    test('heads for the portal before corruption closes in, and hits it open', async () => {
        const bot = Bot.harness(RAIDER);
        const portal = { id: 'e21', type: 'portal', x: 9, y: 1, hp: 100, open: false };
        const chest = { id: 'e29', type: 'chest', x: 7, y: 3, hp: 100 };
        // Turn 49: columns 1-5 burn and the next spread (end of turn 50) reaches
        // column 6, where a1 stands: time to go, chest or not.
        const corrupted = [];
        for (let x = 1; x <= 5; x++) for (let y = 1; y <= 3; y++) corrupted.push([x, y]);
        const at = (turn, x, y, objects, state) => playCall(turn, { rows: ROOM, turn, spawnersBurnt: true, corrupted,
            own: [{ id: 'a1', team: 1, x, y }], objects, state });
        const go = await bot.ask(at(49, 6, 2, [portal, chest], null));
        assert.equal(go.actions[0].move.reason, 'to the portal');
        assert.ok(['UP', 'RIGHT'].includes(go.actions[0].move.direction));
        // Next to the portal it keeps hitting it (moving into it)...
        const hit = await bot.ask(at(51, 8, 1, [{ ...portal, hp: 40 }, chest], go.state));
        assert.deepEqual(hit.actions[0].move, { direction: 'RIGHT', reason: 'to the portal' });
        // ...and once it is open, steps in.
        const escape = await bot.ask(at(54, 9, 2, [{ ...portal, hp: 0, open: true }, chest], hit.state));
        assert.deepEqual(escape.actions[0].move, { direction: 'UP', reason: 'to the portal' });
        await finishClean(bot);
    });

    test('remembers a portal out of sight through state', async () => {
        const WIDE = ['#####################', '#1..................#', '#####################'];
        const portal = { id: 'e40', type: 'portal', x: 18, y: 1, hp: 100, open: false };
        const bot = Bot.harness(RAIDER);
        // Turn 1: a1 at x=14 sees the portal.
        const first = await bot.ask(playCall(1, { rows: WIDE, own: [{ id: 'a1', team: 1, x: 14, y: 1 }], objects: [portal] }));
        assert.ok(first.state.objects.e40, 'the portal is in the memory');
        // Turn 180, back at x=3: the portal is out of sight; the round ends after 200
        // and the way out takes about 20 turns (15 steps, 5 hits).
        const late = { rows: WIDE, turn: 180, own: [{ id: 'a1', team: 1, x: 3, y: 1 }], objects: [] };
        const withMemory = await bot.ask(playCall(2, { ...late, state: first.state }));
        assert.deepEqual(withMemory.actions[0].move, { direction: 'RIGHT', reason: 'to the portal' });
        const withoutMemory = await bot.ask(playCall(3, { ...late, state: null }));
        assert.notEqual(withoutMemory.actions[0] && withoutMemory.actions[0].move.reason, 'to the portal');
        await finishClean(bot);
    });

    test('drinks a potion when badly hurt', async () => {
        const bot = Bot.harness(RAIDER);
        const reply = await bot.ask(playCall(1, { rows: ROOM,
            own: [{ id: 'a1', team: 1, x: 4, y: 2, hp: 40, inventory: [{ id: 'i3', itemType: 'health_potion' }] }] }));
        assert.equal(reply.actions[0].use.itemId, 'i3');
        await finishClean(bot);
    });
});

// --- random_bot.py ------------------------------------------------------------------

describe('random_bot.py', () => {
    test('shop buys a Rusty Sword when the bank can pay, else nothing', async () => {
        const bot = Bot.python({ FARM_SEED: '5', FARM_SEAT: '0' });
        const rich = shopCall(1, { gold: 3 });
        const reply = await bot.ask(rich);
        assert.equal(reply.seq, 1);
        assertShopReply(reply, rich.input);
        assert.equal(reply.actions.length, 1);
        assert.equal(reply.actions[0].buy.itemType, 'rusty_sword');
        assert.deepEqual(await bot.ask(shopCall(2, { gold: 1 })), { seq: 2, actions: [] });
        await finishClean(bot);
    });

    test('play moves every adventurer, never into a wall or spawner; boxed in means idle', async () => {
        const bot = Bot.python({ FARM_SEED: '5', FARM_SEAT: '1' });
        for (let turn = 1; turn <= 20; turn++) {
            const request = playCall(turn, { own: TEAM1, turn });
            const reply = await bot.ask(request);
            assert.equal(reply.seq, turn);
            const byId = assertPlayReply(reply, request.input);
            for (const adventurer of request.input.gameState.entities.filter((e) => e.team === 1)) {
                const ch = target(request.input, adventurer, byId[adventurer.id].move.direction);
                assert.ok(!/[#1-9H]/.test(ch), `moves into '${ch}'`);
            }
        }
        const boxed = ['#####', '#1#.#', '#####'];
        assert.deepEqual(await bot.ask(playCall(99, { rows: boxed, own: [{ id: 'a1', team: 1, x: 1, y: 1 }] })), { seq: 99, actions: [] });
        await finishClean(bot);
    });

    test('drinks a potion when hurt', async () => {
        const bot = Bot.python();
        const reply = await bot.ask(playCall(1, { own: [{ id: 'a1', team: 1, x: 2, y: 1, hp: 30,
            inventory: [{ id: 'i2', itemType: 'health_potion' }] }] }));
        assert.deepEqual(reply.actions, [{ adventurerId: 'a1', use: { itemId: 'i2', reason: 'hurt' } }]);
        await finishClean(bot);
    });

    test('seeded: the same seed and seat repeat, another seat differs', async () => {
        async function moves(env) {
            const bot = Bot.python(env);
            const out = [];
            for (let turn = 1; turn <= 10; turn++) {
                const reply = await bot.ask(playCall(turn, { own: TEAM1, turn }));
                out.push(reply.actions.map((a) => a.move.direction).join(','));
            }
            await finishClean(bot);
            return out;
        }
        const a = await moves({ FARM_SEED: '7', FARM_SEAT: '0' });
        assert.deepEqual(a, await moves({ FARM_SEED: '7', FARM_SEAT: '0' }));
        assert.notDeepEqual(a, await moves({ FARM_SEED: '7', FARM_SEAT: '1' }));
    });

    test('a bad line gets no actions (seq kept when readable) and the bot goes on', async () => {
        const bot = Bot.python();
        assert.deepEqual(JSON.parse(await bot.askRaw('garbage')), { actions: [] });
        assert.deepEqual(JSON.parse(await bot.askRaw('{"call":"fly","seq":3,"input":{}}')), { seq: 3, actions: [] });
        assert.deepEqual(JSON.parse(await bot.askRaw('{"call":"play","seq":4,"input":{"you":1}}')), { seq: 4, actions: [] });
        const ok = await bot.ask(shopCall(5));
        assert.equal(ok.actions.length, 1);
        const stderr = await finishClean(bot);
        assert.match(stderr, /bad request/);
    });
});
