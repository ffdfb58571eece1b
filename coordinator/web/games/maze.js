// Maze replays (README: renderer contract). Every seat guides its own hero through its
// own copy of the same maze, so a frame's state (engine/src/maze/mod.rs, MatchDoc) is
// `{step, copies}` with one copy per seat (engine/src/maze/dungeon.rs, DungeonDoc):
// `turn`, `hero` {x, y, hp, score, charges: [hammer, scythe, bow]}, `end` ("exit",
// "died", "turnLimit", "error") once that copy's game is over, `last` (what its last
// turn did, in words), `items` [[x, y, type]] and `monsters` [[x, y, type, hp]], with the
// protocol's type ids (0 exit, 2 treasure, 3 potion, 4/5/6 hammer/scythe/bow chest,
// 7 box, 8 skeleton, 9 gargoyle, 10 orc, 11 vampire). Obstacles never change and are in
// no state: they come from the map in the setup ("X"; maps/maze, engine/src/maze/map.rs).
// The state before the first step is the replay header's.
//
// The copies are drawn side by side, wrapping into a grid on narrow screens. A cell the
// hero has not yet had in view (Chebyshev 3 around it, walls do not block) is darkened:
// its bot has not been told what is there.
"use strict";

(function () {
  const COLUMNS = 16;
  const ROWS = 12;
  const HERO_VIEW = 3;
  const HERO_MAX_HP = 20;
  const GAP = 12;
  const HEADER_HEIGHT = 40;
  const MIN_TILE = 14;
  const MAX_TILE = 30;
  const COLORS = {
    floor: "#e3dccb",
    floorLine: "#d2c9b3",
    rock: "#4a4540",
    rockLight: "#5b554f",
    unseen: "rgba(16, 18, 22, 0.55)",
    view: "rgba(255, 255, 255, 0.9)",
    header: "#23262b",
    headerText: "#f2f2f2",
    headerMuted: "#b5b9bf",
    hit: "#e5484d",
    hpBack: "#3a0d0d",
  };
  const ITEMS = {
    0: { name: "the exit", color: "#2fa35b", mark: "E" },
    2: { name: "a treasure", color: "#f2c230", mark: "$" },
    3: { name: "a potion", color: "#e5484d", mark: "+" },
    4: { name: "a hammer chest", color: "#8b5a2b", mark: "H" },
    5: { name: "a scythe chest", color: "#8b5a2b", mark: "S" },
    6: { name: "a bow chest", color: "#8b5a2b", mark: "B" },
  };
  // Hit points are each kind's starting ones (maze.md, "Constants"), for the hp bars.
  const MONSTERS = {
    7: { name: "box", plural: "boxes", color: "#a0764a", mark: "", hp: 1 },
    8: { name: "skeleton", plural: "skeletons", color: "#d8d8d0", mark: "S", hp: 6 },
    9: { name: "gargoyle", plural: "gargoyles", color: "#7d8590", mark: "G", hp: 14 },
    10: { name: "orc", plural: "orcs", color: "#4f8a3c", mark: "O", hp: 8 },
    11: { name: "vampire", plural: "vampires", color: "#7a2a5a", mark: "V", hp: 10 },
  };
  const ENDINGS = {
    exit: "reached the exit",
    died: "died",
    turnLimit: "played its last turn",
    error: "is out: invalid command, timeout or crash",
  };

  /** The obstacles of the map file: rock[y * COLUMNS + x] is 1 on an "X". */
  function readRock(text) {
    const rows = String(text || "").split("\n").map((row) => row.replace(/\r$/, "")).filter((row) => row.length > 0);
    const rock = new Uint8Array(COLUMNS * ROWS);
    rows.slice(0, ROWS).forEach((row, y) => {
      for (let x = 0; x < Math.min(COLUMNS, row.length); x += 1) {
        if (row[x] === "X") rock[y * COLUMNS + x] = 1;
      }
    });
    return rock;
  }

  /** How many monsters of each type a copy holds. */
  function countMonsters(monsters) {
    const counts = new Map();
    for (const [, , type] of monsters) counts.set(type, (counts.get(type) || 0) + 1);
    return counts;
  }

  /** "3 3, 4 3" out of a turn's words ("bow hits 3 3, 4 3; hurt 2"): the cells an attack hit. */
  function hitCells(last) {
    const hits = /hits ([0-9 ,]+)/.exec(last || "");
    if (!hits) return [];
    return hits[1].split(",").map((cell) => cell.trim().split(" ").map(Number)).filter((cell) => cell.length === 2);
  }

  MatchFarm.registerGame("maze", {
    create(replay, { seatColors }) {
      const { frames, setup } = replay;
      const players = setup.players || [];
      const copies = frames[0].state.copies.length;
      const rock = readRock(setup.map);
      let layout = null;

      // firstSeen[seat][cell]: the first frame whose hero had the cell in view (-1: from
      // the start, known from the header's state); Infinity while never.
      const firstSeen = Array.from({ length: copies }, () => new Float64Array(COLUMNS * ROWS).fill(Infinity));
      function reveal(seat, hero, index) {
        for (let y = Math.max(0, hero.y - HERO_VIEW); y <= Math.min(ROWS - 1, hero.y + HERO_VIEW); y += 1) {
          for (let x = Math.max(0, hero.x - HERO_VIEW); x <= Math.min(COLUMNS - 1, hero.x + HERO_VIEW); x += 1) {
            const cell = y * COLUMNS + x;
            if (firstSeen[seat][cell] > index) firstSeen[seat][cell] = index;
          }
        }
      }
      /** Takes frames from `start` on into `firstSeen` (live, frames arrive as the match goes). */
      function revealFrom(start) {
        for (let seat = 0; seat < copies; seat += 1) {
          for (let index = start; index < frames.length; index += 1) reveal(seat, frames[index].state.copies[seat].hero, index);
        }
      }
      for (let seat = 0; seat < copies; seat += 1) {
        if (replay.initial) reveal(seat, replay.initial.copies[seat].hero, -1);
      }
      revealFrom(0);

      const name = (seat) => players[seat] ?? `seat ${seat}`;
      // Seat's copy as frame `index`'s step found it: the replay header's before the first
      // (null in a format 1 replay: what that frame picked up and killed is not shown).
      const copyBefore = (index, seat) => {
        const state = index > 0 ? frames[index - 1].state : replay.initial;
        return state ? state.copies[seat] : null;
      };
      const asked = (index) => new Set(frames[index].replies.map((entry) => entry.seat));

      function events(index) {
        const lines = [];
        const acting = asked(index);
        frames[index].state.copies.forEach((copy, seat) => {
          if (!acting.has(seat)) return;
          const was = copyBefore(index, seat);
          const who = name(seat);
          lines.push(`${who}: ${copy.last}`);
          if (was) {
            const still = new Set(copy.items.map(([x, y]) => `${x},${y}`));
            for (const [x, y, type] of was.items) {
              if (!still.has(`${x},${y}`) && ITEMS[type] && type !== 0) lines.push(`${who} picked up ${ITEMS[type].name}`);
            }
            const [had, has] = [countMonsters(was.monsters), countMonsters(copy.monsters)];
            for (const [type, count] of had) {
              const killed = count - (has.get(type) || 0);
              const monster = MONSTERS[type];
              if (killed > 0 && monster) lines.push(`${who} killed ${killed === 1 ? `a ${monster.name}` : `${killed} ${monster.plural}`}`);
            }
          }
          if (copy.end && !(was && was.end)) {
            lines.push(`${who} ${ENDINGS[copy.end] || copy.end}: score ${MatchFarm.fmt.number(copy.hero.score)}`);
          }
        });
        return lines;
      }

      // ---------------------------------------------------------------- drawing

      function drawCell(ctx, left, top, tile, isRock) {
        if (isRock) {
          ctx.fillStyle = COLORS.rock;
          ctx.fillRect(left, top, tile, tile);
          ctx.fillStyle = COLORS.rockLight;
          ctx.beginPath();
          ctx.arc(left + tile * 0.35, top + tile * 0.4, tile * 0.18, 0, 2 * Math.PI);
          ctx.arc(left + tile * 0.65, top + tile * 0.62, tile * 0.14, 0, 2 * Math.PI);
          ctx.fill();
          return;
        }
        ctx.fillStyle = COLORS.floor;
        ctx.fillRect(left, top, tile, tile);
        ctx.strokeStyle = COLORS.floorLine;
        ctx.lineWidth = 1;
        ctx.strokeRect(left + 0.5, top + 0.5, tile - 1, tile - 1);
      }

      function mark(ctx, text, cx, cy, tile, color) {
        if (!text || tile < 12) return;
        ctx.fillStyle = color;
        ctx.font = `bold ${Math.round(tile * 0.45)}px system-ui, sans-serif`;
        ctx.textAlign = "center";
        ctx.textBaseline = "middle";
        ctx.fillText(text, cx, cy + 1);
      }

      function hpBar(ctx, left, top, tile, hp, most) {
        const barHeight = Math.max(2, tile * 0.1);
        const barTop = top + tile - barHeight - 1;
        ctx.fillStyle = COLORS.hpBack;
        ctx.fillRect(left + 2, barTop, tile - 4, barHeight);
        const share = Math.max(0, Math.min(1, hp / most));
        ctx.fillStyle = share > 0.5 ? "#3fbf5a" : share > 0.25 ? "#f0b429" : "#e5484d";
        ctx.fillRect(left + 2, barTop, (tile - 4) * share, barHeight);
      }

      function drawItem(ctx, type, left, top, tile) {
        const item = ITEMS[type];
        if (!item) return;
        const [cx, cy] = [left + tile / 2, top + tile / 2];
        ctx.fillStyle = item.color;
        if (type === 0) {
          ctx.fillRect(left + tile * 0.15, top + tile * 0.1, tile * 0.7, tile * 0.8);
          mark(ctx, item.mark, cx, cy, tile, "#fff");
        } else if (type === 2 || type === 3) {
          ctx.beginPath();
          ctx.arc(cx, cy, tile * 0.26, 0, 2 * Math.PI);
          ctx.fill();
          mark(ctx, item.mark, cx, cy, tile, type === 2 ? "#5a4300" : "#fff");
        } else {
          ctx.fillRect(left + tile * 0.18, top + tile * 0.25, tile * 0.64, tile * 0.5);
          mark(ctx, item.mark, cx, cy, tile, "#f2c230");
        }
      }

      function drawMonster(ctx, [x, y, type, hp], tile) {
        const monster = MONSTERS[type];
        if (!monster) return;
        const [left, top] = [x * tile, y * tile];
        const [cx, cy] = [left + tile / 2, top + tile * 0.45];
        ctx.fillStyle = monster.color;
        ctx.strokeStyle = "#1d1f21";
        ctx.lineWidth = 1;
        if (type === 7) {
          ctx.fillRect(left + tile * 0.18, top + tile * 0.15, tile * 0.64, tile * 0.64);
          ctx.strokeRect(left + tile * 0.18, top + tile * 0.15, tile * 0.64, tile * 0.64);
          ctx.beginPath();
          ctx.moveTo(left + tile * 0.18, top + tile * 0.15);
          ctx.lineTo(left + tile * 0.82, top + tile * 0.79);
          ctx.stroke();
          return;
        }
        ctx.beginPath();
        ctx.arc(cx, cy, tile * 0.32, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
        mark(ctx, monster.mark, cx, cy, tile, type === 8 ? "#333" : "#fff");
        if (hp < monster.hp) hpBar(ctx, left, top, tile, hp, monster.hp);
      }

      function drawHero(ctx, hero, tile, color, ended) {
        const [left, top] = [hero.x * tile, hero.y * tile];
        // The hero's view: what its bot is told about.
        const x0 = Math.max(0, hero.x - HERO_VIEW);
        const y0 = Math.max(0, hero.y - HERO_VIEW);
        const x1 = Math.min(COLUMNS - 1, hero.x + HERO_VIEW);
        const y1 = Math.min(ROWS - 1, hero.y + HERO_VIEW);
        ctx.strokeStyle = COLORS.view;
        ctx.lineWidth = 1.5;
        ctx.setLineDash([4, 3]);
        ctx.strokeRect(x0 * tile + 1, y0 * tile + 1, (x1 - x0 + 1) * tile - 2, (y1 - y0 + 1) * tile - 2);
        ctx.setLineDash([]);
        ctx.save();
        if (ended) ctx.globalAlpha = 0.55;
        ctx.fillStyle = color;
        ctx.strokeStyle = "#fff";
        ctx.lineWidth = Math.max(2, tile * 0.1);
        ctx.beginPath();
        ctx.arc(left + tile / 2, top + tile * 0.45, tile * 0.36, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
        ctx.restore();
        hpBar(ctx, left, top, tile, hero.hp, HERO_MAX_HP);
      }

      /** Fits `text` into `room` pixels, cutting it with an ellipsis. */
      function fit(ctx, text, room) {
        if (ctx.measureText(text).width <= room) return text;
        let cut = text;
        while (cut.length > 0 && ctx.measureText(`${cut}…`).width > room) cut = cut.slice(0, -1);
        return `${cut}…`;
      }

      function drawHeader(ctx, copy, seat, width, acting) {
        ctx.fillStyle = COLORS.header;
        ctx.fillRect(0, 0, width, HEADER_HEIGHT);
        ctx.fillStyle = seatColors[seat];
        ctx.beginPath();
        ctx.arc(13, 12, 7, 0, 2 * Math.PI);
        ctx.fill();
        if (acting) {
          ctx.strokeStyle = COLORS.headerText;
          ctx.lineWidth = 2;
          ctx.stroke();
        }
        ctx.textAlign = "left";
        ctx.textBaseline = "middle";
        ctx.font = "bold 13px system-ui, sans-serif";
        const score = MatchFarm.fmt.number(copy.hero.score);
        const scoreWidth = ctx.measureText(score).width;
        ctx.fillStyle = COLORS.headerText;
        ctx.fillText(fit(ctx, name(seat), width - scoreWidth - 40), 26, 12);
        ctx.textAlign = "right";
        ctx.fillText(score, width - 6, 12);
        ctx.textAlign = "left";
        ctx.font = "11px system-ui, sans-serif";
        ctx.fillStyle = COLORS.headerMuted;
        const [hammer, scythe, bow] = copy.hero.charges;
        const state = copy.end ? ` · ${ENDINGS[copy.end] || copy.end}` : "";
        const line = `turn ${copy.turn} · ${copy.hero.hp} hp · hammer ${hammer} scythe ${scythe} bow ${bow}${state}`;
        ctx.fillText(fit(ctx, line, width - 12), 6, 30);
      }

      function drawCopy(ctx, index, seat, acting) {
        const { tile } = layout;
        const copy = frames[index].state.copies[seat];
        const width = tile * COLUMNS;
        drawHeader(ctx, copy, seat, width, acting);
        ctx.save();
        ctx.translate(0, HEADER_HEIGHT);
        for (let y = 0; y < ROWS; y += 1) {
          for (let x = 0; x < COLUMNS; x += 1) drawCell(ctx, x * tile, y * tile, tile, rock[y * COLUMNS + x] === 1);
        }
        for (const [x, y, type] of copy.items) drawItem(ctx, type, x * tile, y * tile, tile);
        for (const monster of copy.monsters) drawMonster(ctx, monster, tile);
        ctx.fillStyle = COLORS.unseen;
        for (let cell = 0; cell < COLUMNS * ROWS; cell += 1) {
          if (firstSeen[seat][cell] > index) ctx.fillRect((cell % COLUMNS) * tile, Math.floor(cell / COLUMNS) * tile, tile, tile);
        }
        if (acting) {
          ctx.strokeStyle = COLORS.hit;
          ctx.lineWidth = Math.max(2, tile * 0.1);
          for (const [x, y] of hitCells(copy.last)) {
            ctx.beginPath();
            ctx.moveTo(x * tile + tile * 0.2, y * tile + tile * 0.2);
            ctx.lineTo(x * tile + tile * 0.8, y * tile + tile * 0.8);
            ctx.moveTo(x * tile + tile * 0.8, y * tile + tile * 0.2);
            ctx.lineTo(x * tile + tile * 0.2, y * tile + tile * 0.8);
            ctx.stroke();
          }
        }
        drawHero(ctx, copy.hero, tile, seatColors[seat], Boolean(copy.end));
        ctx.restore();
      }

      return {
        controls: [],
        size(availableWidth) {
          // As many copies side by side as fit with readable cells; the rest wrap.
          let columns = copies;
          const tileFor = (count) => Math.floor((availableWidth - (count - 1) * GAP) / (count * COLUMNS));
          while (columns > 1 && tileFor(columns) < MIN_TILE) columns -= 1;
          // Rows as even as they can be: 2 + 2 rather than 3 + 1.
          columns = Math.ceil(copies / Math.ceil(copies / columns));
          const tile = Math.max(6, Math.min(MAX_TILE, tileFor(columns)));
          const panel = { width: tile * COLUMNS, height: HEADER_HEIGHT + tile * ROWS };
          const rows = Math.ceil(copies / columns);
          layout = { tile, columns, panel };
          return { width: columns * panel.width + (columns - 1) * GAP, height: rows * panel.height + (rows - 1) * GAP };
        },
        draw(ctx, index) {
          const { columns, panel } = layout;
          // A test hook (README): how many copies the board shows.
          ctx.canvas.dataset.panels = String(copies);
          const acting = asked(index);
          for (let seat = 0; seat < copies; seat += 1) {
            ctx.save();
            ctx.translate((seat % columns) * (panel.width + GAP), Math.floor(seat / columns) * (panel.height + GAP));
            drawCopy(ctx, index, seat, acting.has(seat));
            ctx.restore();
          }
        },
        scores(index) {
          return frames[index].state.copies.map((copy) => copy.hero.score);
        },
        grow: revealFrom,
        events,
      };
    },
  });
})();
