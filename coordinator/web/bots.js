// Submitted bots: sign in with a token, submit a version (a tar archive), and every
// bot with its newest version's state, refreshed every 2 s while one is building or
// validating.
"use strict";

(function () {
  const { el, fmt } = MatchFarm;
  const PAGE = 500;

  function row(bot) {
    const newest = bot.versions[0];
    return el("tr", { dataset: { testid: "bot-row", bot: bot.name } },
      el("td", {}, el("a", { href: MatchFarm.paths.submitted(bot.name) }, bot.name)),
      el("td", {}, bot.owner),
      el("td", {}, bot.game),
      el("td", {}, newest ? [`v${newest.version} `, MatchFarm.versionState(newest.state)] : "—"),
      el("td", {}, newest ? fmt.date(newest.submitted_at) : "—"));
  }

  async function drawBots() {
    const { bots, total } = await MatchFarm.api(`/api/bots?limit=${PAGE}`);
    document.querySelector('[data-testid="bots"] tbody').replaceChildren(...bots.map(row));
    document.getElementById("bots-summary").textContent = bots.length === 0
      ? "No bot has been submitted yet."
      : total > bots.length ? `The first ${fmt.number(bots.length)} of ${fmt.number(total)} bots, by name.` : "";
    return bots.some((bot) => bot.versions.some((version) => version.state === "building" || version.state === "validating"));
  }

  async function showCaller() {
    const me = await MatchFarm.signedIn();
    document.getElementById("sign-in").hidden = me !== null;
    document.getElementById("signed-in").hidden = me === null;
    document.getElementById("submit-section").hidden = me === null;
    document.getElementById("who").textContent = me ? me.name : "";
  }

  async function signIn(event) {
    event.preventDefault();
    const token = new FormData(event.target).get("token").trim();
    try {
      await MatchFarm.signIn(token);
      MatchFarm.showError(null);
      event.target.reset();
    } catch (error) {
      MatchFarm.showError(error);
    }
    await showCaller();
  }

  async function submit(event) {
    event.preventDefault();
    const form = new FormData(event.target);
    const query = new URLSearchParams({ name: form.get("name").trim(), game: form.get("game") });
    const ladder = form.get("ladder").trim();
    if (ladder) query.set("ladder", ladder);
    const shown = document.getElementById("submitted");
    try {
      const answer = await MatchFarm.send("POST", `/api/bots?${query}`, form.get("archive"), "application/x-tar");
      MatchFarm.showError(null);
      shown.replaceChildren(`${answer.bot} v${answer.version} submitted (${answer.layout} layout): `,
        el("a", { href: MatchFarm.paths.submitted(answer.bot) }, "follow its build and validation"));
      shown.hidden = false;
      await drawBots();
    } catch (error) {
      shown.hidden = true;
      MatchFarm.showError(error);
    }
  }

  MatchFarm.run(async () => {
    MatchFarm.header([{ text: "Tournaments", href: "/" }, { text: "Bots" }]);
    document.getElementById("sign-in").addEventListener("submit", signIn);
    document.getElementById("sign-out").addEventListener("click", async () => {
      MatchFarm.signOut();
      await showCaller();
    });
    document.getElementById("submit").addEventListener("submit", submit);
    await showCaller();
    if (await drawBots()) MatchFarm.refreshWhile(drawBots);
  });
})();
