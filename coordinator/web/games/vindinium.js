// Vindinium replays (README: renderer contract). A frame's state is the engine's `game`
// document (engine/src/vindinium/state.rs): `turn`, `heroes` (id, name, pos {x: row,
// y: column}, life, gold, mineCount, spawnPos, crashed) and `board` {size, tiles}, two
// characters per tile: "  " air, "##" wood, "[]" tavern, "$-" or "$1".."$4" a mine,
// "@1".."@4" a hero. Each frame is one hero's move, hero (turn before it) % 4 + 1.
"use strict";

(function () {
  const MAX_LIFE = 100;
  const ATTACK_DAMAGE = 20;
  const BEER_GOLD = 2;
  const COLORS = {
    air: "#e9dfc4",
    airLine: "#dccfae",
    wood: "#3f6b3a",
    woodLight: "#558a4d",
    tavern: "#7a4a23",
    beer: "#f0b429",
    foam: "#fffaf0",
    mine: "#6b6b6b",
    gold: "#ffd54a",
    panel: "#23262b",
    panelText: "#f2f2f2",
    panelMuted: "#b5b9bf",
  };

  function tileAt(board, x, y) {
    return board.tiles.substr(2 * (x * board.size + y), 2);
  }

  function adjacent(a, b) {
    return Math.abs(a.x - b.x) + Math.abs(a.y - b.y) === 1;
  }

  function samePos(a, b) {
    return a.x === b.x && a.y === b.y;
  }

  MatchFarm.registerGame("vindinium", {
    create(replay, { seatColors }) {
      const frames = replay.frames;
      // The state frame `index`'s move started from: the replay header's before the
      // first (null in a format 1 replay: that frame's mover and events are not shown).
      const stateBefore = (index) => (index > 0 ? frames[index - 1].state : replay.initial);
      // The hero who moved in frame `index`: the one whose turn it was before it.
      const moverOf = (index) => {
        const before = stateBefore(index);
        return before ? before.turn % 4 : -1;
      };
      const who = (hero) => `${hero.name} #${hero.id}`;
      let layout = null;

      /** Whether hero `index` died (or was telefragged) and respawned in this frame. */
      function respawned(before, after, index, mover) {
        const [was, is] = [before.heroes[index], after.heroes[index]];
        if (index !== mover) {
          // Others only lose life or go back to their spawn.
          return !samePos(was.pos, is.pos) || is.life > was.life;
        }
        // The mover ends a respawning move with full life less a day's thirst, on its
        // spawn; a goblin kills only a hero at 20 life or less, a telefrag moves it far.
        const fresh = is.life === MAX_LIFE - 1 && samePos(is.pos, is.spawnPos);
        const far = Math.abs(was.pos.x - is.pos.x) + Math.abs(was.pos.y - is.pos.y) > 1;
        return fresh && (was.life <= ATTACK_DAMAGE || far);
      }

      function events(index) {
        const before = stateBefore(index);
        if (!before) return [];
        const after = frames[index].state;
        const mover = moverOf(index);
        const actor = after.heroes[mover];
        const lines = [];
        const dead = after.heroes.map((_, hero) => respawned(before, after, hero, mover));
        after.heroes.forEach((hero, heroIndex) => {
          if (!dead[heroIndex]) return;
          const was = before.heroes[heroIndex];
          if (heroIndex === mover) {
            lines.push(was.life <= ATTACK_DAMAGE ? `${who(hero)} was killed by a mine's goblin` : `${who(hero)} was telefragged`);
          } else if (adjacent(actor.pos, was.pos) && !dead[mover]) {
            lines.push(`${who(actor)} killed ${who(hero)}`);
          } else {
            const fragger = after.heroes.find((other, otherIndex) => otherIndex !== heroIndex && dead[otherIndex] && samePos(other.pos, was.pos));
            lines.push(fragger ? `${who(fragger)} respawned onto ${who(hero)}: telefrag` : `${who(hero)} died`);
          }
        });
        after.heroes.forEach((hero, heroIndex) => {
          const was = before.heroes[heroIndex];
          if (heroIndex !== mover && !dead[heroIndex] && hero.life < was.life) {
            lines.push(`${who(actor)} hit ${who(hero)} (life ${hero.life})`);
          }
        });
        const wasActor = before.heroes[mover];
        // A beer costs 2 gold before the move's mine income comes in.
        if (!dead[mover] && samePos(actor.pos, wasActor.pos) && actor.gold === wasActor.gold - BEER_GOLD + actor.mineCount) {
          lines.push(`${who(actor)} drank a beer for ${BEER_GOLD} gold (life ${actor.life})`);
        }
        lines.push(...mineChanges(before, after));
        after.heroes.forEach((hero, heroIndex) => {
          if (hero.crashed && !before.heroes[heroIndex].crashed) {
            lines.push(`${who(hero)} is out: from now on the server plays Stay for it`);
          }
        });
        return lines;
      }

      /** Mines that changed hands, grouped by who lost and who took them. */
      function mineChanges(before, after) {
        const moves = new Map();
        const { size } = after.board;
        for (let x = 0; x < size; x += 1) {
          for (let y = 0; y < size; y += 1) {
            const [was, is] = [tileAt(before.board, x, y), tileAt(after.board, x, y)];
            if (was === is || was[0] !== "$" || is[0] !== "$") continue;
            const key = `${was[1]}${is[1]}`;
            moves.set(key, (moves.get(key) || 0) + 1);
          }
        }
        const heroOf = (code) => after.heroes.find((hero) => String(hero.id) === code);
        return [...moves].map(([key, count]) => {
          const [from, to] = [heroOf(key[0]), heroOf(key[1])];
          const mines = count === 1 ? "a mine" : `${count} mines`;
          if (!to) return `${who(from)} lost ${mines} to the goblins`;
          return from ? `${who(to)} took ${mines} from ${who(from)}` : `${who(to)} took ${count === 1 ? "a neutral mine" : `${count} neutral mines`}`;
        });
      }

      function drawTile(ctx, code, left, top, tile) {
        ctx.fillStyle = COLORS.air;
        ctx.fillRect(left, top, tile, tile);
        const inset = Math.max(1, tile * 0.12);
        if (code === "##") {
          ctx.fillStyle = COLORS.wood;
          ctx.fillRect(left, top, tile, tile);
          ctx.fillStyle = COLORS.woodLight;
          ctx.beginPath();
          ctx.arc(left + tile / 2, top + tile / 2, tile * 0.32, 0, 2 * Math.PI);
          ctx.fill();
        } else if (code === "[]") {
          ctx.fillStyle = COLORS.tavern;
          ctx.fillRect(left + inset, top + inset, tile - 2 * inset, tile - 2 * inset);
          ctx.fillStyle = COLORS.beer;
          ctx.fillRect(left + tile * 0.3, top + tile * 0.35, tile * 0.4, tile * 0.45);
          ctx.fillStyle = COLORS.foam;
          ctx.fillRect(left + tile * 0.27, top + tile * 0.25, tile * 0.46, tile * 0.14);
        } else if (code[0] === "$") {
          const owner = Number(code[1]);
          const center = [left + tile / 2, top + tile / 2];
          const radius = tile / 2 - inset;
          ctx.fillStyle = owner >= 1 ? seatColors[owner - 1] : COLORS.mine;
          ctx.beginPath();
          ctx.moveTo(center[0], center[1] - radius);
          ctx.lineTo(center[0] + radius, center[1]);
          ctx.lineTo(center[0], center[1] + radius);
          ctx.lineTo(center[0] - radius, center[1]);
          ctx.closePath();
          ctx.fill();
          ctx.strokeStyle = "#2b2b2b";
          ctx.lineWidth = 1;
          ctx.stroke();
          ctx.fillStyle = COLORS.gold;
          ctx.beginPath();
          ctx.arc(center[0], center[1], radius * 0.32, 0, 2 * Math.PI);
          ctx.fill();
        } else {
          ctx.strokeStyle = COLORS.airLine;
          ctx.lineWidth = 1;
          ctx.strokeRect(left + 0.5, top + 0.5, tile - 1, tile - 1);
        }
      }

      function drawHero(ctx, hero, tile, moved) {
        const left = hero.pos.y * tile;
        const top = hero.pos.x * tile;
        const color = seatColors[hero.id - 1];
        ctx.save();
        if (hero.crashed) ctx.globalAlpha = 0.45;
        ctx.fillStyle = color;
        ctx.strokeStyle = moved ? "#111" : "#fff";
        ctx.lineWidth = moved ? Math.max(2, tile * 0.1) : Math.max(1, tile * 0.06);
        ctx.beginPath();
        ctx.arc(left + tile / 2, top + tile * 0.44, tile * 0.36, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
        if (tile >= 14) {
          ctx.fillStyle = "#fff";
          ctx.font = `bold ${Math.round(tile * 0.42)}px system-ui, sans-serif`;
          ctx.textAlign = "center";
          ctx.textBaseline = "middle";
          ctx.fillText(String(hero.id), left + tile / 2, top + tile * 0.46);
        }
        // Life, as a bar along the tile's foot.
        const barTop = top + tile * 0.86;
        const barHeight = Math.max(2, tile * 0.12);
        ctx.fillStyle = "#3a0d0d";
        ctx.fillRect(left + 1, barTop, tile - 2, barHeight);
        ctx.fillStyle = hero.life > 50 ? "#3fbf5a" : hero.life > 20 ? "#f0b429" : "#e5484d";
        ctx.fillRect(left + 1, barTop, ((tile - 2) * hero.life) / MAX_LIFE, barHeight);
        if (hero.crashed) {
          ctx.globalAlpha = 1;
          ctx.strokeStyle = "#111";
          ctx.lineWidth = 2;
          ctx.beginPath();
          ctx.moveTo(left + tile * 0.2, top + tile * 0.2);
          ctx.lineTo(left + tile * 0.8, top + tile * 0.7);
          ctx.moveTo(left + tile * 0.8, top + tile * 0.2);
          ctx.lineTo(left + tile * 0.2, top + tile * 0.7);
          ctx.stroke();
        }
        ctx.restore();
      }

      function drawSpawn(ctx, hero, tile) {
        ctx.strokeStyle = seatColors[hero.id - 1];
        ctx.lineWidth = Math.max(1, tile * 0.08);
        ctx.setLineDash([Math.max(2, tile * 0.15), Math.max(2, tile * 0.1)]);
        ctx.strokeRect(hero.spawnPos.y * tile + 2, hero.spawnPos.x * tile + 2, tile - 4, tile - 4);
        ctx.setLineDash([]);
      }

      /** Fits `text` into `width` pixels, cutting it with an ellipsis. */
      function fit(ctx, text, width) {
        if (ctx.measureText(text).width <= width) return text;
        let cut = text;
        while (cut.length > 0 && ctx.measureText(`${cut}…`).width > width) cut = cut.slice(0, -1);
        return `${cut}…`;
      }

      function drawPanel(ctx, state, mover) {
        const { boardWidth, columns, cardHeight } = layout;
        const cardWidth = boardWidth / columns;
        ctx.fillStyle = COLORS.panel;
        ctx.fillRect(0, boardWidth, boardWidth, layout.panelHeight);
        state.heroes.forEach((hero, index) => {
          const left = (index % columns) * cardWidth + 8;
          const top = boardWidth + Math.floor(index / columns) * cardHeight + 6;
          ctx.fillStyle = seatColors[hero.id - 1];
          ctx.beginPath();
          ctx.arc(left + 7, top + 9, 7, 0, 2 * Math.PI);
          ctx.fill();
          if (index === mover) {
            ctx.strokeStyle = COLORS.panelText;
            ctx.lineWidth = 2;
            ctx.stroke();
          }
          ctx.textAlign = "left";
          ctx.textBaseline = "middle";
          ctx.fillStyle = COLORS.panelText;
          ctx.font = "bold 13px system-ui, sans-serif";
          ctx.fillText(fit(ctx, `${hero.id} ${hero.name}${hero.crashed ? " (out)" : ""}`, cardWidth - 30), left + 20, top + 9);
          ctx.fillStyle = COLORS.panelMuted;
          ctx.font = "11px system-ui, sans-serif";
          const line = `${hero.gold} gold · ${hero.life} life · ${hero.mineCount} mine${hero.mineCount === 1 ? "" : "s"}`;
          ctx.fillText(fit(ctx, line, cardWidth - 12), left, top + 27);
        });
      }

      return {
        controls: [],
        size(availableWidth) {
          const size = frames[0].state.board.size;
          const tile = Math.max(6, Math.min(48, Math.floor(Math.min(availableWidth, 760) / size)));
          const boardWidth = tile * size;
          const columns = boardWidth >= 640 ? 4 : 2;
          const cardHeight = 40;
          const panelHeight = Math.ceil(4 / columns) * cardHeight + 4;
          layout = { tile, boardWidth, columns, cardHeight, panelHeight };
          return { width: boardWidth, height: boardWidth + panelHeight };
        },
        draw(ctx, index) {
          const state = frames[index].state;
          const { board } = state;
          const { tile } = layout;
          for (let x = 0; x < board.size; x += 1) {
            for (let y = 0; y < board.size; y += 1) {
              const code = tileAt(board, x, y);
              // Heroes stand on air: the tile under "@n" is drawn as air.
              drawTile(ctx, code[0] === "@" ? "  " : code, y * tile, x * tile, tile);
            }
          }
          const mover = moverOf(index);
          state.heroes.forEach((hero) => drawSpawn(ctx, hero, tile));
          state.heroes.forEach((hero, heroIndex) => drawHero(ctx, hero, tile, heroIndex === mover));
          drawPanel(ctx, state, mover);
        },
        scores(index) {
          return frames[index].state.heroes.map((hero) => hero.gold);
        },
        events,
      };
    },
  });
})();
