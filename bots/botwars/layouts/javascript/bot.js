'use strict';
// Wanderer: a Skookum Botwars bot for matchfarm's javascript layout.
//
// Protocol (stdio): the farm writes one JSON request per line on stdin,
//   {"player":"r"|"b","state":{"rows":R,"cols":C,"grid":"<R*C chars>",...},...}
// and reads exactly one line back per request: a JSON array of moves
// [{"from":i,"to":j},...]. The grid is row-major (cell i is row i / C, column
// i % C); cells holding our letter are our botlets, and each may stay
// (to == from) or step to a 4-neighbour inside the grid. `[]` is always
// legal: it answers any line we cannot read. At end of input we exit 0.
// Logs go to stderr; stdout carries replies only.
//
// Strategy: every botlet picks uniformly among staying and its in-grid
// neighbours, with a generator seeded from FARM_SEED and FARM_SEAT.

const readline = require('node:readline');
const { XorShift32 } = require('wander-rng'); // vendored: node_modules/wander-rng

function envInt(name) {
  const text = (process.env[name] || '').trim();
  return /^[0-9]+$/.test(text) ? BigInt(text) : 0n;
}

function parseRequest(line) {
  const request = JSON.parse(line);
  const state = request && request.state;
  if (typeof state !== 'object' || state === null) throw new Error('no state object');
  const { rows, cols, grid } = state;
  if (request.player !== 'r' && request.player !== 'b') throw new Error('bad player');
  if (!Number.isInteger(rows) || !Number.isInteger(cols) || rows <= 0 || cols <= 0) {
    throw new Error(`bad size ${rows} x ${cols}`);
  }
  if (typeof grid !== 'string' || grid.length !== rows * cols) throw new Error('grid size mismatch');
  return { player: request.player, rows, cols, grid };
}

function wander({ player, rows, cols, grid }, rng) {
  const moves = [];
  for (let cell = 0; cell < grid.length; cell++) {
    if (grid[cell] !== player) continue;
    const row = Math.floor(cell / cols);
    const col = cell % cols;
    const options = [cell];
    if (row > 0) options.push(cell - cols);
    if (row < rows - 1) options.push(cell + cols);
    if (col > 0) options.push(cell - 1);
    if (col < cols - 1) options.push(cell + 1);
    moves.push({ from: cell, to: options[rng.below(options.length)] });
  }
  return moves;
}

const rng = new XorShift32(envInt('FARM_SEED') * 0x9e3779b97f4a7c15n + envInt('FARM_SEAT') + 1n);
const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });

input.on('line', (line) => {
  let reply = '[]';
  try {
    reply = JSON.stringify(wander(parseRequest(line), rng));
  } catch (error) {
    process.stderr.write(`wanderer: bad request: ${error.message}\n`);
  }
  process.stdout.write(reply + '\n'); // synchronous on a pipe: flushed at once
});
// At end of input readline closes and Node exits with status 0 on its own.
