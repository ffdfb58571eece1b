// One bot of a tournament: its standing, its failures (with their status or reason and
// its log) and every match it played, page by page (?offset= pages the results,
// ?failures_offset= the failures).
"use strict";

(function () {
  const { el, fmt, paths, svg } = MatchFarm;
  const PAGE = 50;

  const id = MatchFarm.pathSegment(1);
  const bot = MatchFarm.pathSegment(3);
  const base = `/api/tournaments/${encodeURIComponent(id)}`;
  const query = new URLSearchParams(location.search);
  const offsetOf = (name) => Math.max(0, Number.parseInt(query.get(name) || "0", 10) || 0);

  /** This page with `name` set to `offset`. */
  function pageHref(name, offset) {
    const next = new URLSearchParams(location.search);
    if (offset > 0) next.set(name, offset);
    else next.delete(name);
    const text = next.toString();
    return `${location.pathname}${text ? `?${text}` : ""}`;
  }

  function drawStanding(standings) {
    const row = standings.rows.find((candidate) => candidate.bot === bot);
    if (!row) throw new Error(`no bot named ${bot} in this tournament`);
    document.getElementById("rating-heading").textContent = standings.method === "elo" ? "Elo" : "Rating";
    const num = (field, value, text) => el("td", { class: "num", dataset: { field, value } }, text === undefined ? fmt.number(value) : text);
    document.querySelector('[data-testid="bot-standing"] tbody').replaceChildren(el("tr", { dataset: { testid: "standing-row" } },
      num("place", row.place, `${row.place} of ${standings.rows.length}`),
      num("played", row.played),
      num("wins", row.wins),
      num("draws", row.draws),
      num("losses", row.losses),
      num("points", row.points),
      num("rating", row.rating.value, fmt.rating(row.rating, row.played)),
      num("timeouts", row.timeouts),
      num("crashes", row.crashes),
      num("disqualified", row.disqualified)));
  }

  /** A ladder bot's rating history: μ with its ±σ band, version boundaries, league changes, the peak. */
  function drawHistory(history) {
    const points = history.points;
    if (points.length === 0) return;
    const [width, height, pad] = [720, 220, 30];
    const low = Math.min(...points.map((point) => point.mu - point.sigma));
    const high = Math.max(...points.map((point) => point.mu + point.sigma));
    const x = (index) => pad + (points.length > 1 ? (index / (points.length - 1)) * (width - 2 * pad) : (width - 2 * pad) / 2);
    const y = (mu) => height - pad - ((mu - low) / Math.max(1e-9, high - low)) * (height - 2 * pad);
    const plot = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `μ over ${points.length} matches, from ${low.toFixed(1)} to ${high.toFixed(1)}` });
    const band = points.map((point, index) => `${x(index).toFixed(1)},${y(point.mu + point.sigma).toFixed(1)}`)
      .concat(points.map((point, index) => `${x(index).toFixed(1)},${y(point.mu - point.sigma).toFixed(1)}`).reverse());
    plot.append(svg("polygon", { points: band.join(" "), fill: "#1a73e8", opacity: 0.12 }));
    plot.append(svg("polyline", { fill: "none", stroke: "#1a73e8", "stroke-width": 1.5,
      points: points.map((point, index) => `${x(index).toFixed(1)},${y(point.mu).toFixed(1)}`).join(" ") }));
    points.forEach((point, index) => {
      const before = points[index - 1];
      if (!before) return;
      if (point.bot !== before.bot) {
        const boundary = svg("line", { x1: x(index), x2: x(index), y1: pad / 2, y2: height - pad / 2, stroke: "#5f6368",
          "stroke-dasharray": "4 3", "data-testid": "version-boundary", "data-bot": point.bot });
        plot.append(boundary, svg("text", { x: x(index) + 3, y: pad / 2 + 10, "font-size": 11, fill: "#5f6368" }));
        plot.lastChild.textContent = point.bot;
      }
      if (point.league !== before.league) {
        const up = point.league > before.league;
        const mark = svg("text", { x: x(index) - 5, y: y(point.mu) + (up ? -6 : 14), "font-size": 12, fill: up ? "#188038" : "#c5221f",
          "data-testid": "league-change", "data-league": history.leagues[point.league] || String(point.league) });
        mark.textContent = up ? "▲" : "▼";
        plot.append(mark);
      }
    });
    const captions = [`${fmt.number(points.length)} points`];
    if (history.peak) {
      const peakIndex = points.findIndex((point) => point.position === history.peak.position && point.bot === history.peak.bot);
      if (peakIndex >= 0) plot.append(svg("circle", { cx: x(peakIndex), cy: y(history.peak.mu), r: 4, fill: "#e37400", "data-testid": "peak" }));
      captions.push(`peak μ ${history.peak.mu.toFixed(2)} (${history.peak.bot}, match #${history.peak.position})`);
    }
    if (history.thinned) captions.push("thinned to at most 1,000 points a version");
    document.getElementById("history").replaceChildren(el("figure", { class: "history-plot" }, plot,
      el("figcaption", {}, `${history.versions.join(" → ")}: ${captions.join("; ")}`)));
    document.getElementById("history-section").hidden = false;
  }

  /** This bot's seat in `match` (its outcome once completed). */
  function ownSeat(match) {
    const seat = match.bots.indexOf(bot);
    return { seat, outcome: match.outcomes ? match.outcomes[seat] : null };
  }

  function opponents(match) {
    const others = match.bots.filter((other) => other !== bot);
    if (others.length === 0) return "—";
    return others.flatMap((other, index) => [index > 0 ? ", " : "", el("a", { href: paths.bot(id, other) }, other)]);
  }

  function logLink(outcome) {
    return outcome && outcome.log ? el("a", { href: outcome.log, attrs: { target: "_blank", rel: "noopener" } }, "stderr") : "—";
  }

  function state(match) {
    return el("span", { class: `state state-${match.state}` }, match.state);
  }

  function drawFailures(page, offset) {
    document.getElementById("failures-title").textContent = `Failures (${fmt.number(page.total)})`;
    const body = document.querySelector('[data-testid="failures"] tbody');
    if (page.total === 0) {
      body.replaceChildren(el("tr", {}, el("td", { class: "empty", attrs: { colspan: 5 } }, "None.")));
    } else {
      body.replaceChildren(...page.matches.map((match) => el("tr", { dataset: { testid: "failure-row" } },
        el("td", { class: "num" }, MatchFarm.matchLink(match)),
        el("td", {}, match.map),
        el("td", {}, opponents(match)),
        el("td", { class: "wrap bad" }, MatchFarm.problems(match, bot), MatchFarm.crashDetails((ownSeat(match).outcome || {}).crash)),
        el("td", {}, logLink(ownSeat(match).outcome)))));
    }
    document.getElementById("failures-pager").replaceChildren(page.total > PAGE
      ? MatchFarm.pager({ total: page.total, offset, limit: PAGE, href: (next) => pageHref("failures_offset", next) })
      : "");
  }

  function drawResults(page, offset) {
    document.getElementById("results-title").textContent = `Matches (${fmt.number(page.total)})`;
    const rows = page.matches.map((match) => {
      const { seat, outcome } = ownSeat(match);
      const status = outcome ? el("span", { class: outcome.status === "ok" ? "" : "bad" }, fmt.status(outcome.status)) : "—";
      return el("tr", { dataset: { testid: "result-row", state: match.state } },
        el("td", { class: "num" }, MatchFarm.matchLink(match)),
        el("td", {}, match.map),
        el("td", { class: "num" }, seat),
        el("td", {}, opponents(match)),
        el("td", {}, state(match), match.state === "failed" ? el("span", { class: "hint", title: match.reason || "" }, " (see failures)") : null),
        el("td", { class: "num" }, outcome ? fmt.number(outcome.score) : "—"),
        el("td", { class: outcome && outcome.rank === 1 ? "num winner" : "num" }, outcome ? fmt.ordinal(outcome.rank) : "—"),
        el("td", {}, status),
        el("td", { class: "num" }, outcome ? fmt.number(outcome.timeouts) : "—"),
        el("td", {}, logLink(outcome)));
    });
    document.querySelector('[data-testid="results"] tbody').replaceChildren(...rows);
    document.getElementById("results-pager").replaceChildren(
      MatchFarm.pager({ total: page.total, offset, limit: PAGE, href: (next) => pageHref("offset", next) }));
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Tournaments", href: "/" }, { text: id, href: paths.tournament(id) }, { text: bot }]);
    const tournament = await MatchFarm.api(base);
    MatchFarm.header(MatchFarm.tournamentHeader(tournament, { text: bot }));
    document.getElementById("name").replaceChildren(bot, ...MatchFarm.ladderMarks(tournament, bot));
    document.getElementById("meta").replaceChildren(
      el("span", {}, el("a", { href: paths.tournament(id) }, tournament.name)),
      el("span", {}, tournament.game),
      el("span", {}, el("a", { href: paths.matches(id, { bot }) }, "in the match list")));
    if (!tournament.bots.includes(bot)) throw new Error(`${tournament.name} has no bot named ${bot}`);
    const botQuery = `bot=${encodeURIComponent(bot)}`;
    const [failuresOffset, resultsOffset] = [offsetOf("failures_offset"), offsetOf("offset")];
    const [standings, failures, results] = await Promise.all([
      MatchFarm.api(`${base}/standings`),
      MatchFarm.api(`${base}/matches?${botQuery}&failures=true&limit=${PAGE}&offset=${failuresOffset}`),
      MatchFarm.api(`${base}/matches?${botQuery}&limit=${PAGE}&offset=${resultsOffset}`),
    ]);
    drawStanding(standings);
    if (tournament.format.kind === "ladder") drawHistory(await MatchFarm.api(`${base}/bots/${encodeURIComponent(bot)}/history`));
    drawFailures(failures, failuresOffset);
    drawResults(results, resultsOffset);
  });
})();
