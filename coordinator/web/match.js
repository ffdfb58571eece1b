// The match page: the match's tournament, map, seed and state, each seat's bot and
// outcome with its log, and the replay viewer (viewer.js) when the match has a replay.
// A match not yet over plays live in the same viewer; when it ends, the page shows
// its stored replay.
"use strict";

(function () {
  const { el, fmt, paths, svg } = MatchFarm;
  const jobId = MatchFarm.pathSegment(1);
  /** After a live stream ends, how often and how long the page asks for the match's answer. */
  const ANSWER_POLL_MS = 500;
  const ANSWER_POLLS = 20;
  /** After a live stream was refused (429), how often the page asks whether the match is over. */
  const REFUSED_POLL_MS = 5000;

  function milliseconds(value) {
    return value === undefined || value === null ? "–" : `${fmt.number(value)} ms`;
  }

  /** One seat's row: its bot, and its outcome once the match completed. */
  function seatRow(tournament, seat, name, player, color) {
    const swatch = el("span", { class: "viewer-swatch", attrs: { "aria-hidden": "true" } });
    swatch.style.background = color;
    const bot = tournament.bots.includes(name)
      ? [el("a", { href: paths.bot(tournament.id, name) }, name), ...MatchFarm.ladderMarks(tournament, name)]
      : name;
    if (!player) {
      return el("tr", { dataset: { testid: "seat-row", seat: String(seat) } },
        el("td", { class: "num" }, seat), el("td", {}, swatch, bot),
        ...Array.from({ length: 9 }, () => el("td", { class: "num" }, "–")));
    }
    const problems = [];
    if (player.crash) problems.push(player.crash.reason);
    else if (player.exit_code !== null && player.exit_code !== undefined) problems.push(`exit code ${player.exit_code}`);
    if (player.oom_killed && !player.crash) problems.push("killed for using too much memory");
    const status = player.status === "ok"
      ? el("td", {}, "ok")
      : el("td", { class: "bad wrap" }, fmt.status(player.status));
    if (problems.length > 0) status.append(el("span", { class: "hint" }, ` (${problems.join(", ")})`));
    status.append(MatchFarm.crashDetails(player.crash));
    const log = player.log_key
      ? el("a", { href: `/api/matches/${encodeURIComponent(jobId)}/logs/${seat}` }, "stderr")
      : el("span", { class: "hint" }, "none (built in)");
    return el("tr", { class: player.rank === 1 ? "winner" : "", dataset: { testid: "seat-row", seat: String(seat) } },
      el("td", { class: "num" }, seat),
      el("td", {}, swatch, bot),
      el("td", { class: "num" }, fmt.ordinal(player.rank)),
      el("td", { class: "num" }, fmt.number(player.score)),
      status,
      el("td", { class: "num" }, fmt.number(player.timeouts)),
      el("td", { class: "num" }, milliseconds(player.mean_reply_ms)),
      el("td", { class: "num" }, milliseconds(player.p99_reply_ms)),
      el("td", { class: "num" }, milliseconds(player.max_reply_ms)),
      el("td", { class: "num" }, milliseconds(player.cpu ? player.cpu.p99_ms : null)),
      el("td", {}, log));
  }

  /** Each seat's moves from the replay's frames: `{wall, cpu, timeout}` per reply, in ms. */
  function movesBySeat(replay, seats) {
    const moves = Array.from({ length: seats }, () => []);
    for (const frame of replay.frames) {
      frame.replies.forEach((entry, index) => {
        const time = frame.times[index];
        if (!time || !moves[entry.seat]) return;
        moves[entry.seat].push({ wall: time[0] / 1000, cpu: time[1] === null ? null : time[1] / 1000, timeout: entry.reply === "timeout" });
      });
    }
    return moves;
  }

  /** A small plot of one seat's time per move: wall-clock time above, CPU time below. */
  function movePlot(seat, name, moves, color) {
    const width = 320;
    const height = 48;
    const most = Math.max(0.001, ...moves.map((move) => Math.max(move.wall, move.cpu || 0)));
    const x = (index) => (moves.length > 1 ? (index / (moves.length - 1)) * (width - 2) + 1 : width / 2);
    const y = (ms) => height - 1 - (ms / most) * (height - 2);
    const plot = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `seat ${seat}: time per move, up to ${most.toFixed(2)} ms` });
    const line = (values, attrs) => plot.append(svg("polyline", { fill: "none", ...attrs,
      points: values.map((ms, index) => (ms === null ? null : `${x(index).toFixed(1)},${y(ms).toFixed(1)}`)).filter(Boolean).join(" ") }));
    line(moves.map((move) => move.wall), { stroke: color, "stroke-width": 1.5 });
    if (moves.some((move) => move.cpu !== null)) {
      line(moves.map((move) => move.cpu), { stroke: color, "stroke-width": 1, "stroke-dasharray": "3 2", opacity: 0.7 });
    }
    moves.forEach((move, index) => {
      if (move.timeout) plot.append(svg("circle", { cx: x(index), cy: y(move.wall), r: 2.5, fill: "#c5221f" }));
    });
    const sorted = moves.map((move) => move.wall).sort((a, b) => a - b);
    const p99 = sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)];
    return el("figure", { class: "move-plot", dataset: { testid: "move-time-plot", seat: String(seat), moves: String(moves.length) } },
      plot, el("figcaption", {}, `seat ${seat} ${name}: ${fmt.number(moves.length)} moves, p99 ${p99.toFixed(2)} ms, max ${most.toFixed(2)} ms`));
  }

  /** The time-per-move section, from a replay whose frames record their replies' times. */
  function showMoveTimes(replay, names, colors) {
    const moves = movesBySeat(replay, names.length);
    if (moves.every((seat) => seat.length === 0)) return;
    document.querySelector('[data-testid="move-times"]').replaceChildren(
      ...moves.map((seatMoves, seat) => (seatMoves.length > 0 ? movePlot(seat, names[seat], seatMoves, colors[seat]) : null)).filter(Boolean));
    document.getElementById("move-times-section").hidden = false;
  }

  /** Why there is no replay to show, or null when there is one. */
  function noReplay(match, result) {
    if (match.state === "failed") {
      return `This match failed, so it has no replay: ${match.reason || (result && result.reason) || "no reason recorded"}.`;
    }
    if (match.state !== "done") return `This match is ${match.state}.`;
    if (!result || result.status !== "completed") return "This match has no replay.";
    return null;
  }

  async function showMatch(viewer) {
    // Seeds are 64-bit: kept as the digits the API sent where the browser can read
    // them, as a JavaScript number would round them.
    const detail = JSON.parse(await MatchFarm.apiText(`/api/matches/${encodeURIComponent(jobId)}`),
      (key, value, context) => (key === "seed" && typeof value === "number" && context && context.source ? context.source : value));
    const tournament = await MatchFarm.api(`/api/tournaments/${encodeURIComponent(detail.tournament_id)}`);
    const { match, result } = detail;
    const title = `Match #${match.position}`;
    MatchFarm.header(MatchFarm.tournamentHeader(tournament,
      { text: "Matches", href: paths.matches(tournament.id) }, { text: title }));
    document.getElementById("name").textContent = `${title} of ${tournament.name}`;

    const completed = result && result.status === "completed" ? result : null;
    const facts = [
      el("span", {}, el("a", { href: paths.tournament(tournament.id) }, tournament.name)),
      el("span", {}, tournament.game),
      el("span", {}, "map ", el("a", { href: paths.matches(tournament.id, { map: match.map }) }, match.map || "–")),
      el("span", {}, `seed ${match.seed}`),
      el("span", {}, `repetition ${match.repetition + 1}`),
      el("span", {}, el("span", { class: `state state-${match.state}` }, match.state)),
      completed ? el("span", {}, `${fmt.number(completed.steps)} steps in ${fmt.duration(completed.duration_ms / 1000)}`) : null,
      detail.worker_id ? el("span", {}, `worker ${detail.worker_id}`) : null,
      match.attempts > 1 ? el("span", {}, `attempt ${match.attempts}`) : null,
    ];
    document.getElementById("meta").replaceChildren(...facts.filter(Boolean));

    const players = completed ? completed.players : [];
    const seats = Math.max(players.length, match.bots.length);
    const colors = MatchFarm.seatColors(seats);
    document.querySelector('[data-testid="seats"] tbody').replaceChildren(
      ...Array.from({ length: seats }, (_, seat) => {
        const player = players.find((entry) => entry.seat === seat);
        const name = player ? player.name : match.bots[seat];
        return seatRow(tournament, seat, name, player, colors[seat]);
      }));
    document.getElementById("result-note").textContent = completed
      ? "Seat colours are the board's. Reply times are the bot's own, as the worker measured them."
      : "";

    const live = match.state === "running" || match.state === "pending";
    document.getElementById("viewer-title").textContent = live ? "Live" : "Replay";
    if (live) {
      MatchFarm.viewLive(viewer, jobId, (reason) => afterLive(viewer, reason).catch((error) => MatchFarm.showError(error)));
      return;
    }
    const missing = noReplay(match, result);
    if (missing) {
      viewer.replaceChildren(el("p", { class: "viewer-status", dataset: { testid: "no-replay" } }, missing));
      return;
    }
    const replay = await MatchFarm.viewReplay(viewer, jobId);
    if (replay) {
      const names = Array.from({ length: seats }, (_, seat) => (players.find((entry) => entry.seat === seat) || {}).name || match.bots[seat]);
      showMoveTimes(replay, names, colors);
    }
  }

  /**
   * The live stream is over: once the match has its answer the page is drawn again,
   * with the replay. After its end, a match still running a while later is watched
   * live again (its answer is late, or another attempt plays it); after a refusal the
   * page only waits for the answer.
   */
  async function afterLive(viewer, reason) {
    const refused = reason !== "end";
    for (let poll = 0; refused || poll < ANSWER_POLLS; poll += 1) {
      const { match } = await MatchFarm.api(`/api/matches/${encodeURIComponent(jobId)}`);
      if (match.state !== "running" && match.state !== "pending") break;
      await new Promise((resolve) => setTimeout(resolve, refused ? REFUSED_POLL_MS : ANSWER_POLL_MS));
    }
    await showMatch(viewer);
  }

  MatchFarm.run(async () => {
    const viewer = document.getElementById("viewer");
    try {
      await showMatch(viewer);
    } catch (error) {
      viewer.replaceChildren(el("p", { class: "viewer-status", dataset: { testid: "no-replay" } }, "No replay to show."));
      throw error;
    }
  });
})();
