// Shared by every page: window.MatchFarm.
//
//   MatchFarm.run(main)           runs the page's async main(); an error it throws is shown
//                                 (showError), and the page is marked ready either way
//   MatchFarm.api(path)           GET JSON from the API; throws an Error with the API's message
//   MatchFarm.apiText(path)       the same, for text answers (replays, logs)
//   MatchFarm.el(tag, props, ...children)
//                                 builds an element; children are nodes or strings (set as
//                                 text, never parsed as HTML); props: class, text, href,
//                                 title, dataset {...}, attrs {...}, hidden
//   MatchFarm.header(crumbs)      the navigation bar: [{text, href}], the last one is the
//                                 current page (href optional)
//   MatchFarm.ready()             marks <body> data-ready="true" (the browser tests wait for it)
//   MatchFarm.showError(error)    shows an error in [data-testid=error] (null: hides it)
//   MatchFarm.fmt                 number, rating, percent, duration, date, ordinal, status
//   MatchFarm.paths               tournament(id), bot(id, bot), matches(id, query), match(job),
//                                 submitted(bot) (a submitted bot's versions), versus(a, b)
//   MatchFarm.versionState(state) a submitted version's state as a badge
//   MatchFarm.signIn(token), signOut(), signedIn()
//                                 a user's token, checked by GET /api/me, kept in this tab's
//                                 session storage; signedIn() is /api/me's answer or null
//   MatchFarm.send(method, path, body, contentType)
//                                 a write as the signed-in user; its JSON answer or an ApiError
//   MatchFarm.refreshWhile(draw)  calls the async draw() every 2 s while it answers true (what
//                                 it shows is still changing); an error it throws is shown
//   MatchFarm.pathSegment(index)  the decoded index-th segment of location.pathname
//   MatchFarm.pager({total, offset, limit, href})
//                                 "previous / next" links for a paged list
//   MatchFarm.tournamentHeader(t) crumbs for pages under a tournament
//   MatchFarm.matchLink(match)    a link "#position" to a match's page (a row of a match list)
//   MatchFarm.problems(match, bot)
//                                 what went wrong in a listed match, as text: its failure
//                                 reason, or the seats (only `bot`'s, if given) that did not
//                                 end "ok"; "" when nothing did
//   MatchFarm.svg(name, attrs)    an SVG element with these attributes
//   MatchFarm.crashDetails(crash) a seat's crash report's stderr tail and unanswered request,
//                                 folded (nothing without one)
//   MatchFarm.ladderMarks(tournament, bot)
//                                 a ladder bot's league and "provisional" badges (none for
//                                 other formats), for every page that names it
"use strict";

