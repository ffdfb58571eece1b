// The tournament list: the tournaments with their progress, newest first, a page
// (?after=, as /api/tournaments pages) at a time, refreshed every 2 s while any on it is
// unfinished.
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
  const after = new URLSearchParams(location.search).get("after");
  const listed = after ? `/api/tournaments?${new URLSearchParams({ after })}` : "/api/tournaments";

  function miniBar(progress) {
    const share = (count) => (progress.total > 0 ? `${(100 * count) / progress.total}%` : "0%");
    const bar = el("span", { class: "mini-bar", attrs: { "aria-hidden": "true" } },
      el("span", { class: "done" }), el("span", { class: "failed" }));
    bar.children[0].style.width = share(progress.done);
    bar.children[1].style.width = share(progress.failed);
    return bar;
  }

  function row(tournament) {
    const progress = tournament.progress;
    const answered = progress.done + progress.failed;
    const finished = answered === progress.total;
    const state = finished
      ? el("span", { class: "state state-done" }, "finished")
      : el("span", { class: "state state-running" }, fmt.percent(progress.total ? answered / progress.total : 0));
    return el("tr", { dataset: { testid: "tournament-row", id: tournament.id } },
      el("td", {}, el("a", { href: paths.tournament(tournament.id) }, tournament.name)),
      el("td", {}, tournament.game),
      el("td", {}, miniBar(progress), state),
      el("td", { class: "num" }, `${fmt.number(answered)} / ${fmt.number(progress.total)}`,
        progress.failed > 0 ? el("span", { class: "bad" }, ` (${fmt.number(progress.failed)} failed)`) : null),
      el("td", {}, fmt.date(tournament.created_at)));
  }

  /** Links to the newest page and the next older one, where there are such pages. */
  function pager(next) {
    const link = (text, href, testid) => href
      ? el("a", { href, dataset: { testid } }, text)
      : el("span", { class: "disabled" }, text);
    const nav = document.getElementById("tournaments-pager");
    nav.replaceChildren(
      link("← newest", after ? "/" : null, "tournaments-newest"),
      link("older →", next ? `/?${new URLSearchParams({ after: next })}` : null, "tournaments-older"));
    nav.hidden = !after && !next;
  }

  function draw(page) {
    const tournaments = page.tournaments;
    const body = document.querySelector('[data-testid="tournaments"] tbody');
    body.replaceChildren(...tournaments.map(row));
    const running = tournaments.filter((t) => t.progress.done + t.progress.failed < t.progress.total).length;
    const paged = after || page.next;
    document.getElementById("summary").textContent = tournaments.length === 0 && !after
      ? "No tournaments yet: play one with `farm-coordinator run FILE`, or submit one to a `farm-coordinator serve`."
      : `${tournaments.length} tournament${tournaments.length === 1 ? "" : "s"}${paged ? " on this page" : ""}, ${running} playing.`;
    pager(page.next);
    return running > 0;
  }

  /** One worker's record (GET /api/workers). */
  function workerRow(worker) {
    const failures = Object.entries(worker.bot_failures).map(([status, count]) => `${fmt.status(status)} ${fmt.number(count)}`);
    const state = worker.quarantined
      ? el("span", { class: "bad" }, `quarantined: ${worker.quarantined}`)
      : el("span", { class: "state state-done" }, "trusted");
    return el("tr", { dataset: { testid: "worker-row", worker: worker.worker_id } },
      el("td", {}, worker.worker_id),
      el("td", { class: "num" }, fmt.number(worker.matches)),
      el("td", {}, failures.length > 0 ? failures.join(", ") : "–"),
      el("td", { class: "num" }, fmt.number(worker.faults)),
      el("td", { class: "num" }, fmt.number(worker.audits)),
      el("td", { class: worker.mismatches > 0 ? "num bad" : "num" }, fmt.number(worker.mismatches)),
      el("td", {}, state));
  }

  /** The workers' records, where the farm has workers (not `run`'s in-process ones). */
  async function drawWorkers() {
    const { workers } = await MatchFarm.api("/api/workers");
    document.querySelector('[data-testid="workers"] tbody').replaceChildren(...workers.map(workerRow));
    document.getElementById("workers-section").hidden = workers.length === 0;
  }

  async function refresh() {
    const page = await MatchFarm.api(listed);
    MatchFarm.showError(null);
    return draw(page);
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Tournaments" }]);
    const page = await MatchFarm.api(listed);
    await drawWorkers();
    if (draw(page)) MatchFarm.refreshWhile(refresh);
  });
})();
