// One submitted bot: its versions, each with its build (and log), its validation and
// its ladder, refreshed every 2 s while one is building or validating.
"use strict";

(function () {
  const { el, fmt, paths } = MatchFarm;
  const name = MatchFarm.pathSegment(1);

  /** `text` with every API log path in it made a link. */
  function withLogLinks(text) {
    const parts = text.split(/(\/api\/matches\/[^/\s]+\/logs\/\d+)/);
    return parts.map((part, index) => (index % 2 === 1 ? el("a", { href: part, attrs: { target: "_blank", rel: "noopener" } }, part) : part));
  }

  async function showLog(version) {
    const text = await MatchFarm.apiText(version.build_log);
    document.getElementById("log-heading").textContent = `Build log of v${version.version}`;
    document.querySelector('[data-testid="build-log-text"]').textContent = text || "(empty)";
    document.getElementById("log-section").hidden = false;
  }

  function row(version) {
    const validation = version.validation
      ? [el("a", { href: paths.tournament(version.validation) }, "tournament"), " · ",
        el("a", { href: paths.matches(version.validation, { bot: version.entry }) }, "matches")]
      : "—";
    const ladder = version.ladder
      ? el("a", { href: paths.bot(version.ladder, version.entry) }, version.state === "validated" ? "playing" : version.ladder)
      : "—";
    const log = version.build_log
      ? el("button", { type: "button", dataset: { testid: `build-log-${version.version}` } }, "log")
      : "—";
    if (version.build_log) {
      log.addEventListener("click", () => showLog(version).catch(MatchFarm.showError));
    }
    return el("tr", { dataset: { testid: "version-row", version: String(version.version), state: version.state } },
      el("td", {}, version.entry),
      el("td", {}, MatchFarm.versionState(version.state)),
      el("td", {}, version.layout),
      el("td", {}, fmt.date(version.submitted_at)),
      el("td", {}, validation),
      el("td", {}, ladder),
      el("td", {}, log),
      el("td", { class: "reason" }, version.reason ? withLogLinks(version.reason) : "—"));
  }

  async function draw() {
    const bot = await MatchFarm.api(`/api/bots/${encodeURIComponent(name)}`);
    MatchFarm.header([{ text: "Tournaments", href: "/" }, { text: "Bots", href: "/bots" }, { text: bot.name }]);
    document.getElementById("name").textContent = bot.name;
    document.getElementById("meta").replaceChildren(el("span", {}, bot.game), el("span", {}, `owned by ${bot.owner}`),
      el("span", {}, `${bot.versions.length} version${bot.versions.length === 1 ? "" : "s"}`));
    document.querySelector('[data-testid="versions"] tbody').replaceChildren(...bot.versions.map(row));
    return bot.versions.some((version) => version.state === "building" || version.state === "validating");
  }

  MatchFarm.run(async () => {
    if (await draw()) MatchFarm.refreshWhile(draw);
  });
})();