(function () {
  const MatchFarm = {};

  /** An error answer of the API, with its status and code. */
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.name = "ApiError";
      this.status = status;
      this.code = code;
    }
  }
  MatchFarm.ApiError = ApiError;

  /** The response to a GET of `path`; a failed request throws an ApiError with the API's message. */
  async function request(path) {
    let response;
    try {
      response = await fetch(path, { headers: { Accept: "application/json" } });
    } catch (error) {
      throw new Error(`the coordinator does not answer (${error.message})`);
    }
    if (!response.ok) {
      let code = "http";
      let message = `${response.status} ${response.statusText}`;
      try {
        const body = await response.json();
        if (body && body.error) {
          code = body.error.code;
          message = body.error.message;
        }
      } catch (_) {
        // Not a JSON error: the status line says enough.
      }
      throw new ApiError(response.status, code, message);
    }
    return response;
  }

  MatchFarm.apiResponse = request;

  MatchFarm.api = async function (path) {
    return (await request(path)).json();
  };

  MatchFarm.apiText = async function (path) {
    return (await request(path)).text();
  };

  MatchFarm.el = function (tag, props, ...children) {
    const node = document.createElement(tag);
    const options = props || {};
    for (const [key, value] of Object.entries(options)) {
      if (value === undefined || value === null) continue;
      switch (key) {
        case "class":
          node.className = value;
          break;
        case "text":
          node.textContent = String(value);
          break;
        case "dataset":
          for (const [name, data] of Object.entries(value)) node.dataset[name] = String(data);
          break;
        case "attrs":
          for (const [name, attribute] of Object.entries(value)) node.setAttribute(name, String(attribute));
          break;
        case "hidden":
          node.hidden = Boolean(value);
          break;
        default:
          node[key] = value;
      }
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  };
  const el = MatchFarm.el;

  MatchFarm.header = function (crumbs) {
    const nav = el("nav", { class: "crumbs", attrs: { "aria-label": "Breadcrumbs" } });
    crumbs.forEach((crumb, index) => {
      if (index > 0) nav.append(el("span", { class: "sep", attrs: { "aria-hidden": "true" } }, "/"));
      const last = index === crumbs.length - 1;
      nav.append(
        crumb.href && !last
          ? el("a", { href: crumb.href }, crumb.text)
          : el("span", { class: last ? "current" : "", attrs: last ? { "aria-current": "page" } : {} }, crumb.text),
      );
    });
    const bar = el("header", { class: "topbar" }, el("a", { class: "brand", href: "/" }, "matchfarm"), nav);
    const existing = document.querySelector("body > header.topbar");
    if (existing) existing.replaceWith(bar);
    else document.body.prepend(bar);
    if (crumbs.length > 0) document.title = `${crumbs[crumbs.length - 1].text} · matchfarm`;
  };

  MatchFarm.tournamentHeader = function (tournament, ...more) {
    return [{ text: "Tournaments", href: "/" }, { text: tournament.name, href: MatchFarm.paths.tournament(tournament.id) }, ...more];
  };

  MatchFarm.ready = function () {
    document.body.dataset.ready = "true";
  };

  function errorBox() {
    let box = document.querySelector('[data-testid="error"]');
    if (!box) {
      box = el("p", { class: "error", dataset: { testid: "error" }, attrs: { role: "alert" }, hidden: true });
      (document.querySelector("main") || document.body).prepend(box);
    }
    return box;
  }

  MatchFarm.showError = function (error) {
    const box = errorBox();
    if (error === null || error === undefined) {
      box.textContent = "";
      box.hidden = true;
      return;
    }
    box.textContent = error instanceof Error ? error.message : String(error);
    box.hidden = false;
  };

  MatchFarm.run = function (main) {
    const start = async () => {
      try {
        await main();
      } catch (error) {
        MatchFarm.showError(error);
      }
      MatchFarm.ready();
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  };

  const REFRESH_MS = 2000;

  /** Calls `draw` (async; it answers whether what it shows is still changing) every 2 s
   * for as long as it answers true. An error it throws is shown, and it is called again. */
  MatchFarm.refreshWhile = function (draw) {
    const again = async () => {
      try {
        if (!(await draw())) return;
      } catch (error) {
        MatchFarm.showError(error);
      }
      setTimeout(again, REFRESH_MS);
    };
    setTimeout(again, REFRESH_MS);
  };

  MatchFarm.pathSegment = function (index) {
    const segments = location.pathname.split("/").filter((segment) => segment !== "");
    const segment = segments[index];
    return segment === undefined ? undefined : decodeURIComponent(segment);
  };

  const enc = encodeURIComponent;
  MatchFarm.paths = {
    tournament: (id) => `/tournaments/${enc(id)}`,
    bot: (id, bot) => `/tournaments/${enc(id)}/bots/${enc(bot)}`,
    matches: (id, query) => {
      const search = new URLSearchParams();
      for (const [key, value] of Object.entries(query || {})) {
        if (value !== undefined && value !== null && value !== "" && value !== false) search.set(key, value);
      }
      const text = search.toString();
      return `/tournaments/${enc(id)}/matches${text ? `?${text}` : ""}`;
    },
    match: (job) => `/matches/${enc(job)}`,
    submitted: (bot) => `/bots/${enc(bot)}`,
    versus: (a, b) => `/bots/${enc(a)}/versus/${enc(b)}`,
  };

  /** A submitted version's state as a badge: building, validating, validated, ... */
  MatchFarm.versionState = function (state) {
    const kind = { validated: "done", rejected: "failed", build_failed: "failed" }[state] || "running";
    return el("span", { class: `state state-${kind}`, dataset: { state } }, state.replace(/_/g, " "));
  };

  // The signed-in user's token lives in this tab's session storage only.
  const TOKEN_KEY = "matchfarm.token";

  /** Checks `token` against the API (GET /api/me) and keeps it for this tab. */
  MatchFarm.signIn = async function (token) {
    const response = await fetch("/api/me", { headers: { Accept: "application/json", Authorization: `Bearer ${token}` } });
    if (!response.ok) throw new Error(response.status === 403 ? "that token is not valid (or was revoked)" : `${response.status} ${response.statusText}`);
    sessionStorage.setItem(TOKEN_KEY, token);
    return response.json();
  };

  MatchFarm.signOut = function () {
    sessionStorage.removeItem(TOKEN_KEY);
  };

  /** Who is signed in (GET /api/me), or null; a token no longer valid is forgotten. */
  MatchFarm.signedIn = async function () {
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) return null;
    try {
      return await MatchFarm.signIn(token);
    } catch (_) {
      MatchFarm.signOut();
      return null;
    }
  };

  /** Sends `body` (a string, Blob or File) of `contentType` with `method` to `path` as
   * the signed-in user; the JSON answer, or an ApiError with the API's message. */
  MatchFarm.send = async function (method, path, body, contentType) {
    const headers = { Accept: "application/json", "Content-Type": contentType };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(path, { method, headers, body });
    } catch (error) {
      throw new Error(`the coordinator does not answer (${error.message})`);
    }
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      const error = answer && answer.error;
      throw new ApiError(response.status, error ? error.code : "http", error ? error.message : `${response.status} ${response.statusText}`);
    }
    return answer;
  };

  const numbers = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });
  MatchFarm.fmt = {
    /** A count or a score, grouped by thousands, at most one decimal. */
    number: (value) => numbers.format(value),
    /** A rating: its value and its interval, or a dash before any match. */
    rating: (rating, played) =>
      played === 0 ? "–" : `${rating.value.toFixed(1)} [${rating.low.toFixed(1)}, ${rating.high.toFixed(1)}]`,
    /** A share in 0..1 as a whole percentage. */
    percent: (share) => `${Math.round(share * 100)}%`,
    /** Seconds as "1 h 05 min", "3 min 20 s" or "12 s". */
    duration: (seconds) => {
      const total = Math.max(0, Math.round(seconds));
      const hours = Math.floor(total / 3600);
      const minutes = Math.floor((total % 3600) / 60);
      const rest = total % 60;
      if (hours > 0) return `${hours} h ${String(minutes).padStart(2, "0")} min`;
      if (minutes > 0) return `${minutes} min ${String(rest).padStart(2, "0")} s`;
      return `${rest} s`;
    },
    /** Unix seconds as a local date and time. */
    date: (unix) => new Date(unix * 1000).toLocaleString(),
    /** 1 → "1st". */
    ordinal: (n) => {
      const tens = n % 100;
      const suffix = tens >= 11 && tens <= 13 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th";
      return `${n}${suffix}`;
    },
    /** A seat status as shown: "ok", "timed out", ... */
    status: (status) => status.replace(/_/g, " "),
  };

  MatchFarm.pager = function ({ total, offset, limit, href }) {
    const nav = el("nav", { class: "pager", attrs: { "aria-label": "Pages" } });
    const first = total === 0 ? 0 : offset + 1;
    const last = Math.min(total, offset + limit);
    const link = (text, target, enabled) =>
      enabled ? el("a", { href: href(target) }, text) : el("span", { class: "disabled" }, text);
    nav.append(
      link("← previous", Math.max(0, offset - limit), offset > 0),
      el("span", { class: "range" }, `${MatchFarm.fmt.number(first)}–${MatchFarm.fmt.number(last)} of ${MatchFarm.fmt.number(total)}`),
      link("next →", offset + limit, last < total),
    );
    return nav;
  };

  MatchFarm.matchLink = function (match) {
    return el("a", { href: MatchFarm.paths.match(match.job_id), title: match.job_id }, `#${match.position}`);
  };

  MatchFarm.problems = function (match, bot) {
    if (match.state === "failed") return `failed: ${match.reason || "no reason recorded"}`;
    const seats = (match.outcomes || []).filter((seat) => seat.status !== "ok" && (bot === undefined || seat.bot === bot));
    return seats
      .map((seat) => {
        const who = seat.bot === null ? `seat ${seat.seat}` : seat.bot;
        const timeouts = seat.timeouts > 0 ? ` (${seat.timeouts} timeout${seat.timeouts === 1 ? "" : "s"})` : "";
        const why = seat.crash ? `: ${seat.crash.reason}` : "";
        return `${who} ${MatchFarm.fmt.status(seat.status)}${timeouts}${why}`;
      })
      .join("; ");
  };

  MatchFarm.crashDetails = function (crash) {
    if (!crash || ((crash.stderr_tail || []).length === 0 && !crash.unanswered)) return "";
    const parts = [];
    if ((crash.stderr_tail || []).length > 0) {
      parts.push(el("p", { class: "hint" }, `The last ${crash.stderr_tail.length} lines of its stderr:`),
        el("pre", { class: "log", dataset: { testid: "stderr-tail" } }, crash.stderr_tail.join("\n")));
    }
    if (crash.unanswered) {
      parts.push(el("p", { class: "hint" }, "The request it did not answer (its start):"),
        el("pre", { class: "log", dataset: { testid: "unanswered" } }, crash.unanswered));
    }
    return el("details", { class: "crash", dataset: { testid: "crash-report" } }, el("summary", {}, "why"), ...parts);
  };

  MatchFarm.svg = function (name, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", name);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    return node;
  };

  MatchFarm.ladderMarks = function (tournament, bot) {
    const status = tournament.status;
    const entry = status && status.format === "ladder" ? status.bots.find((candidate) => candidate.bot === bot) : null;
    if (!entry) return [];
    const marks = [];
    if (entry.league) marks.push(el("span", { class: "badge league", dataset: { testid: "league", value: entry.league } }, entry.league));
    if (entry.provisional) {
      marks.push(el("span", { class: "badge provisional", dataset: { testid: "provisional" },
        title: `fewer than ${status.provisional_games} games: the rating says little yet` }, "provisional"));
    }
    return marks;
  };

  window.MatchFarm = MatchFarm;
})();
