// A tournament's matches, filtered by ?bot=, ?status=, ?map= and ?failures=true, a
// page (?offset=) at a time. The filters are the page's URL: changing one loads it.
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
  const PAGE = 50;
  const FILTERS = ["bot", "status", "map", "failures"];

  const id = MatchFarm.pathSegment(1);
  const base = `/api/tournaments/${encodeURIComponent(id)}`;
  const query = new URLSearchParams(location.search);
  const offset = Math.max(0, Number.parseInt(query.get("offset") || "0", 10) || 0);

  /** The filters in the URL, empty ones left out. */
  function chosen() {
    const filters = {};
    for (const name of FILTERS) {
      const value = query.get(name);
      if (value) filters[name] = value;
    }
    return filters;
  }

  function fillSelect(select, values) {
    select.append(...values.map((value) => el("option", { value }, value)));
  }

  function setUpFilters(tournament) {
    const form = document.getElementById("filters");
    fillSelect(form.elements.bot, tournament.bots);
    fillSelect(form.elements.map, tournament.maps);
    document.getElementById("map-filter").hidden = tournament.maps.length < 2 && !query.get("map");
    const filters = chosen();
    for (const name of ["bot", "status", "map"]) {
      const select = form.elements[name];
      const value = filters[name] || "";
      // A value not offered (a hand-written URL) is still shown; the API judges it.
      if (![...select.options].some((option) => option.value === value)) select.append(el("option", { value }, value));
      select.value = value;
    }
    form.elements.failures.checked = filters.failures === "true";
    form.addEventListener("change", () => {
      const next = {};
      for (const name of ["bot", "status", "map"]) next[name] = form.elements[name].value;
      next.failures = form.elements.failures.checked ? "true" : "";
      location.assign(paths.matches(id, next));
    });
    form.addEventListener("submit", (event) => event.preventDefault());
  }

  function seats(match) {
    if (!match.outcomes) {
      return el("span", { class: "seats" }, match.bots.map((bot) => el("a", { href: paths.bot(id, bot) }, bot)));
    }
    return el("span", { class: "seats" }, match.outcomes.map((seat) => {
      const name = seat.bot === null ? `seat ${seat.seat}` : el("a", { href: paths.bot(id, seat.bot) }, seat.bot);
      const status = seat.status === "ok" ? "" : el("span", { class: "bad" }, ` ${fmt.status(seat.status)}`);
      return el("span", { class: seat.rank === 1 ? "winner" : "" },
        name, ` ${fmt.number(seat.score)} (${fmt.ordinal(seat.rank)})`, status);
    }));
  }

  function row(match) {
    return el("tr", { dataset: { testid: "match-row", jobId: match.job_id, state: match.state } },
      el("td", { class: "num" }, MatchFarm.matchLink(match)),
      el("td", {}, seats(match)),
      el("td", {}, match.map),
      el("td", { class: "num", title: `seed ${match.seed}` }, match.repetition + 1),
      el("td", {}, el("span", { class: `state state-${match.state}` }, match.state)),
      el("td", { class: "wrap" }, MatchFarm.problems(match),
        match.attempts > 1 ? el("span", { class: "hint" }, ` (attempt ${match.attempts})`) : null));
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Tournaments", href: "/" }, { text: id, href: paths.tournament(id) }, { text: "Matches" }]);
    const tournament = await MatchFarm.api(base);
    MatchFarm.header(MatchFarm.tournamentHeader(tournament, { text: "Matches" }));
    document.getElementById("name").textContent = `Matches of ${tournament.name}`;
    setUpFilters(tournament);
    const filters = chosen();
    const search = new URLSearchParams({ ...filters, limit: PAGE, offset });
    const page = await MatchFarm.api(`${base}/matches?${search}`);
    const described = Object.entries(filters).map(([name, value]) => (name === "failures" ? "failures only" : `${name} ${value}`));
    const meta = [el("span", {}, `${fmt.number(page.total)} match${page.total === 1 ? "" : "es"}`)];
    if (described.length > 0) meta.push(el("span", {}, described.join(", ")));
    document.getElementById("meta").replaceChildren(...meta);
    const body = document.querySelector('[data-testid="matches"] tbody');
    body.replaceChildren(...(page.matches.length > 0
      ? page.matches.map(row)
      : [el("tr", {}, el("td", { class: "empty", attrs: { colspan: 6 } }, "No matches."))]));
    const href = (next) => paths.matches(id, { ...filters, offset: next > 0 ? next : "" });
    for (const holder of ["pager-top", "pager-bottom"]) {
      document.getElementById(holder).replaceChildren(MatchFarm.pager({ total: page.total, offset, limit: PAGE, href }));
    }
  });
})();
