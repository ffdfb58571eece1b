// Two submitted bots head to head: their record, and per tournament their newest
// matches against each other (GET /api/bots/{a}/versus/{b}).
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
  const [a, b] = [MatchFarm.pathSegment(1), MatchFarm.pathSegment(3)];

  function recordText(record) {
    return `${fmt.number(record.matches)} matches: ${a} won ${fmt.number(record.a_wins)}, ${b} won ${fmt.number(record.b_wins)}, ` +
      `${fmt.number(record.draws)} drawn`;
  }

  function drawTournament(tournament) {
    const rows = tournament.matches.map((match) => {
      const winner = match.a_rank < match.b_rank ? a : match.b_rank < match.a_rank ? b : "draw";
      return el("tr", { dataset: { testid: "versus-row", winner } },
        el("td", { class: "num" }, el("a", { href: paths.match(match.job_id), title: match.job_id }, `#${match.position}`)),
        el("td", {}, match.a), el("td", { class: "num" }, fmt.ordinal(match.a_rank)),
        el("td", {}, match.b), el("td", { class: "num" }, fmt.ordinal(match.b_rank)),
        el("td", { class: winner === "draw" ? "" : "winner" }, winner));
    });
    return el("section", { dataset: { testid: "versus-tournament", id: tournament.id } },
      el("h2", {}, el("a", { href: paths.tournament(tournament.id) }, tournament.name)),
      el("p", { class: "meta" }, recordText(tournament.record)),
      el("div", { class: "scroll" }, el("table", {},
        el("thead", {}, el("tr", {}, el("th", { class: "num" }, "Match"), el("th", {}, a), el("th", { class: "num" }, "Rank"),
          el("th", {}, b), el("th", { class: "num" }, "Rank"), el("th", {}, "Won"))),
        el("tbody", {}, rows))));
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Bots", href: "/bots" }, { text: a, href: paths.submitted(a) }, { text: `against ${b}` }]);
    document.getElementById("name").replaceChildren(el("a", { href: paths.submitted(a) }, a), " against ",
      el("a", { href: paths.submitted(b) }, b));
    const versus = await MatchFarm.api(`/api/bots/${encodeURIComponent(a)}/versus/${encodeURIComponent(b)}`);
    const record = document.getElementById("record");
    record.textContent = versus.record.matches === 0 ? "They have not met." : recordText(versus.record);
    record.dataset.matches = String(versus.record.matches);
    document.getElementById("tournaments").replaceChildren(...versus.tournaments.map(drawTournament));
  });
})();
