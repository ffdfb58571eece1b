// One bot of a tournament: its standing, its failures (with their status or reason and
// its log) and every match it played, page by page (?offset= pages the results,
// ?failures_offset= the failures).
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
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
        el("td", { class: "wrap bad" }, MatchFarm.problems(match, bot)),
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
    document.getElementById("name").textContent = bot;
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
    drawFailures(failures, failuresOffset);
    drawResults(results, resultsOffset);
  });
})();
