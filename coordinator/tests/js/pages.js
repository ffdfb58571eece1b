// Loads the web pages' scripts (coordinator/web) into a Node VM context that stands in
// for the browser window, so that the node tests run the very files the coordinator
// serves. Only what the scripts touch while loading exists: functions that build the
// page (document, canvases) are not called by the tests, and a canvas context is a
// recording stub (`recordingContext`).
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const WEB = path.join(__dirname, "..", "..", "web");

/**
 * A window with common.js, viewer.js and the renderers of `games` loaded: its
 * `MatchFarm` and `games`, each game's object as it registered it (name → {create}).
 */
function loadViewer(games) {
  const window = vm.createContext({ performance, setTimeout, TextDecoder, console });
  window.window = window;
  const run = (file) => vm.runInContext(fs.readFileSync(path.join(WEB, file), "utf8"), window, { filename: file });
  run("common.js");
  run("viewer.js");
  const { MatchFarm } = window;
  const registered = new Map();
  const register = MatchFarm.registerGame;
  MatchFarm.registerGame = (name, game) => {
    registered.set(name, game);
    register(name, game);
  };
  for (const game of games) run(`games/${game}.js`);
  return { MatchFarm, games: registered };
}

/** Reads a replay's text as the viewer does: `{replay: {setup, initial, frames, footer}, cutOff}`. */
async function parseReplay(MatchFarm, text) {
  const parser = new MatchFarm.ReplayParser();
  await parser.push(text);
  return { replay: parser.finish(), cutOff: parser.cutOff };
}

/**
 * A stand-in for a canvas's 2D context: every method exists and does nothing but
 * count itself, properties keep what is set, `fillText` keeps its text.
 */
function recordingContext() {
  const calls = new Map();
  const texts = [];
  const state = { canvas: { dataset: {} } };
  const context = new Proxy(state, {
    get(target, name) {
      if (name in target) return target[name];
      if (name === "measureText") return (text) => ({ width: 6 * String(text).length });
      return (...args) => {
        calls.set(name, (calls.get(name) || 0) + 1);
        if (name === "fillText") texts.push(String(args[0]));
      };
    },
    set(target, name, value) {
      target[name] = value;
      return true;
    },
  });
  return { context, calls, texts };
}

module.exports = { loadViewer, parseReplay, recordingContext };
