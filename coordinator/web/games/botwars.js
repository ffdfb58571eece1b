// Skookum Botwars replays (README: renderer contract). A frame's state is the engine's
// state document (engine/src/botwars/mod.rs): `rows`, `cols`, `turnsElapsed`, `grid`
// (one letter per cell, index y * cols + x: "." empty, "r" and "b" the botlets of seat
// 0 and 1, "*" energy, "x" and "X" botlets of r and b that died this turn), `p1` and
// `p2` {energy, spawn, spawnDisabled} and, once decided, `winner` ("r", "b" or ".").
// A frame's replies are both sides' moves, [{"from": cell, "to": cell}, ...].
"use strict";

(function () {
  const LETTERS = ["r", "b"];
  const DEAD = ["x", "X"];
  const SIDE_WORDS = ["red", "blue"];
  const COLORS = {
    ground: "#f3efe6",
    gridLine: "#ddd5c4",
    energy: "#f5c518",
    energyEdge: "#8a6d00",
    panel: "#23262b",
    panelText: "#f2f2f2",
    panelMuted: "#b5b9bf",
  };

  /** The moves of a reply that the rules apply to `grid` for `seat`; null for a reply that disqualifies. */
  function movesOf(reply, grid, cols, seat) {
    if (!reply || typeof reply.line !== "string") return null;
    let list;
    try {
      list = JSON.parse(reply.line);
    } catch (_) {
      return null;
    }
    if (!Array.isArray(list)) return null;
    if (!list.every((move) => move && typeof move.from === "number" && typeof move.to === "number")) return null;
    const cells = grid.length;
    const cell = (n) => Number.isInteger(n) && n >= 0 && n < cells;
    const moved = new Set();
    const applied = [];
    for (const { from, to } of list) {
      const near = cell(from) && cell(to) &&
        Math.abs((from % cols) - (to % cols)) + Math.abs(Math.floor(from / cols) - Math.floor(to / cols)) <= 1;
      // A botlet moves once: the first move from its cell wins.
      if (near && grid[from] === LETTERS[seat] && !moved.has(from)) {
        moved.add(from);
        applied.push({ from, to });
      }
    }
    return { asked: list.length, applied };
  }

  function count(grid, letter) {
    let total = 0;
    for (const cell of grid) if (cell === letter) total += 1;
    return total;
  }

  MatchFarm.registerGame("botwars", {
    create(replay, { seatColors }) {
      const frames = replay.frames;
      const { rows, cols } = frames[0].state;
      // The state frame `index`'s turn started from: the replay header's before the
      // first (null in a format 1 replay: that frame's moves and events are not shown).
      const stateBefore = (index) => (index > 0 ? frames[index - 1].state : replay.initial);
      const names = [0, 1].map((seat) => `${replay.setup.players[seat] || `seat ${seat}`} (${SIDE_WORDS[seat]})`);
      const sideOf = (state, seat) => (seat === 0 ? state.p1 : state.p2);
      let layout = null;

      function repliesOf(index) {
        const bySeat = new Map(frames[index].replies.map((entry) => [entry.seat, entry.reply]));
        return [0, 1].map((seat) => bySeat.get(seat));
      }

      function neighbors(cell) {
        const [x, y] = [cell % cols, Math.floor(cell / cols)];
        return [y > 0 ? cell - cols : -1, x + 1 < cols ? cell + 1 : -1, y + 1 < rows ? cell + cols : -1, x > 0 ? cell - 1 : -1]
          .filter((near) => near >= 0);
      }

      function events(index) {
        const before = stateBefore(index);
        if (!before) return [];
        const after = frames[index].state;
        const replies = repliesOf(index);
        const lines = [];
        const moves = [0, 1].map((seat) => movesOf(replies[seat], before.grid, cols, seat));
        if (after.turnsElapsed === before.turnsElapsed) {
          // No turn was played: a side was disqualified. The viewer already says which
          // replies were missing; a reply that came is named here.
          moves.forEach((list, seat) => {
            if (list !== null) return;
            const came = replies[seat] && typeof replies[seat].line === "string";
            lines.push(`${names[seat]} is disqualified${came ? ": its reply is not a list of moves" : ""}`);
          });
          return lines;
        }
        moves.forEach((list, seat) => {
          if (list && list.applied.length < list.asked) {
            lines.push(`${names[seat]}: ${list.asked - list.applied.length} of ${list.asked} moves ignored`);
          }
        });
        const deaths = DEAD.map((letter) => count(after.grid, letter));
        const died = [0, 1].filter((seat) => deaths[seat] > 0).map((seat) => `${deaths[seat]} ${SIDE_WORDS[seat]}`);
        if (died.length > 0) lines.push(`${died.join(" and ")} botlet${deaths[0] + deaths[1] === 1 ? "" : "s"} died`);
        // Energy that vanished from an empty cell was gathered: by the one side next to
        // it, or lost when both were (gathering looks at the grid as it ends the turn).
        const gathered = [0, 0];
        let lost = 0;
        let appeared = 0;
        for (let cell = 0; cell < after.grid.length; cell += 1) {
          if (after.grid[cell] === "*" && before.grid[cell] !== "*") appeared += 1;
          if (before.grid[cell] !== "*" || after.grid[cell] !== ".") continue;
          const near = neighbors(cell).map((n) => after.grid[n]);
          const touching = LETTERS.map((letter) => near.includes(letter));
          if (touching[0] && touching[1]) lost += 1;
          else if (touching[0]) gathered[0] += 1;
          else if (touching[1]) gathered[1] += 1;
        }
        [0, 1].forEach((seat) => {
          const bank = sideOf(after, seat).energy - sideOf(before, seat).energy;
          if (gathered[seat] > 0) lines.push(`${names[seat]} gathered ${gathered[seat]} energy`);
          // Spawning spends one energy before gathering adds to the bank.
          if (gathered[seat] - bank === 1) lines.push(`${names[seat]} spawned a botlet`);
          if (sideOf(after, seat).spawnDisabled && !sideOf(before, seat).spawnDisabled) {
            lines.push(`${names[1 - seat]} razed the spawn of ${names[seat]}`);
          }
        });
        if (lost > 0) lines.push(`${lost} energy lost: both sides touched it`);
        if (appeared > 0) lines.push(`energy appeared on ${appeared} cells`);
        [0, 1].forEach((seat) => {
          if (count(after.grid, LETTERS[seat]) === 0) lines.push(`${names[seat]} has no botlets left`);
        });
        return lines;
      }

      function center(cell) {
        const { size } = layout;
        return [(cell % cols) * size + size / 2, Math.floor(cell / cols) * size + size / 2];
      }

      function drawArrow(ctx, from, to, color) {
        const [x1, y1] = center(from);
        const [x2, y2] = center(to);
        const angle = Math.atan2(y2 - y1, x2 - x1);
        const head = Math.max(3, layout.size * 0.22);
        ctx.strokeStyle = color;
        ctx.fillStyle = color;
        ctx.lineWidth = Math.max(1, layout.size * 0.08);
        ctx.beginPath();
        ctx.moveTo(x1, y1);
        ctx.lineTo(x2 - Math.cos(angle) * head, y2 - Math.sin(angle) * head);
        ctx.stroke();
        ctx.beginPath();
        ctx.moveTo(x2, y2);
        ctx.lineTo(x2 - head * Math.cos(angle - 0.5), y2 - head * Math.sin(angle - 0.5));
        ctx.lineTo(x2 - head * Math.cos(angle + 0.5), y2 - head * Math.sin(angle + 0.5));
        ctx.closePath();
        ctx.fill();
      }

      function drawCell(ctx, letter, cell) {
        const { size } = layout;
        const [cx, cy] = center(cell);
        const seat = LETTERS.indexOf(letter);
        const deadSeat = DEAD.indexOf(letter);
        if (seat >= 0) {
          ctx.fillStyle = seatColors[seat];
          ctx.beginPath();
          ctx.arc(cx, cy, size * 0.38, 0, 2 * Math.PI);
          ctx.fill();
        } else if (deadSeat >= 0) {
          const r = size * 0.28;
          ctx.strokeStyle = seatColors[deadSeat];
          ctx.lineWidth = Math.max(1.5, size * 0.12);
          ctx.beginPath();
          ctx.moveTo(cx - r, cy - r);
          ctx.lineTo(cx + r, cy + r);
          ctx.moveTo(cx + r, cy - r);
          ctx.lineTo(cx - r, cy + r);
          ctx.stroke();
        } else if (letter === "*") {
          const r = size * 0.34;
          ctx.fillStyle = COLORS.energy;
          ctx.strokeStyle = COLORS.energyEdge;
          ctx.lineWidth = 1;
          ctx.beginPath();
          for (let point = 0; point < 10; point += 1) {
            const radius = point % 2 === 0 ? r : r * 0.45;
            const angle = (point * Math.PI) / 5 - Math.PI / 2;
            ctx.lineTo(cx + radius * Math.cos(angle), cy + radius * Math.sin(angle));
          }
          ctx.closePath();
          ctx.fill();
          ctx.stroke();
        }
      }

      function drawSpawn(ctx, side, seat) {
        const { size } = layout;
        const [x, y] = [(side.spawn % cols) * size, Math.floor(side.spawn / cols) * size];
        ctx.strokeStyle = seatColors[seat];
        ctx.lineWidth = Math.max(2, size * 0.1);
        ctx.strokeRect(x + 1.5, y + 1.5, size - 3, size - 3);
        if (side.spawnDisabled) {
          ctx.beginPath();
          ctx.moveTo(x + 2, y + 2);
          ctx.lineTo(x + size - 2, y + size - 2);
          ctx.stroke();
        }
      }

      function drawPanel(ctx, state) {
        const { width, size } = layout;
        const top = rows * size;
        ctx.fillStyle = COLORS.panel;
        ctx.fillRect(0, top, width, layout.panelHeight);
        ctx.textBaseline = "middle";
        ctx.font = "13px system-ui, sans-serif";
        [0, 1].forEach((seat) => {
          const side = sideOf(state, seat);
          const left = seat === 0 ? 8 : width / 2 + 4;
          const middle = top + layout.panelHeight / 2;
          ctx.fillStyle = seatColors[seat];
          ctx.beginPath();
          ctx.arc(left + 6, middle, 6, 0, 2 * Math.PI);
          ctx.fill();
          ctx.fillStyle = COLORS.panelText;
          ctx.textAlign = "left";
          const botlets = count(state.grid, LETTERS[seat]);
          const text = `${botlets} botlet${botlets === 1 ? "" : "s"} · ${side.energy} energy${side.spawnDisabled ? " · spawn razed" : ""}`;
          ctx.fillText(text, left + 18, middle, width / 2 - 30);
        });
      }

      return {
        controls: [],
        size(availableWidth) {
          const size = Math.max(8, Math.floor(Math.min(availableWidth, 640) / cols));
          const panelHeight = 30;
          layout = { size, width: size * cols, panelHeight };
          return { width: size * cols, height: size * rows + panelHeight };
        },
        draw(ctx, index) {
          const state = frames[index].state;
          const { size, width } = layout;
          ctx.fillStyle = COLORS.ground;
          ctx.fillRect(0, 0, width, rows * size);
          ctx.strokeStyle = COLORS.gridLine;
          ctx.lineWidth = 1;
          ctx.beginPath();
          for (let x = 0; x <= cols; x += 1) {
            ctx.moveTo(x * size + 0.5, 0);
            ctx.lineTo(x * size + 0.5, rows * size);
          }
          for (let y = 0; y <= rows; y += 1) {
            ctx.moveTo(0, y * size + 0.5);
            ctx.lineTo(width, y * size + 0.5);
          }
          ctx.stroke();
          drawSpawn(ctx, state.p1, 0);
          drawSpawn(ctx, state.p2, 1);
          for (let cell = 0; cell < state.grid.length; cell += 1) drawCell(ctx, state.grid[cell], cell);
          // The moves that made this frame, drawn over the botlets they moved (known
          // only with the state they were made on).
          const before = stateBefore(index);
          (before ? repliesOf(index) : []).forEach((reply, seat) => {
            const moves = movesOf(reply, before.grid, cols, seat);
            if (!moves) return;
            ctx.save();
            ctx.globalAlpha = 0.7;
            for (const { from, to } of moves.applied) {
              if (from !== to) drawArrow(ctx, from, to, "#1d1f21");
            }
            ctx.restore();
          });
          drawPanel(ctx, state);
        },
        scores(index) {
          const { grid } = frames[index].state;
          return LETTERS.map((letter) => count(grid, letter));
        },
        events,
      };
    },
  });
})();
