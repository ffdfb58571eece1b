// The replay viewer of the match page (README: "Replay viewer"). It reads the replay
// (JSON Lines) as it streams in, loads its game's renderer (games/{game}.js) and drives
// it: play, pause, step, scrub, speed and keyboard; the shown frame's replies and
// events; scores over time. A match still being played is shown live the same way,
// its frames arriving as Server-Sent Events (README: "Live matches").
//
//   MatchFarm.registerGame(name, game)      called by each games/{game}.js
//   MatchFarm.seatColors(count)             the palette: seat i's colour, board and chart alike
//   MatchFarm.viewReplay(container, jobId)  loads and shows a match's replay in container;
//                                           resolves once the first frame is drawn
//   MatchFarm.viewLive(container, jobId, onEnd)
//                                           shows a running match live in container;
//                                           onEnd(reason) once its stream is over
//   MatchFarm.ReplayParser                  reads replay lines into {setup, initial, frames,
//                                           footer} (for the node tests, coordinator/tests/js)
"use strict";

(function () {
  const { el } = MatchFarm;

  const PALETTE = ["#e5484d", "#3e7be0", "#2fa35b", "#e6a117", "#8e4ec6", "#0fa3a3", "#d6409f", "#8d6e63"];
  const SPEEDS = [1, 2, 5, 10, 25, 50];
  // Parse for at most this long before letting the page paint and take input.
  const PARSE_SLICE_MS = 25;
  const REPLY_PROBLEMS = {
    timeout: { label: "Timeout", event: "timed out" },
    crashed: { label: "Crashed", event: "crashed (its process or transport is gone)" },
    unreadable: { label: "Unreadable", event: "sent an unreadable reply" },
    output_limit: { label: "Output limit", event: "was removed: its replies passed the replay size limit" },
  };

  const games = new Map();

  MatchFarm.registerGame = function (name, game) {
    games.set(name, game);
  };

  MatchFarm.seatColors = function (count) {
    return Array.from({ length: count }, (_, seat) =>
      seat < PALETTE.length ? PALETTE[seat] : `hsl(${Math.round((seat * 137.5) % 360)}, 60%, 48%)`);
  };

  /** A short fingerprint of a text (FNV-1a): what the tests compare frames by. */
  function fingerprint(text) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i += 1) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash.toString(16).padStart(8, "0");
  }

  /** Resolves after the browser has had a chance to paint and handle input. */
  function nextTask() {
    return new Promise((resolve) => setTimeout(resolve, 0));
  }

  /**
   * Builds `{setup, initial, frames, footer}` from the replay's lines as they arrive.
   * `initial` is the header's `state`, the state before step 1; null in a format 1
   * replay, written before headers carried it.
   */
  class ReplayParser {
    constructor() {
      this.setup = null;
      this.initial = null;
      this.frames = [];
      this.footer = null;
      // The last frame's line as it came: the page shows its fingerprint.
      this.lastFrameText = "";
      this.pending = "";
      this.lineNumber = 0;
      this.cutOff = false;
    }

    /** Adds text; parses every complete line, yielding to the page now and then. */
    async push(text) {
      this.pending += text;
      let start = 0;
      let sliceStart = performance.now();
      for (let end = this.pending.indexOf("\n"); end >= 0; end = this.pending.indexOf("\n", start)) {
        this.line(this.pending.slice(start, end));
        start = end + 1;
        if (performance.now() - sliceStart > PARSE_SLICE_MS) {
          await nextTask();
          sliceStart = performance.now();
        }
      }
      this.pending = this.pending.slice(start);
    }

    line(text) {
      this.lineNumber += 1;
      if (text.trim() === "" || this.footer) return;
      let value;
      try {
        value = JSON.parse(text);
      } catch (error) {
        throw new Error(`replay line ${this.lineNumber} is not JSON (${error.message})`);
      }
      if (this.setup === null) {
        if (!value || value.type !== "header" || !value.setup) {
          throw new Error("the replay does not start with a header line");
        }
        this.setup = value.setup;
        this.initial = value.state ?? null;
      } else if (value.type === "frame") {
        // `times` (one [wall µs, CPU µs] per reply, in the order of `replies`): how long
        // each reply took, in replays written since workers record it.
        this.frames.push({ step: value.step, replies: value.replies || [], state: value.state, times: value.times || [] });
        this.lastFrameText = text;
      } else if (value.type === "footer") {
        this.footer = { steps: value.steps, outcome: value.outcome || [] };
      } else {
        throw new Error(`replay line ${this.lineNumber} is neither a frame nor a footer`);
      }
    }

    /** The replay; a last line cut off mid-way (no newline, not JSON) is dropped. */
    finish() {
      if (this.pending.trim() !== "") {
        try {
          this.line(this.pending);
        } catch (_) {
          this.cutOff = true;
        }
      }
      if (this.setup === null) throw new Error("the replay is empty");
      return { setup: this.setup, initial: this.initial, frames: this.frames, footer: this.footer, lastFrameText: this.lastFrameText };
    }
  }

  /** Streams and parses the replay; `onProgress({bytes, frames, setup})` after each chunk. */
  async function loadReplay(jobId, onProgress) {
    const response = await MatchFarm.apiResponse(`/api/matches/${encodeURIComponent(jobId)}/replay`);
    const parser = new ReplayParser();
    const decoder = new TextDecoder();
    const reader = response.body.getReader();
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      await parser.push(decoder.decode(value, { stream: true }));
      onProgress({ bytes, frames: parser.frames.length, setup: parser.setup });
    }
    await parser.push(decoder.decode());
    return { replay: parser.finish(), cutOff: parser.cutOff };
  }

  /** The game's renderer: games/{name}.js, loaded once. */
  function loadGame(name) {
    if (games.has(name)) return Promise.resolve(games.get(name));
    if (!/^[a-z0-9_-]+$/.test(String(name))) return Promise.reject(new Error(`unknown game ${JSON.stringify(name)}`));
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = `/static/games/${name}.js`;
      script.addEventListener("load", () => {
        if (games.has(name)) resolve(games.get(name));
        else reject(new Error(`games/${name}.js did not register a viewer for ${name}`));
      });
      script.addEventListener("error", () => reject(new Error(`there is no replay viewer for ${name} (games/${name}.js)`)));
      document.head.append(script);
    });
  }

  function megabytes(bytes) {
    return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
  }

  /** A reply as shown: its text, or what went wrong instead of one. */
  function describeReply(reply) {
    if (reply && typeof reply === "object" && typeof reply.line === "string") {
      return { text: reply.line === "" ? "(an empty line)" : reply.line, problem: null };
    }
    const problem = REPLY_PROBLEMS[reply];
    return problem ? { text: problem.label, problem } : { text: JSON.stringify(reply), problem: null };
  }

  /** Reads a colour custom property of app.css, for text drawn on canvases. */
  function cssColor(element, name, fallback) {
    return getComputedStyle(element).getPropertyValue(name).trim() || fallback;
  }

  /** Sizes a canvas for `width`×`height` CSS pixels at the screen's pixel density. */
  function sizeCanvas(canvas, width, height) {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(width * ratio));
    canvas.height = Math.max(1, Math.round(height * ratio));
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    return context;
  }

  /** A step that gives about four round gridlines over `span`. */
  function gridStep(span) {
    const rough = span / 4;
    const power = 10 ** Math.floor(Math.log10(rough));
    const scaled = rough / power;
    return power * (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10);
  }

  /** The scores-over-time line chart with a marker at the shown frame. */
  class ScoresChart {
    constructor(canvas, series, colors) {
      this.canvas = canvas;
      this.series = series; // series[seat][frame]
      this.colors = colors;
      this.base = document.createElement("canvas");
      this.width = 0;
      this.height = 0;
    }

    /** Forgets the drawn lines: the next resize draws them again (the series grew). */
    invalidate() {
      this.width = 0;
    }

    /** Draws the lines once for `width`, into an offscreen canvas the marker goes over. */
    resize(width) {
      const height = width < 480 ? 140 : 180;
      if (width === this.width && height === this.height) return;
      this.width = width;
      this.height = height;
      const context = sizeCanvas(this.base, width, height);
      sizeCanvas(this.canvas, width, height);
      const muted = cssColor(this.canvas, "--muted", "#5f6368");
      const line = cssColor(this.canvas, "--line", "#dcdcd8");
      let low = 0;
      let high = 1;
      for (const scores of this.series) {
        for (const score of scores) {
          if (score < low) low = score;
          if (score > high) high = score;
        }
      }
      const step = gridStep(high - low);
      low = Math.floor(low / step) * step;
      high = Math.ceil(high / step) * step;
      context.font = "11px system-ui, sans-serif";
      const labelWidth = Math.max(context.measureText(String(low)).width, context.measureText(String(high)).width);
      const plot = { left: Math.ceil(labelWidth) + 10, right: width - 8, top: 8, bottom: height - 20 };
      const frames = this.series.length > 0 ? this.series[0].length : 0;
      this.x = (index) => plot.left + (frames > 1 ? (index / (frames - 1)) * (plot.right - plot.left) : 0);
      this.y = (score) => plot.bottom - ((score - low) / (high - low)) * (plot.bottom - plot.top);
      this.plot = plot;

      context.lineWidth = 1;
      context.textAlign = "right";
      context.textBaseline = "middle";
      for (let value = low; value <= high + step / 2; value += step) {
        const y = Math.round(this.y(value)) + 0.5;
        context.strokeStyle = line;
        context.beginPath();
        context.moveTo(plot.left, y);
        context.lineTo(plot.right, y);
        context.stroke();
        context.fillStyle = muted;
        context.fillText(String(Math.round(value * 100) / 100), plot.left - 4, y);
      }
      context.textBaseline = "alphabetic";
      context.textAlign = "left";
      context.fillText("frame 1", plot.left, height - 5);
      context.textAlign = "right";
      context.fillText(`frame ${frames}`, plot.right, height - 5);

      context.lineWidth = 2;
      context.lineJoin = "round";
      this.series.forEach((scores, seat) => {
        context.strokeStyle = this.colors[seat];
        context.beginPath();
        scores.forEach((score, index) => {
          if (index === 0) context.moveTo(this.x(index), this.y(score));
          else context.lineTo(this.x(index), this.y(score));
        });
        context.stroke();
      });
    }

    draw(index) {
      const context = this.canvas.getContext("2d");
      const ratio = window.devicePixelRatio || 1;
      context.setTransform(1, 0, 0, 1, 0, 0);
      context.clearRect(0, 0, this.canvas.width, this.canvas.height);
      context.drawImage(this.base, 0, 0);
      context.setTransform(ratio, 0, 0, ratio, 0, 0);
      const x = Math.round(this.x(index)) + 0.5;
      context.strokeStyle = cssColor(this.canvas, "--text", "#1d1f21");
      context.lineWidth = 1;
      context.beginPath();
      context.moveTo(x, this.plot.top);
      context.lineTo(x, this.plot.bottom);
      context.stroke();
      this.series.forEach((scores, seat) => {
        context.fillStyle = this.colors[seat];
        context.beginPath();
        context.arc(this.x(index), this.y(scores[index]), 3.5, 0, 2 * Math.PI);
        context.fill();
      });
    }
  }

  MatchFarm.ReplayParser = ReplayParser;

  /** The viewer of one loaded replay, or of a match still being played (`live`), drawn into `root`. */
  class Viewer {
    constructor(root, replay, game, cutOff, jobId, live = false) {
      this.root = root;
      this.replay = replay;
      this.live = live;
      this.players = replay.setup.players || [];
      this.colors = MatchFarm.seatColors(this.players.length);
      // Live, views that need the whole match (Ostibot's fog of war) are left out: no job id.
      this.renderer = game.create(replay, { seatColors: this.colors, jobId: live ? null : jobId });
      this.last = replay.frames.length - 1;
      this.index = 0;
      this.options = {};
      this.playing = false;
      this.drawing = null;
      this.build(cutOff);
      const series = this.players.map(() => new Array(replay.frames.length));
      replay.frames.forEach((_, index) => {
        this.renderer.scores(index).forEach((score, seat) => {
          if (series[seat]) series[seat][index] = score;
        });
      });
      this.chart = new ScoresChart(this.chartCanvas, series, this.colors);
      this.series = series;
      this.markLast();
    }

    /** Tells the page (and its tests) how many frames there are and which is last. */
    markLast() {
      this.root.dataset.frames = String(this.replay.frames.length);
      this.root.dataset.lastFrame = fingerprint(this.replay.lastFrameText || "");
    }

    /**
     * Live: frames arrived (and maybe the footer). The renderer and the chart take them
     * in; a viewer at the newest frame follows on to the new newest.
     */
    grow() {
      const previousLast = this.last;
      this.last = this.replay.frames.length - 1;
      if (this.last > previousLast) {
        if (this.renderer.grow) this.renderer.grow(previousLast + 1);
        for (let index = previousLast + 1; index <= this.last; index += 1) {
          this.renderer.scores(index).forEach((score, seat) => {
            if (this.series[seat]) this.series[seat][index] = score;
          });
        }
        this.scrub.max = String(this.last);
        this.frameTotal.textContent = ` of ${this.replay.frames.length}`;
        this.chart.invalidate();
        this.chart.resize(Math.floor(this.scoresBox.clientWidth));
        this.markLast();
      }
      if (this.index === previousLast && !this.playing) return this.show(this.last);
      this.forwardButton.disabled = this.index === this.last;
      return Promise.resolve();
    }

    /** Live: the match's stream is over, `why` in words. */
    liveEnded(why) {
      this.liveBadge.textContent = why;
      this.liveBadge.classList.add("viewer-live-over");
      this.root.dataset.liveLastFrame = this.root.dataset.lastFrame;
    }

    build(cutOff) {
      const { replay } = this;
      const notices = [];
      if (!replay.initial) {
        notices.push(el("p", { class: "viewer-notice", dataset: { testid: "replay-no-start" } },
          "This replay was written before replays recorded the state before the first step (format 1): " +
          "what the first frame changed is not shown."));
      }
      if (!replay.footer && !this.live) {
        const cut = cutOff ? " and its last line is cut off" : "";
        notices.push(el("p", { class: "viewer-notice", dataset: { testid: "replay-truncated" } },
          `This replay ends early, at frame ${replay.frames.length}: it has no footer${cut}, so the rest of the match is missing.`));
      }

      const button = (testid, text, title) =>
        el("button", { type: "button", dataset: { testid }, title, attrs: { "aria-keyshortcuts": title } }, text);
      this.playButton = button("play", "▶ Play", "Space");
      this.pauseButton = button("pause", "❚❚ Pause", "Space");
      this.backButton = button("step-back", "◀ Back", "ArrowLeft");
      this.forwardButton = button("step-forward", "Next ▶", "ArrowRight");
      this.playButton.addEventListener("click", () => this.play());
      this.pauseButton.addEventListener("click", () => this.pause());
      this.backButton.addEventListener("click", () => this.step(-1));
      this.forwardButton.addEventListener("click", () => this.step(1));

      this.speed = el("select", { dataset: { testid: "speed" } },
        SPEEDS.map((fps) => el("option", { value: String(fps) }, `${fps} / s`)));
      this.speed.value = String(this.defaultSpeed());

      this.turn = el("span", { class: "viewer-frame", dataset: { testid: "turn", frame: "0" } }, "1");
      this.stepText = el("span", { class: "viewer-step" });
      this.frameTotal = document.createTextNode(` of ${replay.frames.length}`);
      const position = el("span", { class: "viewer-position" },
        "Frame ", this.turn, this.frameTotal, this.stepText);
      this.liveBadge = el("span", { class: "viewer-live", dataset: { testid: "live-badge" }, attrs: { role: "status" } }, "● Live");

      const optionControls = (this.renderer.controls || []).map((control) => {
        const select = el("select", { dataset: { testid: `control-${control.id}` } },
          control.choices.map(([value, label]) => el("option", { value }, label)));
        this.options[control.id] = select.value;
        select.addEventListener("change", () => {
          this.options[control.id] = select.value;
          this.draw();
        });
        return el("label", { class: "viewer-option" }, control.label, select);
      });

      this.scrub = el("input", {
        type: "range", class: "viewer-scrub", min: "0", max: String(this.last), step: "1", value: "0",
        dataset: { testid: "scrub" }, attrs: { "aria-label": "Frame" },
      });
      this.scrub.addEventListener("input", () => this.show(Number(this.scrub.value)));

      this.canvas = el("canvas", { dataset: { testid: "replay-canvas" }, attrs: { role: "img", "aria-label": "The board" } });
      this.board = el("div", { class: "viewer-board" }, this.canvas);
      this.replies = el("ul", { class: "viewer-replies", dataset: { testid: "replies" } });
      this.events = el("ul", { class: "viewer-events", dataset: { testid: "events" } });
      this.chartCanvas = el("canvas", { dataset: { testid: "scores-chart" }, attrs: { role: "img", "aria-label": "Scores over time" } });
      this.legend = el("ul", { class: "viewer-legend" });
      this.scoresBox = el("div", { class: "viewer-chart" }, this.chartCanvas);

      this.root.replaceChildren(
        ...notices,
        el("div", { class: "viewer-controls" },
          el("div", { class: "viewer-buttons" }, this.playButton, this.pauseButton, this.backButton, this.forwardButton),
          position,
          this.live ? this.liveBadge : null,
          el("label", { class: "viewer-option" }, "Speed", this.speed),
          ...optionControls),
        this.scrub,
        el("div", { class: "viewer-main" },
          this.board,
          el("div", { class: "viewer-side" },
            el("section", {}, el("h3", {}, "Replies"), this.replies),
            el("section", {}, el("h3", {}, "Events"), this.events))),
        el("section", { class: "viewer-scores" }, el("h3", {}, "Scores"), this.scoresBox, this.legend),
        el("p", { class: "hint" }, "Keys: space plays or pauses, ← and → step, Home and End jump to the ends."),
      );

      document.addEventListener("keydown", (event) => this.key(event));
      // Laid out in the next frame, not inside the observer: resizing the canvases there
      // would change the observed size again before the browser delivered it (a
      // "ResizeObserver loop" warning on narrow screens).
      let scheduled = false;
      new ResizeObserver(() => {
        if (scheduled) return;
        scheduled = true;
        requestAnimationFrame(() => {
          scheduled = false;
          this.layout();
        });
      }).observe(this.root);
    }

    /** A speed that shows a long match in under a minute, a short one in about 20 s. */
    defaultSpeed() {
      const wanted = Math.max(5, this.replay.frames.length / 50);
      return SPEEDS.find((fps) => fps >= wanted) || SPEEDS[SPEEDS.length - 1];
    }

    /** Fits the board and the chart to the width they have, and redraws. */
    layout() {
      const boardWidth = Math.floor(this.board.clientWidth);
      const chartWidth = Math.floor(this.scoresBox.clientWidth);
      if (boardWidth === 0) return;
      if (boardWidth !== this.boardWidth) {
        this.boardWidth = boardWidth;
        const { width, height } = this.renderer.size(boardWidth);
        this.boardSize = { width, height };
        sizeCanvas(this.canvas, width, height);
      }
      this.chart.resize(chartWidth);
      this.chart.draw(this.index);
      this.draw();
    }

    /** Shows frame `index`: the board, the position, replies, events and the chart marker. */
    show(index) {
      this.index = Math.max(0, Math.min(this.last, index));
      const frame = this.replay.frames[this.index];
      this.scrub.value = String(this.index);
      this.turn.textContent = String(this.index + 1);
      this.turn.dataset.frame = String(this.index);
      this.stepText.textContent = ` · step ${frame.step}`;
      this.backButton.disabled = this.index === 0;
      this.forwardButton.disabled = this.index === this.last;
      this.showReplies(frame);
      this.showEvents(frame);
      this.showLegend();
      if (this.chart.width > 0) this.chart.draw(this.index);
      return this.draw();
    }

    /** Draws the board; resolves when an asynchronous renderer has finished. */
    draw() {
      if (!this.boardSize) return Promise.resolve();
      const context = this.canvas.getContext("2d");
      const ratio = window.devicePixelRatio || 1;
      context.setTransform(ratio, 0, 0, ratio, 0, 0);
      context.clearRect(0, 0, this.boardSize.width, this.boardSize.height);
      let drawn;
      try {
        drawn = Promise.resolve(this.renderer.draw(context, this.index, { ...this.options }));
      } catch (error) {
        drawn = Promise.reject(error);
      }
      const current = drawn.catch((error) => {
        this.pause();
        MatchFarm.showError(new Error(`the board cannot be drawn: ${error.message}`));
      });
      this.drawing = current;
      current.then(() => {
        if (this.drawing === current) this.drawing = null;
      });
      return current;
    }

    showReplies(frame) {
      const bySeat = new Map(frame.replies.map((entry) => [entry.seat, entry.reply]));
      this.replies.replaceChildren(...this.players.map((name, seat) => {
        const item = el("li", { dataset: { seat: String(seat) } }, this.swatch(seat), el("span", { class: "viewer-name" }, name));
        if (!bySeat.has(seat)) {
          item.append(el("span", { class: "viewer-reply viewer-not-asked" }, "not asked"));
        } else {
          const { text, problem } = describeReply(bySeat.get(seat));
          item.append(el("code", { class: problem ? "viewer-reply bad" : "viewer-reply" }, text));
        }
        return item;
      }));
    }

    showEvents(frame) {
      const lines = [];
      for (const { seat, reply } of frame.replies) {
        const { problem } = describeReply(reply);
        if (problem) lines.push({ text: `${this.players[seat] ?? `seat ${seat}`} ${problem.event}`, bad: true });
      }
      for (const text of this.renderer.events(this.index)) lines.push({ text, bad: false });
      if (this.index === this.last) lines.push(...this.ending());
      this.events.replaceChildren(...(lines.length > 0
        ? lines.map(({ text, bad }) => el("li", { class: bad ? "bad" : "" }, text))
        : [el("li", { class: "viewer-quiet" }, "nothing happened")]));
    }

    /** The last frame's closing lines: the outcome, or that the replay stops short. */
    ending() {
      const { footer } = this.replay;
      if (!footer && this.live) return [{ text: "The match goes on: this is its newest frame.", bad: false }];
      if (!footer) return [{ text: "The replay ends here, before the match did (no footer).", bad: true }];
      const ranked = footer.outcome
        .map((outcome, seat) => ({ ...outcome, seat }))
        .sort((a, b) => a.rank - b.rank || a.seat - b.seat);
      const standing = ranked
        .map(({ seat, rank, score }) => `${MatchFarm.fmt.ordinal(rank)} ${this.players[seat] ?? `seat ${seat}`} (${MatchFarm.fmt.number(score)})`)
        .join(", ");
      const lines = [{ text: `Match over after ${footer.steps} steps: ${standing}`, bad: false }];
      for (const { seat, status } of ranked) {
        if (status !== "ok") lines.push({ text: `${this.players[seat] ?? `seat ${seat}`} ended ${MatchFarm.fmt.status(status)}`, bad: true });
      }
      return lines;
    }

    showLegend() {
      this.legend.replaceChildren(...this.players.map((name, seat) =>
        el("li", {}, this.swatch(seat), `${name}: `,
          el("strong", {}, MatchFarm.fmt.number(this.series[seat][this.index] ?? 0)))));
    }

    swatch(seat) {
      const swatch = el("span", { class: "viewer-swatch", attrs: { "aria-hidden": "true" } });
      swatch.style.background = this.colors[seat];
      return swatch;
    }

    play() {
      if (this.playing) return;
      if (this.index === this.last) this.show(0);
      this.playing = true;
      this.updateButtons();
      let previous = null;
      let owed = 0;
      const tick = (now) => {
        if (!this.playing) return;
        if (previous !== null && !this.drawing) {
          owed += ((now - previous) / 1000) * Number(this.speed.value);
          const advance = Math.floor(owed);
          if (advance > 0) {
            owed -= advance;
            this.show(this.index + advance);
            if (this.index === this.last) this.pause();
          }
        }
        previous = now;
        if (this.playing) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }

    pause() {
      this.playing = false;
      this.updateButtons();
    }

    step(delta) {
      this.pause();
      this.show(this.index + delta);
    }

    updateButtons() {
      this.playButton.disabled = this.playing;
      this.pauseButton.disabled = !this.playing;
    }

    /** Keyboard shortcuts, except where a control needs the key itself. */
    key(event) {
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const target = event.target;
      const tag = target && target.tagName;
      if (tag === "SELECT" || tag === "TEXTAREA" || tag === "BUTTON" || target.isContentEditable) return;
      // The range input steps with the arrow keys by itself.
      if (tag === "INPUT" && !(target === this.scrub && event.key === " ")) return;
      const actions = {
        " ": () => (this.playing ? this.pause() : this.play()),
        ArrowLeft: () => this.step(event.shiftKey ? -10 : -1),
        ArrowRight: () => this.step(event.shiftKey ? 10 : 1),
        Home: () => this.step(-this.index),
        End: () => this.step(this.last - this.index),
      };
      const action = actions[event.key];
      if (!action) return;
      event.preventDefault();
      action();
    }
  }

  /** Draws the replay of `jobId` into `container`; returns the replay, or null if it has no frames. */
  MatchFarm.viewReplay = async function (container, jobId) {
    const status = el("p", { class: "viewer-status", attrs: { role: "status" } }, "Loading the replay…");
    container.replaceChildren(status);
    container.dataset.mode = "replay";
    const { replay, cutOff } = await loadReplay(jobId, ({ bytes, frames, setup }) => {
      const most = setup && setup.rules && Number(setup.rules.maxTurns);
      const of = most > 0 ? ` of at most ${MatchFarm.fmt.number(most)}` : "";
      status.textContent = `Loading the replay: ${MatchFarm.fmt.number(frames)} frames${of} (${megabytes(bytes)})…`;
    });
    if (replay.frames.length === 0) {
      status.textContent = replay.footer
        ? "This replay has no frames: the match ended before its first step."
        : "This replay has no frames: it stops after its header.";
      return null;
    }
    status.textContent = `Loading the ${replay.setup.game} viewer…`;
    const game = await loadGame(replay.setup.game);
    const viewer = new Viewer(container, replay, game, cutOff, jobId);
    viewer.updateButtons();
    viewer.layout();
    await viewer.show(0);
    return replay;
  };

  /** How long live lines are gathered before they are drawn: a fast match is drawn in steps. */
  const LIVE_BATCH_MS = 50;

  /**
   * Shows the match `jobId`, still being played, in `container` as its lines arrive
   * (`GET /api/matches/{jobId}/live`, Server-Sent Events: one line each, its id the
   * line's number; `skipped`, `restart`, `end`). Calls `onEnd(reason)` once the stream
   * is over: "end" (the match is over), "closed" (refused, or the server went away).
   */
  MatchFarm.viewLive = function (container, jobId, onEnd) {
    const status = el("p", { class: "viewer-status", attrs: { role: "status" } }, "Waiting for a worker to start the match…");
    container.replaceChildren(status);
    container.dataset.mode = "live";
    let parser = new ReplayParser();
    let viewer = null;
    let lastIndex = -1;
    let skipped = 0;
    let lines = [];
    let work = Promise.resolve();
    let scheduled = false;
    let over = false;
    // Bumped when a new attempt starts over: a draw begun before leaves it alone.
    let epoch = 0;
    const source = new EventSource(`/api/matches/${encodeURIComponent(jobId)}/live`);

    /** Parses the lines gathered, then draws: the viewer is made once there is a frame. */
    async function draw() {
      scheduled = false;
      const started = epoch;
      const taken = lines;
      lines = [];
      for (const text of taken) parser.line(text);
      if (viewer) return viewer.grow();
      if (parser.frames.length === 0) {
        if (parser.setup) status.textContent = "The match has begun: waiting for its first step…";
        return undefined;
      }
      status.textContent = `Loading the ${parser.setup.game} viewer…`;
      const game = await loadGame(parser.setup.game);
      if (started !== epoch) return undefined;
      // The parser is the replay: frames and the footer appear in it as they arrive.
      viewer = new Viewer(container, parser, game, false, jobId, true);
      viewer.updateButtons();
      viewer.layout();
      return viewer.show(viewer.last);
    }

    function schedule(delay) {
      if (scheduled) return;
      scheduled = true;
      work = work
        .then(() => new Promise((resolve) => setTimeout(resolve, delay)))
        .then(draw)
        .catch((error) => MatchFarm.showError(error));
    }

    function end(reason) {
      if (over) return;
      over = true;
      source.close();
      work = work.then(() => {
        if (viewer) viewer.liveEnded(reason === "end" ? "Over: loading its replay…" : "Live view closed");
        else if (reason !== "end") status.textContent = "This match cannot be watched live now.";
        onEnd(reason);
      });
    }

    source.addEventListener("message", (event) => {
      const index = Number(event.lastEventId);
      // After a reconnection the server starts from the last line had; a repeat is skipped.
      if (index <= lastIndex) return;
      lastIndex = index;
      lines.push(event.data);
      schedule(LIVE_BATCH_MS);
    });
    source.addEventListener("skipped", (event) => {
      skipped += Number(event.data) || 0;
      container.dataset.skipped = String(skipped);
    });
    source.addEventListener("restart", () => {
      // A new attempt at the match is played from its start: so is its view, at once
      // (its first lines may come before a draw under way ends; the server cleared the
      // last event id, so a reconnection starts from them too).
      epoch += 1;
      parser = new ReplayParser();
      viewer = null;
      lastIndex = -1;
      lines = [];
      skipped = 0;
      delete container.dataset.skipped;
      container.replaceChildren(status);
      status.textContent = "The match is being played again from its start (a new attempt)…";
    });
    source.addEventListener("end", () => {
      schedule(0);
      end("end");
    });
    source.addEventListener("error", () => {
      // A refused stream (409, 429) is closed for good; a lost one reconnects by itself.
      if (source.readyState === EventSource.CLOSED) end("closed");
    });
  };
})();
