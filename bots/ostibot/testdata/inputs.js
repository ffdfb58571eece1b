// Builds shop and play inputs shaped as /work/shared/games/ostibot.md says
// ("I/O JSON" and Settled questions 10-17), for the tests. Not a game engine:
// it does not compute vision, the tests choose what is visible.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const ITEMS = {
    rusty_sword: { slot: 'weapon', cost: 2, damage: 5 },
    steel_blade: { slot: 'weapon', cost: 5, damage: 10 },
    enchanted_axe: { slot: 'weapon', cost: 10, damage: 20 },
    leather_vest: { slot: 'armor', cost: 2, armor: 5 },
    chainmail: { slot: 'armor', cost: 5, armor: 10 },
    plate_armor: { slot: 'armor', cost: 10, armor: 15 },
    scouts_binocular: { slot: 'accessory', cost: 2, vision: 5 },
    speed_boots: { slot: 'accessory', cost: 5, vision: 2 },
    big_boots: { slot: 'accessory', cost: 4, spikeImmune: true },
    health_potion: { slot: 'consumable', cost: 3, heal: 80 },
    greater_health_potion: { slot: 'consumable', cost: 6, heal: 160 },
};

// The spec's shop input "rules" object.
const RULES = {
    nbRounds: 2, startingGold: 3, timeout: 300, adventurersPerRound: 3, adventurerHp: 120,
    adventurerDamage: 20, blockDamage: 20, visionLength: 5, corruptionStartAt: 30, corruptionSpreadSpeed: 4,
    corruptionDamage: 20, spikeDamage: 20, portalHp: 100, chestHp: 100, chestGold: 12, vaseHp: 40, vaseGold: 3,
    doorHp: 40, healCost: 2, maxTurnsPerRound: 200, items: ITEMS,
};

const TEAMS = [{ id: 1, name: 'alpha' }, { id: 2, name: 'beta' }];
const KIND_ORDER = ['adventurer', 'door', 'chest', 'vase', 'portal', 'gold', 'item'];
const OBJECT_OF = { '+': 'door', C: 'chest', V: 'vase', O: 'portal' };
const HP_OF = { door: 40, chest: 100, vase: 40, portal: 100 };

function sampleMap() {
    return fs.readFileSync(path.join(__dirname, 'sample_map.txt'), 'utf8').trimEnd().split('\n');
}

/** Terrain rows (objects shown as '.'), the map objects with e{n} ids, spawners per team. */
function parseMap(rows) {
    const width = rows[0].length;
    const objects = [];
    const spawners = {};
    const terrain = rows.map((row, y) =>
        row
            .split('')
            .map((ch, x) => {
                if (OBJECT_OF[ch]) {
                    const type = OBJECT_OF[ch];
                    const object = { id: `e${y * width + x + 1}`, type, x, y, hp: HP_OF[type] };
                    if (type === 'portal') object.open = false;
                    objects.push(object);
                    return '.';
                }
                if (ch >= '1' && ch <= '9') (spawners[ch] = spawners[ch] || []).push([x, y]);
                return ch;
            })
            .join(''),
    );
    return { width, height: rows.length, terrain, objects, spawners };
}

function adventurer(fields) {
    const weapon = fields.equipment && fields.equipment.weapon;
    const bonus = weapon ? ITEMS[weapon.itemType].damage : 0;
    return {
        id: fields.id, type: 'adventurer', team: fields.team, x: fields.x, y: fields.y,
        hp: fields.hp === undefined ? 120 : fields.hp, maxHp: 120,
        gold: fields.gold || 0, damage: 20 + bonus, armor: 0, vision: 5, spikeImmune: false,
        equipment: fields.equipment || { weapon: null, armor: null, accessory: null },
        inventory: fields.inventory || [], veteran: false,
    };
}

/** An enemy as bots see it (Settled question 16). */
function enemy(fields) {
    return {
        id: fields.id, type: 'adventurer', team: fields.team, x: fields.x, y: fields.y,
        hp: fields.hp === undefined ? 120 : fields.hp, maxHp: 120,
        equipment: fields.equipment || { weapon: null, armor: null, accessory: null },
    };
}

function sortEntities(entities) {
    const number = (id) => Number(String(id).replace(/^\D+/, ''));
    return entities.slice().sort((a, b) =>
        a.y - b.y || a.x - b.x || KIND_ORDER.indexOf(a.type) - KIND_ORDER.indexOf(b.type) || number(a.id) - number(b.id));
}

function shopInput({ you = 1, round = 1, gold = 3, adventurers, state = null } = {}) {
    const own = adventurers || [
        { id: 'a1', team: you, x: 1, y: 1 },
        { id: 'a2', team: you, x: 1, y: 2 },
        { id: 'a3', team: you, x: 1, y: 3 },
    ];
    return {
        you, round, rules: RULES, teams: TEAMS,
        teamsGold: { 1: you === 1 ? gold : 3, 2: you === 2 ? gold : 3 },
        adventurers: own.map(adventurer), state,
    };
}

/**
 * A play input. `rows` is the map as written (with C V + O and digits), `own`
 * and `enemies` adventurer fields, `visible(object)` which map objects to show
 * (default: all), `extra` more entities (gold piles, items), `corrupted`
 * [[x,y],...], `spawnersBurnt` shows the spawners as floor (after turn 30).
 */
function playInput({ rows = sampleMap(), you = 1, round = 1, turn = 1, own = [], enemies = [], visible = () => true,
    objects = null, extra = [], corrupted = [], spawnersBurnt = false, state = null } = {}) {
    const parsed = parseMap(rows);
    const map = parsed.terrain.map((row) => (spawnersBurnt ? row.replace(/[1-9]/g, '.') : row));
    const shown = (objects || parsed.objects).filter(visible);
    const entities = sortEntities([...own.map(adventurer), ...enemies.map(enemy), ...shown, ...extra]);
    return {
        you, rules: RULES, teams: TEAMS,
        gameState: {
            round, turn, width: parsed.width, height: parsed.height, teamsGold: { 1: 3, 2: 3 },
            map, corrupted: corrupted.slice().sort((a, b) => a[1] - b[1] || a[0] - b[0]), entities,
        },
        state,
    };
}

module.exports = { ITEMS, RULES, TEAMS, sampleMap, parseMap, shopInput, playInput };
