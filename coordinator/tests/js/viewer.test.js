// The replay viewer's reading of replays and its game renderers, in Node: the files
// the coordinator serves (coordinator/web), loaded by pages.js. Run with
// `node --test coordinator/tests/js/`.
//
// replays/{game}.jsonl are short matches written by the engine (format 2: the header
// holds the state before step 1); the coordinator's unit tests check that they still
// re-simulate byte for byte (src/web.rs). A format 1 replay, written before headers
// carried that state, is the same file with the header's `state` taken out.
"use strict";

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { loadViewer, parseReplay, recordingContext } = require("./pages.js");

const GAMES = ["botwars", "vindinium", "maze", "ostibot"];

function replayText(game) {
  return fs.readFileSync(path.join(__dirname, "replays", `${game}.jsonl`), "utf8");
}

/** `value` made in the pages' window as plain data of this one (deepEqual compares prototypes). */
function plain(value) {
  return JSON.parse(JSON.stringify(value));
}

/** `text` as format 1 wrote it: the header without the state before step 1. */
function asFormat1(text) {
  const [first, ...rest] = text.split("\n");
  const header = JSON.parse(first);
  delete header.state;
  header.format = 1;
  return [JSON.stringify(header), ...rest].join("\n");
}

/** The renderer of `game` for `text`, as the viewer creates it (no job id: no fog of war). */
async function renderer(game, text) {
  const { MatchFarm, games } = loadViewer([game]);
  const { replay } = await parseReplay(MatchFarm, text);
  const seatColors = MatchFarm.seatColors(replay.setup.players.length);
  return { replay, view: games.get(game).create(replay, { seatColors, jobId: null }) };
}

test("the state before step 1 is the header's", async () => {
  for (const game of GAMES) {
    const text = replayText(game);
    const lines = text.trimEnd().split("\n");
    const { MatchFarm } = loadViewer([]);
    const { replay, cutOff } = await parseReplay(MatchFarm, text);
    assert.equal(cutOff, false);
    assert.equal(JSON.parse(lines[0]).format, 2, game);
    assert.deepEqual(plain(replay.initial), JSON.parse(lines[0]).state, game);
    assert.deepEqual(plain(replay.frames[0].state), JSON.parse(lines[1]).state, game);
    assert.equal(replay.frames.length, lines.length - 2, game);
    assert.notEqual(replay.footer, null, game);
  }
});

test("a format 1 replay reads, without a state before step 1", async () => {
  const { MatchFarm } = loadViewer([]);
  const text = replayText("botwars");
  const { replay } = await parseReplay(MatchFarm, asFormat1(text));
  assert.equal(replay.initial, null);
  assert.deepEqual(plain(replay.frames), plain((await parseReplay(MatchFarm, text)).replay.frames));
});

// What each fixture's first step did, as the renderer tells it: each needs the state
// before the step, so a format 1 replay's first frame tells none of it.
const FIRST_STEP = {
  // Both sides start with one energy and spend it on a botlet at their spawn.
  botwars: ["gatherer (red) spawned a botlet", "random (blue) spawned a botlet"],
  // Hero 1 starts beside a neutral mine and walks into it.
  vindinium: ["north #1 took a neutral mine"],
  // The digger starts beside a treasure and steps onto it.
  maze: ["digger picked up a treasure"],
  // Both teams start at the shop with 3 gold and buy a sword.
  ostibot: [
    "a1 (team 1) bought rusty sword (equipped)",
    "team 1 (raider)'s bank: 3 → 1 gold at the shop",
    "team 2 (random)'s bank: 3 → 1 gold at the shop",
  ],
};

// A header state edited, and a line of the first frame's events that follows the edit
// (a renderer that rebuilt the state from the rules would not see it).
const EDITED_START = {
  // Red had no energy: it spawned nothing.
  botwars: { edit: (state) => { state.p1.energy = 0; }, gone: "gatherer (red) spawned a botlet" },
  // The mine was hero 1's already: nothing changed hands.
  vindinium: {
    edit: (state) => { state.board.tiles = `${state.board.tiles.slice(0, 2)}$1${state.board.tiles.slice(4)}`; },
    gone: "north #1 took a neutral mine",
  },
  // No treasure where the digger stepped.
  maze: {
    edit: (state) => { state.copies[0].items = state.copies[0].items.filter(([x, y]) => !(x === 2 && y === 1)); },
    gone: "digger picked up a treasure",
  },
  // Team 1 had more gold.
  ostibot: {
    edit: (state) => { state.teamsGold["1"] = 5; },
    gone: "team 1 (raider)'s bank: 3 → 1 gold at the shop",
    added: "team 1 (raider)'s bank: 5 → 1 gold at the shop",
  },
};

/** The replay `text` with its header's state changed by `edit`. */
function withEditedStart(text, edit) {
  const [first, ...rest] = text.split("\n");
  const header = JSON.parse(first);
  edit(header.state);
  return [JSON.stringify(header), ...rest].join("\n");
}

for (const game of GAMES) {
  test(`${game}: the first frame's events are measured from the header's state`, async () => {
    const { view } = await renderer(game, replayText(game));
    const events = view.events(0);
    for (const line of FIRST_STEP[game]) assert.ok(events.includes(line), `${game}: ${line} in ${JSON.stringify(events)}`);

    const { edit, gone, added } = EDITED_START[game];
    const edited = (await renderer(game, withEditedStart(replayText(game), edit))).view.events(0);
    assert.ok(!edited.includes(gone), `${game}: ${gone} in ${JSON.stringify(edited)}`);
    if (added) assert.ok(edited.includes(added), `${game}: no ${added} in ${JSON.stringify(edited)}`);
  });

  test(`${game}: a format 1 replay's first frame tells nothing that needs the state before it`, async () => {
    const { replay, view } = await renderer(game, asFormat1(replayText(game)));
    const events = view.events(0);
    for (const line of FIRST_STEP[game]) assert.ok(!events.includes(line), `${game}: ${line} in ${JSON.stringify(events)}`);
    // The later frames are told as in format 2.
    const current = (await renderer(game, replayText(game))).view;
    for (let index = 1; index < replay.frames.length; index += 1) {
      assert.deepEqual(plain(view.events(index)), plain(current.events(index)), `${game} frame ${index}`);
    }
  });

  test(`${game}: every frame draws, with or without the header's state`, async () => {
    for (const text of [replayText(game), asFormat1(replayText(game))]) {
      const { replay, view } = await renderer(game, text);
      const { width, height } = view.size(800);
      assert.ok(width > 0 && height > 0, `${game}: ${width}x${height}`);
      for (let index = 0; index < replay.frames.length; index += 1) {
        const { context, calls } = recordingContext();
        await view.draw(context, index, {});
        assert.ok((calls.get("fillRect") || 0) > 0, `${game} frame ${index} draws nothing`);
        const scores = view.scores(index);
        assert.equal(scores.length, replay.setup.players.length, `${game} frame ${index}`);
        assert.ok(scores.every(Number.isFinite), `${game} frame ${index}: ${scores}`);
      }
    }
  });
}
