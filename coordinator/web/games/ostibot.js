// Ostibot replays (README: renderer contract). A frame's state is the engine's snapshot
// (engine/src/ostibot/io.rs, SnapshotDoc): `phase` ("shop", "turn" or "over") and
// `round`/`turn` of the step to come, the round's team `order`, `width`, `height`,
// `teamsGold` {"1": gold, ...}, `map` (terrain rows: # . 1-9 ^ ~ L R U D H; spawners turn
// into "." once corrupted), `corrupted` [[x, y], ...], `entities` (adventurers with team,
// hp, gold, equipment, inventory, veteran; doors, chests, vases and portals with hp and,
// for portals, open; gold piles with amount; ground items with itemType), `escaped`
// {"team": [adventurer ids]} of the round, and `log` (rejected actions, timeouts, ...).
// Seat k plays team k + 1; a frame is one step: every team's shop call, or one team's
// play call (the `sequential` decision mode), or every team's (`snapshot`).
//
// "View as" a team draws the map as that team's bot was sent it, from the match's
// observations (/api/matches/{job_id}/observations/{seat}): the latest play call made on
// a state no later than the frame's, with the cells it could not see darkened. Bots are
// sent entities on seen cells only, not which cells those are, so the seen cells are
// worked out here with the rules' own sight algorithm (ostibot.md, Settled question 14).
"use strict";

