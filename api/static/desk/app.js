// The desk's entry: the token field, the caller's role (GET /me), and the router that draws the view the
// location names. Every view has its own link (api/desk.py serves the same page for each):
//   /desk                           the tables, with filters, followed live
//   /desk/tables/<id>               a table: its state at any version (?version=N, ?at=<RFC 3339>), its log
//   /desk/tables/<id>/rounds        its finished rounds
//   /desk/tables/<id>/rounds/<n>    a round's audit
//   /desk/tables/<id>/verify        the service's verification and the browser's own
//   /desk/seat                      a player's rounds at every table (a player's own, signed in with his token)
//   /desk/seat/tables/<id>          a player's seat: his table as he may see it, and his own commands

import { api, root, setToken, token } from "./http.js";
import { clear, h, labelTables, link } from "./render.js";
import * as roundPage from "./page-round.js";
import * as roundsPage from "./page-rounds.js";
import * as seatPage from "./page-seat.js";
import * as tablePage from "./page-table.js";
import * as tablesPage from "./page-tables.js";
import * as verifyPage from "./page-verify.js";

const ROUTES = [
  [/^\/?$/, tablesPage.mount],
  [/^\/tables\/([^/]+)\/?$/, tablePage.mount],
  [/^\/tables\/([^/]+)\/rounds\/?$/, roundsPage.mount],
  [/^\/tables\/([^/]+)\/rounds\/(\d+)\/?$/, roundPage.mount],
  [/^\/tables\/([^/]+)\/verify\/?$/, verifyPage.mount],
  [/^\/seat\/?$/, seatPage.mount],
  [/^\/seat\/tables\/([^/]+)\/?$/, seatPage.mountTable],
];
const ROLE_WORDS = {
  operator: "operator: may issue commands",
  auditor: "auditor: reads only",
  supervisor: "supervisor: reads, requests and approves corrections",
  open: "open: this service has no tokens",
};

let games = null;
let current = null;

// What every view may use: the caller's role and the games (GET /games: x-games of /openapi.json alone).
const desk = {
  role: null,
  name: null, // a player's name (GET /me), and the tables his token is valid on (null: every table)
  tables: null,
  games() {
    games ??= api("/games").catch(() => ({}));
    return games;
  },
  mayCommand() {
    return desk.role === "operator" || desk.role === "open";
  },
};

function route() {
  current?.unmount?.();
  current = null;
  document.querySelectorAll("#skips [data-view]").forEach((skip) => skip.remove());
  const view = document.getElementById("view");
  const prefix = `${root()}/desk`;
  let path = location.pathname.startsWith(prefix) ? location.pathname.slice(prefix.length) : location.pathname;
  if (desk.role === "player" && /^\/?$/.test(path)) path = "/seat"; // a player's token lists no tables: his seat
  for (const [pattern, mount] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    let params;
    try {
      params = match.slice(1).map(decodeURIComponent);
    } catch {
      break;
    }
    current = mount(view, { params, query: new URLSearchParams(location.search), desk });
    return;
  }
  document.title = "No such view · Zametano desk";
  clear(view, h("h1", {}, "No such view"), h("p", {}, "The desk has no page at this address. ", link("", "See the tables.")));
}

async function whoAmI() {
  const out = document.getElementById("role");
  try {
    const me = await api("/me");
    desk.role = me.role;
    desk.name = me.role === "player" ? me.player ?? me.name : null;
    desk.tables = me.role === "player" ? me.tables ?? null : null;
    out.textContent = desk.role === "player" ? `player ${desk.name}: plays his own seat` : ROLE_WORDS[desk.role] || desk.role;
  } catch (error) {
    desk.role = null;
    desk.name = null;
    desk.tables = null;
    out.textContent = error.status === 401 ? (token() ? "this token is not known" : "no token: enter one") : error.message;
  }
  out.dataset.role = desk.role || "";
}

function tokenField() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  input.value = token();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    await whoAmI();
    route();
  });
  document.getElementById("token-forget").addEventListener("click", async () => {
    input.value = "";
    setToken("");
    await whoAmI();
    route();
  });
}

// A skip link moves the keyboard focus to its target (focusable for that alone) and leaves the address as it is.
function followSkipLinks() {
  document.addEventListener("click", (event) => {
    const skip = event.target.closest("a.skip");
    const target = skip && document.getElementById(skip.hash.slice(1));
    if (!target) return;
    event.preventDefault();
    if (!target.hasAttribute("tabindex")) target.tabIndex = -1;
    target.focus();
  });
}

// Links within the desk change the view without loading the page again.
function followLinks() {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
      return;
    }
    const anchor = event.target.closest("a[href]");
    if (!anchor || anchor.target || anchor.hasAttribute("download")) return;
    const url = new URL(anchor.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(`${root()}/desk`)) return;
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    event.preventDefault();
    history.pushState(null, "", url.pathname + url.search);
    route();
    document.getElementById("view").focus({ preventScroll: true });
  });
  window.addEventListener("popstate", route);
}

tokenField();
followSkipLinks();
followLinks();
await whoAmI();
labelTables(document.getElementById("view"));
route();
