// A tournament: live progress (every 2 s until it finishes, with a rate and an ETA),
// the state of a directed format (an SPRT's test, a Swiss's rounds, a ladder's bots,
// a stopping round robin's ranking), the matches playing now (each one watchable
// live), standings, the pairing matrix (tournaments of 2-bot matches) and its failures.
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
  const POLL_MS = 2000;
  /** Progress samples kept for the rate: about a minute at one per poll. */
  const RATE_SAMPLES = 30;
  const FAILURES_SHOWN = 10;
  /** Matches listed in the "playing now" strip; a link leads to the rest. */
  const PLAYING_SHOWN = 50;

  const id = MatchFarm.pathSegment(1);
  const base = `/api/tournaments/${encodeURIComponent(id)}`;

  const RATINGS = {
    elo: ["Elo", "Elo ratings (Bradley–Terry) with their 95% intervals."],
    "weng-lin": ["μ [μ ± 3σ]", "Weng-Lin ratings over the ranks of each match: μ, and μ ± 3σ."],
    "mean-score": ["Mean score", "Each bot plays alone: its mean score, with its 95% interval."],
  };

  /** [time in ms, matches answered], oldest first. */
  const samples = [];
  let lastAnswered = -1;

  function drawHeader(tournament) {
    MatchFarm.header(MatchFarm.tournamentHeader(tournament));
    document.getElementById("name").textContent = tournament.name;
    const format = tournament.format.kind === "single"
      ? "a single match"
      : `${tournament.format.kind}, ${tournament.bots_per_match} bots a match`;
    const perPairing = ["sprt", "swiss", "ladder"].includes(tournament.format.kind)
      ? "matches chosen as results come"
      : `${tournament.games_per_pairing} game${tournament.games_per_pairing === 1 ? "" : "s"} a pairing`;
    document.getElementById("meta").replaceChildren(
      el("span", {}, tournament.game),
      el("span", {}, format),
      el("span", {}, `${tournament.bots.length} bots`),
      el("span", {}, `${tournament.maps.length} map${tournament.maps.length === 1 ? "" : "s"}`),
      el("span", {}, perPairing),
      el("span", { class: "hint" }, tournament.id));
  }

  function drawProgress(progress) {
    const box = document.querySelector('[data-testid="progress"]');
    box.dataset.done = progress.done;
    box.dataset.failed = progress.failed;
    box.dataset.total = progress.total;
    const [done, failed, running] = box.querySelectorAll(".bar span");
    const share = (count) => (progress.total > 0 ? `${(100 * count) / progress.total}%` : "0%");
    done.style.width = share(progress.done);
    failed.style.width = share(progress.failed);
    running.style.width = share(progress.running);
    const bar = box.querySelector(".bar");
    const answered = progress.done + progress.failed + progress.cancelled;
    bar.setAttribute("aria-valuemin", "0");
    bar.setAttribute("aria-valuemax", String(progress.total));
    bar.setAttribute("aria-valuenow", String(answered));

    const now = Date.now();
    samples.push([now, answered]);
    if (samples.length > RATE_SAMPLES) samples.shift();
    const parts = [
      `${fmt.number(answered)} of ${fmt.number(progress.total)} matches answered`,
      `${fmt.number(progress.done)} done`,
      `${fmt.number(progress.failed)} failed`,
    ];
    if (progress.cancelled > 0) parts.push(`${fmt.number(progress.cancelled)} cancelled`);
    const finished = answered === progress.total && !progress.open;
    if (!finished) {
      parts.push(`${fmt.number(progress.running)} playing`, `${fmt.number(progress.pending)} waiting`);
      const [firstTime, firstAnswered] = samples[0];
      const seconds = (now - firstTime) / 1000;
      const gained = answered - firstAnswered;
      if (seconds > 0 && gained > 0) {
        const perSecond = gained / seconds;
        parts.push(`${fmt.number(perSecond * 60)} matches/min`, `about ${fmt.duration((progress.total - answered) / perSecond)} left`);
      }
    } else {
      parts.push("finished");
    }
    if (progress.duplicates > 0) parts.push(`${fmt.number(progress.duplicates)} duplicate results dropped`);
    document.getElementById("progress-text").textContent = parts.join(" · ");
  }

  function drawLinks(progress, matchCount) {
    const links = [el("a", { href: paths.matches(id) }, `All ${fmt.number(matchCount)} matches`)];
    if (progress.failed > 0) {
      links.push(el("a", { href: paths.matches(id, { status: "failed" }) }, `${fmt.number(progress.failed)} failed matches`));
    }
    if (progress.running > 0) links.push(el("a", { href: paths.matches(id, { status: "running" }) }, "Playing now"));
    document.getElementById("links").replaceChildren(...links);
  }

  function numberCell(field, value, text) {
    return el("td", { class: "num", dataset: { field, value } }, text === undefined ? fmt.number(value) : text);
  }

  function drawStandings(standings, tournament) {
    const [heading, hint] = RATINGS[standings.method] || ["Rating", ""];
    document.getElementById("rating-heading").textContent = heading;
    document.getElementById("rating-hint").textContent = hint;
    const rows = standings.rows.map((row) => {
      const rating = numberCell("rating", row.rating.value, row.played === 0 ? "–" : null);
      if (row.played > 0) {
        rating.append(`${row.rating.value.toFixed(1)} `,
          el("span", { class: "interval" }, `[${row.rating.low.toFixed(1)}, ${row.rating.high.toFixed(1)}]`));
      }
      return el("tr", { dataset: { testid: "standing-row", bot: row.bot } },
        numberCell("place", row.place),
        el("td", { dataset: { field: "bot", value: row.bot } }, el("a", { href: paths.bot(id, row.bot) }, row.bot),
          ...MatchFarm.ladderMarks(tournament, row.bot)),
        numberCell("played", row.played),
        numberCell("wins", row.wins),
        numberCell("draws", row.draws),
        numberCell("losses", row.losses),
        numberCell("points", row.points),
        rating,
        numberCell("timeouts", row.timeouts),
        numberCell("crashes", row.crashes),
        numberCell("disqualified", row.disqualified));
    });
    document.querySelector('[data-testid="standings"] tbody').replaceChildren(...rows);
  }

  /** Red (0) through yellow to green (1): the row bot's share of the points. */
  function shareColour(share) {
    return `hsl(${Math.round(share * 120)}, 65%, 78%)`;
  }

  function drawPairings(pairings, order) {
    const index = new Map(pairings.bots.map((bot, i) => [bot, i]));
    const bots = order.filter((bot) => index.has(bot));
    const table = document.querySelector('[data-testid="pairings"]');
    const head = el("tr", {}, el("th", {}, "vs"),
      ...bots.map((bot) => el("th", { class: "col", title: bot, attrs: { scope: "col" } }, bot)));
    const rows = bots.map((rowBot) => {
      const cells = bots.map((colBot) => {
        if (rowBot === colBot) return el("td", { class: "cell self" }, "—");
        const result = pairings.results[index.get(rowBot)][index.get(colBot)];
        const games = result.wins + result.draws + result.losses;
        const counts = { wins: result.wins, draws: result.draws, losses: result.losses };
        if (games === 0) {
          return el("td", { class: "cell unplayed", title: `${rowBot} has not played ${colBot} yet`, dataset: counts }, "·");
        }
        const share = (result.wins + result.draws / 2) / games;
        const cell = el("td", {
          class: "cell",
          title: `${rowBot} against ${colBot}: ${result.wins} won, ${result.draws} drawn, ${result.losses} lost (${fmt.percent(share)})`,
          dataset: counts,
        }, `${result.wins}–${result.draws}–${result.losses}`);
        cell.style.backgroundColor = shareColour(share);
        return cell;
      });
      return el("tr", {}, el("th", { attrs: { scope: "row" } }, el("a", { href: paths.bot(id, rowBot) }, rowBot)), ...cells);
    });
    table.replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
  }

  function drawFailures(page) {
    const section = document.getElementById("failures-section");
    section.hidden = page.total === 0;
    const rows = page.matches.map((match) => el("tr", {},
      el("td", { class: "num" }, MatchFarm.matchLink(match)),
      el("td", {}, match.bots.join(" vs ")),
      el("td", { class: "wrap" }, MatchFarm.problems(match))));
    document.querySelector('[data-testid="failures"] tbody').replaceChildren(...rows);
    document.getElementById("failures-more").replaceChildren(page.total > page.matches.length
      ? el("a", { href: paths.matches(id, { failures: "true" }) }, `All ${fmt.number(page.total)} failures`)
      : "");
  }

  /** A row of label and value cells, the value under `data-field`. */
  function fieldRow(label, field, value) {
    return el("tr", {}, el("th", { attrs: { scope: "row" } }, label), el("td", { dataset: { field } }, value));
  }

  function drawSprt(report) {
    const status = report.status || { llr: 0, lower: 0, upper: 0, verdict: null, elo: { value: 0, low: 0, high: 0 },
      normalized_elo: { value: 0, low: 0, high: 0 } };
    const span = status.upper - status.lower;
    const where = span > 0 ? Math.min(1, Math.max(0, (status.llr - status.lower) / span)) : 0.5;
    const gauge = el("div", { class: "llr-gauge", title: `LLR ${status.llr.toFixed(3)} between ${status.lower.toFixed(3)} and ${status.upper.toFixed(3)}` },
      el("span", { class: "llr-mark" }));
    gauge.firstChild.style.left = `${(100 * where).toFixed(1)}%`;
    const interval = (estimate) => `${estimate.value.toFixed(1)} [${estimate.low.toFixed(1)}, ${estimate.high.toFixed(1)}]`;
    const counts = report.pentanomial
      ? `pentanomial ${report.pentanomial.join(" · ")} (pairs scoring 0, ½, 1, 1½, 2)`
      : `${report.trinomial.join(" · ")} (candidate worse, level, better than the baseline)`;
    const verdict = status.verdict === "accepted-h1" ? "H1 accepted: the candidate is stronger"
      : status.verdict === "accepted-h0" ? "H0 accepted: the candidate is not shown to be stronger" : "no verdict yet";
    return [
      el("table", { class: "fields" }, el("tbody", {},
        fieldRow("Candidate vs baseline", "bots", `${report.candidate} vs ${report.baseline} (${report.design.replace(/-/g, " ")})`),
        fieldRow("Hypotheses", "hypotheses",
          `H0: elo ≤ ${report.test.elo0}, H1: elo ≥ ${report.test.elo1} (${report.test.elo_model}), α ${report.test.alpha}, β ${report.test.beta}`),
        fieldRow("LLR", "llr", `${status.llr.toFixed(3)} in [${status.lower.toFixed(3)}, ${status.upper.toFixed(3)}]: ${verdict}`),
        fieldRow("Elo (95%)", "elo", interval(status.elo)),
        fieldRow("Normalized Elo (95%)", "nelo", interval(status.normalized_elo)),
        fieldRow("Pairs", "pairs", `${fmt.number(report.pairs)}: ${counts}`),
        fieldRow("Matches", "matches", `${fmt.number(report.matches)} scheduled of at most ${fmt.number(report.max_matches)}`))),
      gauge,
    ];
  }

  function drawSwiss(report) {
    const rows = report.scores.map((entry) => el("tr", { dataset: { testid: "swiss-row", bot: entry.bot } },
      el("td", {}, entry.bot), numberCell("swiss-points", entry.points, entry.points.toFixed(2)), numberCell("byes", entry.byes)));
    return [
      el("p", { dataset: { field: "round" } }, `Round ${report.round} of ${report.rounds}`),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Bot"), el("th", { class: "num" }, "Swiss points"), el("th", { class: "num" }, "Byes"))),
        el("tbody", {}, rows)),
    ];
  }

  /** A ladder's freeze and the link to its finals. */
  function drawSeason(season) {
    const frozen = season.frozen_at === null || season.frozen_at === undefined ? null
      : el("p", { dataset: { field: "frozen", value: season.frozen_at } },
        season.frozen_at * 1000 <= Date.now()
          ? `Frozen since ${fmt.date(season.frozen_at)}: no new versions enter.`
          : `Freezes at ${fmt.date(season.frozen_at)}: no new versions enter from then.`);
    const finals = season.finals
      ? el("p", {}, "Finals: ", el("a", { href: paths.tournament(season.finals), dataset: { testid: "finals-link" } }, season.finals))
      : null;
    return [frozen, finals];
  }

  function drawLadder(report, tournament) {
    const leagues = report.leagues && report.leagues.length > 0;
    const rows = report.bots.map((entry) => el("tr", { dataset: { testid: "ladder-row", bot: entry.bot } },
      el("td", {}, entry.bot + (entry.replaces ? ` (replaces ${entry.replaces})` : ""), ...MatchFarm.ladderMarks(tournament, entry.bot)),
      el("td", {}, entry.active ? "active" : "retired"),
      leagues ? el("td", { dataset: { field: "league" } }, entry.league) : null,
      numberCell("games", entry.games),
      numberCell("mu", entry.mu, entry.mu.toFixed(2)), numberCell("sigma", entry.sigma, entry.sigma.toFixed(2)),
      numberCell("scheduled", entry.scheduled)));
    return [
      el("p", { dataset: { field: "queue" } }, `${fmt.number(report.unanswered)} matches queued or playing, target ${fmt.number(report.queue_depth)}`),
      leagues ? el("p", { dataset: { field: "leagues" } }, `Leagues, lowest first: ${report.leagues.join(", ")}.`) : null,
      ...drawSeason(tournament.season || {}),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Bot"), el("th", {}, "State"), leagues ? el("th", {}, "League") : null,
        el("th", { class: "num" }, "Games"), el("th", { class: "num" }, "μ"),
        el("th", { class: "num" }, "σ"), el("th", { class: "num" }, "Unplayed"))), el("tbody", {}, rows)),
    ].filter(Boolean);
  }

  function drawSettled(report) {
    const text = report.settled
      ? `Every bot's interval is clear of its neighbours' after ${fmt.number(report.played)} matches.`
      : `Not settled after ${fmt.number(report.played)} matches: ${report.overlapping.map((pair) => pair.join(" / ")).join(", ")} overlap.`;
    return [el("p", { dataset: { field: "settled", value: String(report.settled) } }, text)];
  }

  const FORMATS = {
    sprt: ["Sequential test", drawSprt],
    swiss: ["Swiss rounds", drawSwiss],
    ladder: ["Ladder", drawLadder],
    "round-robin": ["Stopping when the ranking settles", drawSettled],
  };

  function drawFormat(tournament) {
    const section = document.getElementById("format-section");
    const status = tournament.status;
    section.hidden = !status && !tournament.conclusion;
    const conclusion = document.getElementById("conclusion");
    conclusion.hidden = !tournament.conclusion;
    conclusion.textContent = tournament.conclusion ? `Ended: ${tournament.conclusion}` : "";
    if (!status) return;
    const [title, draw] = FORMATS[status.format];
    document.getElementById("format-title").textContent = title;
    document.getElementById("format-body").replaceChildren(...draw(status, tournament));
  }

  /** The "playing now" strip: a link to each running match's page, where it plays live. */
  function drawPlaying(page) {
    const links = page.matches.map((match) =>
      el("a", { href: paths.match(match.job_id), class: "playing-match", dataset: { testid: "playing-match", jobId: match.job_id },
        title: `${match.bots.join(" vs ")}, ${match.map || "default map"}` }, `● #${match.position} ${match.bots.join(" vs ")}`));
    if (page.total > page.matches.length) {
      links.push(el("a", { href: paths.matches(id, { status: "running" }) }, `and ${fmt.number(page.total - page.matches.length)} more`));
    }
    document.getElementById("playing").replaceChildren(...links);
    document.getElementById("playing-section").hidden = page.matches.length === 0;
  }

  /** Draws the tournament; the rest only when new answers came in. Returns whether it finished. */
  async function refresh() {
    const tournament = await MatchFarm.api(base);
    drawProgress(tournament.progress);
    drawFormat(tournament);
    drawPlaying(tournament.finished
      ? { matches: [], total: 0 }
      : await MatchFarm.api(`${base}/matches?status=running&limit=${PLAYING_SHOWN}`));
    const answered = tournament.progress.done + tournament.progress.failed;
    if (answered !== lastAnswered) {
      const twoBots = tournament.bots_per_match === 2;
      const [standings, pairings, failures] = await Promise.all([
        MatchFarm.api(`${base}/standings`),
        twoBots ? MatchFarm.api(`${base}/pairings`) : null,
        MatchFarm.api(`${base}/matches?failures=true&limit=${FAILURES_SHOWN}`),
      ]);
      drawStandings(standings, tournament);
      document.getElementById("pairings-section").hidden = !twoBots;
      if (pairings) drawPairings(pairings, standings.rows.map((row) => row.bot));
      drawFailures(failures);
      drawLinks(tournament.progress, tournament.progress.total);
      lastAnswered = answered;
    }
    return tournament.finished;
  }

  async function poll() {
    try {
      const finished = await refresh();
      MatchFarm.showError(null);
      if (finished) return;
    } catch (error) {
      MatchFarm.showError(error);
    }
    setTimeout(poll, POLL_MS);
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Tournaments", href: "/" }, { text: id }]);
    const tournament = await MatchFarm.api(base);
    drawHeader(tournament);
    if (!(await refresh())) setTimeout(poll, POLL_MS);
  });
})();