(function () {
  const HEADER_HEIGHT = 24;
  const CARD_HEIGHT = 42;
  const CARD_MIN_WIDTH = 200;
  const COLORS = {
    wall: "#3b3f46",
    wallLine: "#4b5058",
    floor: "#e8e2d4",
    floorLine: "#d9d1bf",
    spikes: "#7b7f86",
    ice: "#cfe8f7",
    iceLine: "#ffffff",
    treadmill: "#b9b4a8",
    treadmillArrow: "#55524b",
    healthTile: "#ffffff",
    cross: "#d93838",
    corruption: "rgba(112, 28, 140, 0.45)",
    fog: "rgba(14, 16, 20, 0.62)",
    door: "#8b5a2b",
    doorLine: "#5e3b1a",
    chest: "#a0522d",
    chestBand: "#f2c230",
    vase: "#c77d4a",
    portal: "#6d4bd1",
    portalOpen: "#b59cff",
    gold: "#f2c230",
    goldLine: "#a07a00",
    hpBack: "#3a0d0d",
    header: "#23262b",
    headerText: "#f2f2f2",
    headerMuted: "#b5b9bf",
  };
  const SLOT_COLORS = { weapon: "#c8ccd2", armor: "#6b8fb3", accessory: "#2fa35b", consumable: "#e5484d" };
  const OBJECT_KINDS = new Set(["door", "chest", "vase", "portal"]);
  const ARROWS = { L: [-1, 0], R: [1, 0], U: [0, -1], D: [0, 1] };

  /** The cells of the rules' integer line from (x0, y0) to (x1, y1), both ends included. */
  function sightLine(x0, y0, x1, y1) {
    const cells = [];
    const dx = Math.abs(x1 - x0);
    const sx = Math.sign(x1 - x0);
    const dy = -Math.abs(y1 - y0);
    const sy = Math.sign(y1 - y0);
    let err = dx + dy;
    for (;;) {
      cells.push([x0, y0]);
      if (x0 === x1 && y0 === y1) return cells;
      const e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  /** Whether the line from `from` to `to` has no blocking cell strictly between its ends. */
  function clearLine(from, to, blocks) {
    const cells = sightLine(from[0], from[1], to[0], to[1]);
    for (let k = 1; k < cells.length - 1; k += 1) {
      if (blocks(cells[k][0], cells[k][1])) return false;
    }
    return true;
  }

  /**
   * The cells (row-major, 1 = seen) `viewers` ({x, y, radius}) see together: within the
   * Euclidean radius, with a clear line in either direction (walls and intact doors block).
   */
  function visibleCells(width, height, viewers, blocks) {
    const seen = new Uint8Array(width * height);
    for (const { x, y, radius } of viewers) {
      const reach = Math.max(0, Math.min(radius, Math.max(width, height)));
      for (let cy = Math.max(0, y - reach); cy <= Math.min(height - 1, y + reach); cy += 1) {
        for (let cx = Math.max(0, x - reach); cx <= Math.min(width - 1, x + reach); cx += 1) {
          const index = cy * width + cx;
          const [dx, dy] = [cx - x, cy - y];
          if (seen[index] || dx * dx + dy * dy > radius * radius) continue;
          if ((dx === 0 && dy === 0) || clearLine([x, y], [cx, cy], blocks) || clearLine([cx, cy], [x, y], blocks)) {
            seen[index] = 1;
          }
        }
      }
    }
    return seen;
  }

  /** "rusty_sword" → "rusty sword". */
  function itemName(itemType) {
    return String(itemType).replace(/_/g, " ");
  }

  /** Every item an adventurer has, by id: equipment first, then inventory. */
  function itemsOf(adventurer) {
    const items = new Map();
    const equipment = adventurer.equipment || {};
    for (const slot of ["weapon", "armor", "accessory"]) {
      if (equipment[slot]) items.set(equipment[slot].id, { ...equipment[slot], equipped: slot });
    }
    for (const item of adventurer.inventory || []) items.set(item.id, { ...item, equipped: null });
    return items;
  }

  function adventurersOf(state) {
    return state.entities.filter((entity) => entity.type === "adventurer");
  }

  function byId(entities) {
    return new Map(entities.map((entity) => [entity.id, entity]));
  }

  MatchFarm.registerGame("ostibot", {
    create(replay, { seatColors, jobId }) {
      const { frames, setup } = replay;
      const rules = setup.rules || {};
      const maxHp = rules.adventurerHp || 120;
      const slotOf = (itemType) => (rules.items && rules.items[itemType] ? rules.items[itemType].slot : "consumable");
      const players = setup.players || [];
      const teamCount = players.length;
      const teamColor = (team) => seatColors[team - 1] || "#888";
      const teamName = (team) => `team ${team} (${players[team - 1] ?? "?"})`;
      const { width, height } = frames[0].state;
      let layout = null;

      // The state each frame's step started from: the previous frame's, or the replay
      // header's for the first (null in a format 1 replay: that frame's changes are not shown).
      const before = (index) => (index > 0 ? frames[index - 1].state : replay.initial);
      const actingTeams = (index) => frames[index].replies.map((entry) => entry.seat + 1);

      /** "Round 1 · turn 15 · team 2 (raider) played": what frame `index`'s step was. */
      function stepTitle(index) {
        const start = before(index);
        let when = `step ${frames[index].step}`;
        if (start) when = start.phase === "shop" ? `round ${start.round} · shop` : `round ${start.round} · turn ${start.turn}`;
        const teams = actingTeams(index);
        if (teams.length === 0) return `${when} · nobody was asked`;
        if (teams.length === teamCount) return `${when} · every team`;
        return `${when} · ${teams.map(teamName).join(", ")}`;
      }

      // ---------------------------------------------------------------- events

      function adventurerLabel(adventurer) {
        return `${adventurer.id} (team ${adventurer.team})`;
      }

      /** Who holds each item (by id) in `state`. */
      function holders(state) {
        const held = new Map();
        for (const adventurer of adventurersOf(state)) {
          for (const id of itemsOf(adventurer).keys()) held.set(id, adventurer.id);
        }
        return held;
      }

      /** Items gained and lost; `held` maps item ids to holders before and after the step. */
      function itemEvents(was, is, shopping, held) {
        const lines = [];
        const [had, has] = [itemsOf(was), itemsOf(is)];
        for (const [id, item] of has) {
          const old = had.get(id);
          const name = `${itemName(item.itemType)}${item.equipped ? " (equipped)" : ""}`;
          if (!old) {
            const giver = held.before.get(id);
            if (giver) lines.push(`${adventurerLabel(is)} got ${name} from ${giver}`);
            else lines.push(`${adventurerLabel(is)} ${shopping ? "bought" : "picked up"} ${name}`);
          } else if (item.equipped && !old.equipped) {
            lines.push(`${adventurerLabel(is)} equipped ${itemName(item.itemType)}`);
          }
        }
        for (const [id, item] of had) {
          // Items handed to a team-mate are told by the one who got them.
          if (has.has(id) || held.after.has(id)) continue;
          if (shopping) lines.push(`${adventurerLabel(is)} sold ${itemName(item.itemType)}`);
          else if (slotOf(item.itemType) === "consumable") lines.push(`${adventurerLabel(is)} used ${itemName(item.itemType)}`);
        }
        return lines;
      }

      function adventurerEvents(was, is, shopping, held) {
        const lines = itemEvents(was, is, shopping, held);
        const who = adventurerLabel(is);
        const healed = is.hp > was.hp;
        if (healed && was.gold - is.gold === rules.healCost) {
          lines.push(`${who} paid ${rules.healCost} gold at a health tile (${is.hp} hp)`);
        } else {
          if (healed) lines.push(`${who} healed to ${is.hp} hp`);
          if (is.gold > was.gold) lines.push(`${who} got ${is.gold - was.gold} gold (carries ${is.gold})`);
          if (is.gold < was.gold) lines.push(`${who} handed ${was.gold - is.gold} gold to a team-mate`);
        }
        if (is.hp < was.hp) lines.push(`${who} took ${was.hp - is.hp} damage (${is.hp} hp left)`);
        return lines;
      }

      function events(index) {
        const after = frames[index].state;
        const start = before(index);
        // Without the state the step started from, only what the rules logged.
        if (!start) return [...(after.log || [])];
        const lines = [];
        const newRound = after.round !== start.round;
        const shopping = start.phase === "shop";
        const nowAdventurers = byId(adventurersOf(after));
        const escapedBefore = new Set(Object.values(start.escaped || {}).flat());
        const escapedNow = new Set(Object.values(after.escaped || {}).flat());
        const held = { before: holders(start), after: holders(after) };
        for (const was of adventurersOf(start)) {
          const is = nowAdventurers.get(was.id);
          if (newRound) {
            // The map was reset for the next round: escapees come back as veterans.
            if (is && is.veteran) lines.push(`${adventurerLabel(was)} escaped with ${was.gold} gold`);
            else lines.push(`${adventurerLabel(was)} did not make it out of round ${start.round}`);
          } else if (!is) {
            if (escapedNow.has(was.id) && !escapedBefore.has(was.id)) {
              lines.push(`${adventurerLabel(was)} escaped through a portal with ${was.gold} gold`);
            } else {
              lines.push(`${adventurerLabel(was)} died at (${was.x}, ${was.y})${was.gold > 0 ? `, dropping ${was.gold} gold` : ""}`);
            }
          } else {
            lines.push(...adventurerEvents(was, is, shopping, held));
          }
        }
        if (!newRound) lines.push(...objectEvents(start, after));
        if (!newRound && after.corrupted.length > start.corrupted.length) {
          lines.push(start.corrupted.length === 0
            ? "The spawners turned into corruption"
            : `The corruption spread to ${after.corrupted.length - start.corrupted.length} more cells`);
        }
        lines.push(...bankEvents(start, after, shopping));
        if (newRound) {
          lines.push(`Round ${start.round} is over; round ${after.round} begins, in team order ${after.order.join(", ")}`);
        }
        lines.push(...(after.log || []));
        return lines;
      }

      function objectEvents(start, after) {
        const lines = [];
        const now = byId(after.entities.filter((entity) => OBJECT_KINDS.has(entity.type)));
        for (const was of start.entities) {
          if (!OBJECT_KINDS.has(was.type)) continue;
          const is = now.get(was.id);
          if (!is && was.type !== "portal") lines.push(`The ${was.type} at (${was.x}, ${was.y}) broke`);
          if (is && is.open && !was.open) lines.push(`The portal at (${was.x}, ${was.y}) opened`);
        }
        return lines;
      }

      function bankEvents(start, after, shopping) {
        const lines = [];
        for (let team = 1; team <= teamCount; team += 1) {
          const was = start.teamsGold[team];
          const is = after.teamsGold[team];
          if (was === undefined || is === undefined || was === is) continue;
          const why = shopping ? " at the shop" : after.phase === "over" ? " (the game is over: its escapees' items are sold)" : "";
          lines.push(`${teamName(team)}'s bank: ${was} → ${is} gold${why}`);
        }
        return lines;
      }

      // ---------------------------------------------------------------- fog of war

      // Per seat, a promise of: observations[i] (the text, or null) and latest[i], the
      // index of the observation showing frame i's team view.
      const views = new Map();
      const loadedViews = new Set();
      // Counts draws, so that one still waiting for observations knows it was overtaken.
      let draws = 0;

      async function fetchView(seat) {
        const text = await MatchFarm.apiText(`/api/matches/${encodeURIComponent(jobId)}/observations/${seat}`);
        const observations = new Array(frames.length).fill(null);
        for (const line of text.split("\n")) {
          if (line.trim() === "") continue;
          const { index, observation } = JSON.parse(line);
          if (index >= 0 && index < frames.length) observations[index] = observation;
        }
        // Observation j was made on the state after frame j - 1: frame i shows the latest
        // one made on a state no later than its own, j <= i + 1.
        const latest = new Array(frames.length).fill(-1);
        let last = -1;
        for (let i = 0; i < frames.length; i += 1) {
          for (const j of [i, i + 1]) {
            if (j < frames.length && j > last && observations[j] !== null) last = j;
          }
          latest[i] = last;
        }
        return { observations, latest, parsed: new Map() };
      }

      function loadView(seat) {
        if (!views.has(seat)) {
          const loading = fetchView(seat);
          views.set(seat, loading);
          // A failed load is tried again on the next draw.
          loading.catch(() => views.delete(seat));
        }
        return views.get(seat);
      }

      /** What team `seat + 1` was sent in observation `j`, drawn as a scene. */
      function teamScene(view, seat, j) {
        const team = seat + 1;
        if (!view.parsed.has(j)) {
          const call = JSON.parse(view.observations[j]);
          view.parsed.set(j, call.call === "play" ? playScene(call.input, team, j) : shopScene(call.input, team, j));
        }
        return view.parsed.get(j);
      }

      function playScene(input, team, j) {
        const state = input.gameState;
        const viewers = [];
        for (const entity of state.entities) {
          if (entity.type === "adventurer" && entity.team === team) viewers.push({ x: entity.x, y: entity.y, radius: entity.vision });
        }
        state.map.forEach((row, y) => {
          for (let x = 0; x < row.length; x += 1) {
            if (row[x] === String(team)) viewers.push({ x, y, radius: input.rules.visionLength });
          }
        });
        // Doors block sight whether or not the team sees them: take them from the full
        // state the observation was made from.
        const doors = new Set(before(j).entities.filter((entity) => entity.type === "door").map((door) => door.y * width + door.x));
        const blocks = (x, y) => state.map[y][x] === "#" || doors.has(y * width + x);
        return {
          map: state.map,
          corrupted: state.corrupted,
          entities: state.entities,
          teamsGold: state.teamsGold,
          seen: visibleCells(width, height, viewers, blocks),
          caption: `As ${teamName(team)} saw it: round ${state.round}, turn ${state.turn} (step ${j + 1})`,
        };
      }

      /** The shop call carries no map: the team knows only its own adventurers. */
      function shopScene(input, team, j) {
        const terrain = frames[j].state;
        return {
          map: terrain.map,
          corrupted: terrain.corrupted,
          entities: input.adventurers,
          teamsGold: input.teamsGold,
          seen: new Uint8Array(width * height),
          caption: `${teamName(team)} at the shop of round ${input.round}: no view of the map`,
        };
      }

      function everyoneScene(index) {
        const state = frames[index].state;
        return {
          map: state.map,
          corrupted: state.corrupted,
          entities: state.entities,
          teamsGold: state.teamsGold,
          seen: null,
          caption: stepTitle(index),
          escaped: state.escaped || {},
          acting: new Set(actingTeams(index)),
          // Trails only within a round: a new round puts everyone back on the spawners.
          previous: before(index) && before(index).round === state.round ? before(index) : null,
        };
      }

      // ---------------------------------------------------------------- drawing

      function drawTerrain(ctx, symbol, left, top, tile) {
        if (symbol === "#") {
          ctx.fillStyle = COLORS.wall;
          ctx.fillRect(left, top, tile, tile);
          if (tile >= 12) {
            ctx.strokeStyle = COLORS.wallLine;
            ctx.lineWidth = 1;
            ctx.beginPath();
            ctx.moveTo(left, top + tile / 2 + 0.5);
            ctx.lineTo(left + tile, top + tile / 2 + 0.5);
            ctx.moveTo(left + tile / 2 + 0.5, top);
            ctx.lineTo(left + tile / 2 + 0.5, top + tile / 2);
            ctx.stroke();
          }
          return;
        }
        ctx.fillStyle = symbol === "~" ? COLORS.ice : "LRUD".includes(symbol) ? COLORS.treadmill : COLORS.floor;
        ctx.fillRect(left, top, tile, tile);
        ctx.strokeStyle = COLORS.floorLine;
        ctx.lineWidth = 1;
        ctx.strokeRect(left + 0.5, top + 0.5, tile - 1, tile - 1);
        const [cx, cy] = [left + tile / 2, top + tile / 2];
        if (symbol >= "1" && symbol <= "9") {
          const inset = tile * 0.12;
          ctx.fillStyle = teamColor(Number(symbol));
          ctx.globalAlpha = 0.55;
          ctx.fillRect(left + inset, top + inset, tile - 2 * inset, tile - 2 * inset);
          ctx.globalAlpha = 1;
          if (tile >= 14) {
            ctx.fillStyle = "#fff";
            ctx.font = `bold ${Math.round(tile * 0.45)}px system-ui, sans-serif`;
            ctx.textAlign = "center";
            ctx.textBaseline = "middle";
            ctx.fillText(symbol, cx, cy);
          }
        } else if (symbol === "^") {
          ctx.fillStyle = COLORS.spikes;
          for (const dx of [-0.25, 0, 0.25]) {
            ctx.beginPath();
            ctx.moveTo(cx + (dx - 0.1) * tile, top + tile * 0.75);
            ctx.lineTo(cx + dx * tile, top + tile * 0.3);
            ctx.lineTo(cx + (dx + 0.1) * tile, top + tile * 0.75);
            ctx.fill();
          }
        } else if (symbol === "~") {
          ctx.strokeStyle = COLORS.iceLine;
          ctx.lineWidth = Math.max(1, tile * 0.06);
          ctx.beginPath();
          ctx.moveTo(left + tile * 0.2, top + tile * 0.7);
          ctx.lineTo(left + tile * 0.55, top + tile * 0.3);
          ctx.stroke();
        } else if (ARROWS[symbol]) {
          const [ax, ay] = ARROWS[symbol];
          const size = tile * 0.28;
          ctx.fillStyle = COLORS.treadmillArrow;
          ctx.beginPath();
          ctx.moveTo(cx + ax * size, cy + ay * size);
          ctx.lineTo(cx - ax * size + ay * size, cy - ay * size + ax * size);
          ctx.lineTo(cx - ax * size - ay * size, cy - ay * size - ax * size);
          ctx.closePath();
          ctx.fill();
        } else if (symbol === "H") {
          ctx.fillStyle = COLORS.healthTile;
          ctx.fillRect(left + tile * 0.15, top + tile * 0.15, tile * 0.7, tile * 0.7);
          ctx.fillStyle = COLORS.cross;
          ctx.fillRect(cx - tile * 0.08, top + tile * 0.25, tile * 0.16, tile * 0.5);
          ctx.fillRect(left + tile * 0.25, cy - tile * 0.08, tile * 0.5, tile * 0.16);
        }
      }

      function hpBar(ctx, left, top, tile, hp, most) {
        if (tile < 10) return;
        const barHeight = Math.max(2, tile * 0.1);
        const barTop = top + tile - barHeight - 1;
        ctx.fillStyle = COLORS.hpBack;
        ctx.fillRect(left + 2, barTop, tile - 4, barHeight);
        const share = Math.max(0, Math.min(1, hp / most));
        ctx.fillStyle = share > 0.5 ? "#3fbf5a" : share > 0.2 ? "#f0b429" : "#e5484d";
        ctx.fillRect(left + 2, barTop, (tile - 4) * share, barHeight);
      }

      function drawObject(ctx, entity, left, top, tile) {
        const [cx, cy] = [left + tile / 2, top + tile / 2];
        if (entity.type === "door") {
          ctx.fillStyle = COLORS.door;
          ctx.fillRect(left + tile * 0.12, top + tile * 0.06, tile * 0.76, tile * 0.88);
          ctx.strokeStyle = COLORS.doorLine;
          ctx.lineWidth = 1;
          for (const share of [0.37, 0.63]) {
            ctx.beginPath();
            ctx.moveTo(left + tile * share, top + tile * 0.08);
            ctx.lineTo(left + tile * share, top + tile * 0.92);
            ctx.stroke();
          }
          if (entity.hp < rules.doorHp) hpBar(ctx, left, top, tile, entity.hp, rules.doorHp);
        } else if (entity.type === "chest") {
          ctx.fillStyle = COLORS.chest;
          ctx.fillRect(left + tile * 0.15, top + tile * 0.28, tile * 0.7, tile * 0.5);
          ctx.fillStyle = COLORS.chestBand;
          ctx.fillRect(left + tile * 0.15, top + tile * 0.42, tile * 0.7, tile * 0.08);
          ctx.fillRect(cx - tile * 0.05, top + tile * 0.38, tile * 0.1, tile * 0.16);
          if (entity.hp < rules.chestHp) hpBar(ctx, left, top, tile, entity.hp, rules.chestHp);
        } else if (entity.type === "vase") {
          ctx.fillStyle = COLORS.vase;
          ctx.beginPath();
          ctx.ellipse(cx, top + tile * 0.58, tile * 0.24, tile * 0.22, 0, 0, 2 * Math.PI);
          ctx.fill();
          ctx.fillRect(cx - tile * 0.09, top + tile * 0.2, tile * 0.18, tile * 0.2);
          if (entity.hp < rules.vaseHp) hpBar(ctx, left, top, tile, entity.hp, rules.vaseHp);
        } else if (entity.type === "portal") {
          ctx.lineWidth = Math.max(2, tile * 0.12);
          ctx.strokeStyle = COLORS.portal;
          ctx.fillStyle = entity.open ? COLORS.portalOpen : "rgba(109, 75, 209, 0.15)";
          ctx.beginPath();
          ctx.ellipse(cx, cy, tile * 0.3, tile * 0.38, 0, 0, 2 * Math.PI);
          ctx.fill();
          ctx.stroke();
          if (entity.open) {
            ctx.fillStyle = "#fff";
            ctx.beginPath();
            ctx.arc(cx, cy, tile * 0.1, 0, 2 * Math.PI);
            ctx.fill();
          } else if (entity.hp < rules.portalHp) {
            hpBar(ctx, left, top, tile, entity.hp, rules.portalHp);
          }
        }
      }

      function drawLoot(ctx, entity, left, top, tile) {
        const [cx, cy] = [left + tile / 2, top + tile / 2];
        if (entity.type === "gold") {
          ctx.fillStyle = COLORS.gold;
          ctx.strokeStyle = COLORS.goldLine;
          ctx.lineWidth = 1;
          for (const [dx, dy] of [[-0.12, 0.1], [0.12, 0.1], [0, -0.08]]) {
            ctx.beginPath();
            ctx.arc(cx + dx * tile, cy + dy * tile, tile * 0.14, 0, 2 * Math.PI);
            ctx.fill();
            ctx.stroke();
          }
          if (tile >= 20) {
            ctx.fillStyle = "#000";
            ctx.font = `bold ${Math.round(tile * 0.3)}px system-ui, sans-serif`;
            ctx.textAlign = "right";
            ctx.textBaseline = "top";
            ctx.fillText(String(entity.amount), left + tile - 2, top + 1);
          }
        } else {
          const size = tile * 0.18;
          ctx.fillStyle = SLOT_COLORS[slotOf(entity.itemType)] || SLOT_COLORS.consumable;
          ctx.strokeStyle = "#222";
          ctx.lineWidth = 1;
          ctx.beginPath();
          ctx.moveTo(cx, cy - size);
          ctx.lineTo(cx + size, cy);
          ctx.lineTo(cx, cy + size);
          ctx.lineTo(cx - size, cy);
          ctx.closePath();
          ctx.fill();
          ctx.stroke();
        }
      }

      function drawAdventurer(ctx, adventurer, left, top, tile, acting) {
        const [cx, cy] = [left + tile / 2, top + tile * 0.45];
        ctx.fillStyle = teamColor(adventurer.team);
        ctx.strokeStyle = acting ? "#111" : "#fff";
        ctx.lineWidth = acting ? Math.max(2, tile * 0.1) : Math.max(1, tile * 0.06);
        ctx.beginPath();
        ctx.arc(cx, cy, tile * 0.34, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
        if (tile >= 18) {
          ctx.fillStyle = "#fff";
          ctx.font = `bold ${Math.round(tile * 0.3)}px system-ui, sans-serif`;
          ctx.textAlign = "center";
          ctx.textBaseline = "middle";
          ctx.fillText(adventurer.id.replace(/^a/, ""), cx, cy);
        }
        if (adventurer.veteran) {
          ctx.fillStyle = COLORS.gold;
          ctx.beginPath();
          ctx.arc(left + tile * 0.82, top + tile * 0.16, Math.max(2, tile * 0.1), 0, 2 * Math.PI);
          ctx.fill();
        }
        if (adventurer.gold > 0 && tile >= 14) {
          ctx.fillStyle = COLORS.gold;
          ctx.strokeStyle = COLORS.goldLine;
          ctx.lineWidth = 1;
          ctx.beginPath();
          ctx.arc(left + tile * 0.18, top + tile * 0.16, Math.max(2, tile * 0.09), 0, 2 * Math.PI);
          ctx.fill();
          ctx.stroke();
        }
        hpBar(ctx, left, top, tile, adventurer.hp, maxHp);
      }

      /** Lines from where the acting teams' adventurers stood before the step. */
      function drawTrails(ctx, scene, tile) {
        const was = byId(adventurersOf(scene.previous));
        ctx.save();
        ctx.globalAlpha = 0.6;
        ctx.lineWidth = Math.max(2, tile * 0.12);
        ctx.lineCap = "round";
        for (const entity of scene.entities) {
          if (entity.type !== "adventurer" || !scene.acting.has(entity.team)) continue;
          const old = was.get(entity.id);
          if (!old || (old.x === entity.x && old.y === entity.y)) continue;
          ctx.strokeStyle = teamColor(entity.team);
          ctx.beginPath();
          ctx.moveTo((old.x + 0.5) * tile, (old.y + 0.5) * tile);
          ctx.lineTo((entity.x + 0.5) * tile, (entity.y + 0.5) * tile);
          ctx.stroke();
        }
        ctx.restore();
      }

      function drawHeader(ctx, caption) {
        const { boardWidth } = layout;
        ctx.fillStyle = COLORS.header;
        ctx.fillRect(0, 0, boardWidth, HEADER_HEIGHT);
        ctx.fillStyle = COLORS.headerText;
        ctx.font = "12px system-ui, sans-serif";
        ctx.textAlign = "left";
        ctx.textBaseline = "middle";
        ctx.fillText(fit(ctx, caption, boardWidth - 12), 6, HEADER_HEIGHT / 2);
      }

      /** Fits `text` into `room` pixels, cutting it with an ellipsis. */
      function fit(ctx, text, room) {
        if (ctx.measureText(text).width <= room) return text;
        let cut = text;
        while (cut.length > 0 && ctx.measureText(`${cut}…`).width > room) cut = cut.slice(0, -1);
        return `${cut}…`;
      }

      function drawCards(ctx, scene, viewer) {
        const { boardWidth, boardHeight, columns } = layout;
        const cardWidth = boardWidth / columns;
        const panelTop = HEADER_HEIGHT + boardHeight;
        ctx.fillStyle = COLORS.header;
        ctx.fillRect(0, panelTop, boardWidth, layout.panelHeight);
        const onMap = new Map();
        for (const entity of scene.entities) {
          if (entity.type === "adventurer") onMap.set(entity.team, (onMap.get(entity.team) || 0) + 1);
        }
        for (let team = 1; team <= teamCount; team += 1) {
          const left = ((team - 1) % columns) * cardWidth + 8;
          const top = panelTop + Math.floor((team - 1) / columns) * CARD_HEIGHT + 6;
          ctx.fillStyle = teamColor(team);
          ctx.beginPath();
          ctx.arc(left + 7, top + 9, 7, 0, 2 * Math.PI);
          ctx.fill();
          if (scene.acting && scene.acting.has(team)) {
            ctx.strokeStyle = COLORS.headerText;
            ctx.lineWidth = 2;
            ctx.stroke();
          }
          ctx.textAlign = "left";
          ctx.textBaseline = "middle";
          ctx.fillStyle = COLORS.headerText;
          ctx.font = "bold 13px system-ui, sans-serif";
          ctx.fillText(fit(ctx, `${team} ${players[team - 1] ?? ""}`, cardWidth - 30), left + 20, top + 9);
          ctx.fillStyle = COLORS.headerMuted;
          ctx.font = "11px system-ui, sans-serif";
          const bank = `bank ${scene.teamsGold[team] ?? 0}`;
          let line;
          if (viewer === null) {
            const out = (scene.escaped[team] || []).length;
            line = `${bank} · ${onMap.get(team) || 0} on the map · ${out} escaped`;
          } else {
            line = team === viewer ? `${bank} · ${onMap.get(team) || 0} on the map` : bank;
          }
          ctx.fillText(fit(ctx, line, cardWidth - 12), left, top + 27);
        }
      }

      function drawScene(ctx, scene, viewer) {
        const { tile } = layout;
        const corrupted = new Set(scene.corrupted.map(([x, y]) => y * width + x));
        ctx.save();
        ctx.translate(0, HEADER_HEIGHT);
        for (let y = 0; y < height; y += 1) {
          for (let x = 0; x < width; x += 1) {
            drawTerrain(ctx, scene.map[y][x], x * tile, y * tile, tile);
            if (corrupted.has(y * width + x)) {
              ctx.fillStyle = COLORS.corruption;
              ctx.fillRect(x * tile, y * tile, tile, tile);
            }
          }
        }
        // Unseen cells are darkened under the entities: a team always sees its own
        // adventurers, even at the shop, where it is sent no map.
        if (scene.seen) {
          ctx.fillStyle = COLORS.fog;
          for (let y = 0; y < height; y += 1) {
            for (let x = 0; x < width; x += 1) {
              if (!scene.seen[y * width + x]) ctx.fillRect(x * tile, y * tile, tile, tile);
            }
          }
        }
        // Loot under objects under adventurers.
        const order = (entity) => (entity.type === "adventurer" ? 2 : OBJECT_KINDS.has(entity.type) ? 1 : 0);
        const entities = [...scene.entities].sort((a, b) => order(a) - order(b));
        if (scene.previous) drawTrails(ctx, scene, tile);
        for (const entity of entities) {
          const [left, top] = [entity.x * tile, entity.y * tile];
          if (entity.type === "adventurer") drawAdventurer(ctx, entity, left, top, tile, Boolean(scene.acting && scene.acting.has(entity.team)));
          else if (OBJECT_KINDS.has(entity.type)) drawObject(ctx, entity, left, top, tile);
          else drawLoot(ctx, entity, left, top, tile);
        }
        ctx.restore();
        drawHeader(ctx, scene.caption);
        drawCards(ctx, scene, viewer);
      }

      const controls = [{
        id: "view",
        label: "View as",
        choices: [["all", "Everyone"], ...players.map((name, seat) => [String(seat), `Team ${seat + 1}: ${name}`])],
      }];

      return {
        // The fog of war needs the match's observations, so a job id.
        controls: jobId ? controls : [],
        size(availableWidth) {
          const tile = Math.max(6, Math.min(40, Math.floor(Math.min(availableWidth, 960) / width)));
          const boardWidth = tile * width;
          const boardHeight = tile * height;
          const columns = Math.max(1, Math.min(teamCount, Math.floor(boardWidth / CARD_MIN_WIDTH)));
          const panelHeight = Math.ceil(teamCount / columns) * CARD_HEIGHT + 4;
          layout = { tile, boardWidth, boardHeight, columns, panelHeight };
          return { width: boardWidth, height: HEADER_HEIGHT + boardHeight + panelHeight };
        },
        async draw(ctx, index, options) {
          const choice = options.view;
          if (!jobId || choice === undefined || choice === "all") {
            draws += 1;
            drawScene(ctx, everyoneScene(index), null);
            ctx.canvas.dataset.view = "all";
            return;
          }
          const seat = Number(choice);
          const drawing = ++draws;
          if (!loadedViews.has(seat)) {
            // Until the team's observations arrive: the map, all of it unseen.
            const state = frames[index].state;
            const caption = `Loading what ${teamName(seat + 1)} was sent…`;
            drawScene(ctx, { ...state, entities: [], seen: new Uint8Array(width * height), caption }, seat + 1);
            ctx.canvas.dataset.view = "loading";
          }
          const view = await loadView(seat);
          loadedViews.add(seat);
          // A later draw (another frame or team) has the canvas now.
          if (drawing !== draws) return;
          const j = view.latest[index];
          // Every team is sent the first shop call, so only a damaged answer lacks one.
          if (j < 0) throw new Error(`the observations of seat ${seat} start after frame ${index + 1}`);
          drawScene(ctx, teamScene(view, seat, j), seat + 1);
          ctx.canvas.dataset.view = String(seat);
        },
        scores(index) {
          const gold = frames[index].state.teamsGold;
          return players.map((_, seat) => gold[seat + 1] ?? 0);
        },
        events,
      };
    },
  });
})();
