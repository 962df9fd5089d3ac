// The seat view, for a player signed in with his own token (GET /me names him):
//   /desk/seat                 his rounds at every table, newest first (GET /players/<him>/rounds, paged), and
//                              the tables his token is valid on; an operator or auditor gives a player's name
//                              (?player=<name>) to read that player's rounds
//   /desk/seat/tables/<id>     his table: its state as his token may see it (GET /tables/<id>, his own cards),
//                              and his own commands from `expects`, posted with his token
// The table is read again every 2 s (If-None-Match: an unchanged table costs a 304). His commands are the
// croupier's panel (croupier.js) under the seat's own title; after a command, or when the panel is drawn again,
// the focus stays in it (on its heading where the control it was on is gone), never on the page's body.

import { voidMark } from "./corrections.js";
import { croupierPanel } from "./croupier.js";
import { ApiError, api, sleep } from "./http.js";
import { amount, clear, deskPath, h, link, when, notice, skipLink, tablePath, units } from "./render.js";
import { fillState } from "./state.js";

const POLL_MS = 2000;
const PAGE = 50;

// Names are compared as the service compares them: NFKC, case folded.
function folded(name) {
  return String(name || "").normalize("NFKC").toLowerCase().normalize("NFKC");
}

function seatPath(rest = "") {
  return `/seat${rest}`;
}

// Another view of the desk, drawn without loading the page again (the router follows history).
function goTo(path) {
  history.pushState(null, "", deskPath(path));
  window.dispatchEvent(new PopStateEvent("popstate"));
  document.getElementById("view").focus({ preventScroll: true });
}

function stakes(given) {
  const entries = Object.entries(given || {});
  if (!entries.length) return h("span", { class: "none" }, "none");
  return entries.map(([on, value], i) => [i ? ", " : "", `${amount(value)} on ${on}`]);
}

// --- his rounds ------------------------------------------------------------------------------------------

export function mount(view, { query, desk }) {
  let gone = false;
  const player = desk.role === "player" ? desk.name : (query.get("player") || "").trim();
  document.title = "Your seat · Zametano desk";
  const lookup = desk.role === "player" ? null : h("form", { class: "lookup", "data-testid": "seat-lookup",
    onsubmit: (event) => {
      event.preventDefault();
      const name = event.target.elements.player.value.trim();
      goTo(seatPath(name ? `?player=${encodeURIComponent(name)}` : ""));
    } },
  h("label", { for: "seat-player" }, "Player"),
  h("input", { id: "seat-player", name: "player", type: "text", value: player, spellcheck: "false",
    autocomplete: "off" }),
  h("button", { type: "submit" }, "Show his rounds"));
  const heading = h("h1", { tabindex: "-1" }, player ? `Rounds of ${player}` : "A player's rounds");
  clear(view, heading, lookup, desk.role === "player" ? tablesOfToken(desk) : null);
  if (!player) {
    view.append(h("p", { class: "hint" }, desk.role === "player" || desk.role === null
      ? "Sign in with your player's token (the field above) to see your seat and your rounds."
      : "Give a player's name to read every round he played."));
    return { unmount() { gone = true; } };
  }
  const body = h("tbody");
  const status = h("p", { class: "count", role: "status", "data-testid": "history-status" });
  const more = h("button", { type: "button", hidden: true, "data-testid": "history-more" }, "Show more rounds");
  const table = h("table", { class: "rounds history", "data-testid": "history" },
    h("caption", { id: "history-title", tabindex: "-1" }, "Every round played, the newest first"),
    h("thead", {}, h("tr", {}, ["Ended", "Table", "Game", "Round", "Stakes", "Result", "Balance after",
      "Theoretical loss"].map((t) => h("th", { scope: "col" }, t)))),
    body);
  view.append(status, table, more);
  const mine = desk.role === "player";
  const row = (r) => h("tr", { dataset: { table: r.table_id, round: String(r.round) } },
    h("td", { class: "time" }, when(r.ended_at)),
    h("td", {}, mine ? link(seatPath(`/tables/${encodeURIComponent(r.table_id)}`), r.table_id.slice(0, 8),
      { title: r.table_id }) : link(tablePath(r.table_id), r.table_id.slice(0, 8), { title: r.table_id })),
    h("td", {}, r.game),
    h("th", { scope: "row" }, mine ? `Round ${r.round}` : link(tablePath(r.table_id, `/rounds/${r.round}`), `Round ${r.round}`), voidMark(r)),
    h("td", {}, stakes(r.stakes)),
    h("td", { class: "num", dataset: { result: String(r.result) } }, amount(r.result)),
    h("td", { class: "num", dataset: { balance: String(r.balance) } }, amount(r.balance)),
    h("td", { class: "num" }, r.theoretical_loss === null ? h("span", { class: "none" }, "not rated") : units(r.theoretical_loss)));
  let cursor = null;
  let count = 0;

  async function page() {
    const hadFocus = document.activeElement === more;
    more.disabled = true;
    const q = `?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    try {
      const answer = await api(`/players/${encodeURIComponent(player)}/rounds${q}`);
      if (gone) return;
      body.append(...answer.rounds.map(row));
      count += answer.rounds.length;
      cursor = answer.next_cursor;
      more.hidden = !cursor;
      clear(status, `${count} round${count === 1 ? "" : "s"}${cursor ? " so far" : ""}.`);
      if (hadFocus && more.hidden) document.getElementById("history-title").focus(); // the button is gone
    } catch (error) {
      if (!gone) view.append(notice(error.message, "error"));
    } finally {
      more.disabled = false;
    }
  }

  more.addEventListener("click", page);
  page();
  return { unmount() { gone = true; } };
}

// The tables a player's token is valid on (all, when it names none): a link to each, and a field for any id.
function tablesOfToken(desk) {
  const listed = Array.isArray(desk.tables) ? desk.tables : [];
  const go = h("form", { class: "lookup", "data-testid": "seat-open", onsubmit: (event) => {
    event.preventDefault();
    const id = event.target.elements.table.value.trim();
    if (id) goTo(seatPath(`/tables/${encodeURIComponent(id)}`));
  } },
  h("label", { for: "seat-table" }, "Table id"),
  h("input", { id: "seat-table", name: "table", type: "text", spellcheck: "false", autocomplete: "off" }),
  h("button", { type: "submit" }, "Sit at this table"));
  return h("section", { class: "seat-tables", "aria-labelledby": "seat-tables-title" },
    h("h2", { id: "seat-tables-title" }, "Your tables"),
    listed.length ? h("ul", {}, listed.map((id) => h("li", {}, link(seatPath(`/tables/${encodeURIComponent(id)}`), id))))
      : h("p", { class: "hint" }, "Your token is valid at every table: give the table's id."),
    go);
}

// --- his table -------------------------------------------------------------------------------------------

export function mountTable(view, { params: [tableId], desk }) {
  let gone = false;
  start(view, tableId, desk, () => gone).catch((error) => {
    if (!gone) clear(view, h("h1", {}, "Your seat"), notice(error.message || String(error), "error"));
  });
  return { unmount() { gone = true; } };
}

async function start(view, tableId, desk, gone) {
  clear(view, h("p", { class: "loading" }, "Loading your table…"));
  const [first, games] = await Promise.all([api(tablePath(tableId)), desk.games()]);
  if (gone()) return;
  const game = games[first.game] || {};
  const me = folded(desk.name);
  const stateView = h("section", { class: "state", "data-testid": "state" });
  const panel = croupierPanel(tableId, { games: game, onDone: commanded });
  panel.element.id = "seat-panel";
  panel.element.dataset.testid = "seat";
  let state = first;
  document.title = `Your seat · ${tableId.slice(0, 8)} · Zametano desk`;

  clear(view,
    h("h1", {}, desk.name ? `${desk.name}'s seat` : "Your seat", " ", h("code", { class: "id", title: tableId }, tableId)),
    h("p", { class: "players" }, `${game.title || first.game}. Players: ${(first.players || []).join(", ")}. `,
      link(seatPath(), "Your rounds")),
    h("div", { class: "seat-grid" }, stateView, panel.element));
  skipLink(panel.element, "Skip to your commands");

  // The croupier's panel, under the seat's own title: its heading takes the focus where a redraw would drop it.
  function heading() {
    const title = panel.element.querySelector("h2");
    if (title) {
      title.textContent = "Your commands";
      title.id = "seat-title";
      title.tabIndex = -1;
      panel.element.setAttribute("aria-labelledby", "seat-title");
    }
    return title;
  }

  function draw(next) {
    const focusInPanel = panel.element.contains(document.activeElement);
    state = next;
    fillState(stateView, state, game);
    panel.show({ ...state, expects: (state.expects || []).filter((e) => folded(e.player) === me) });
    const title = heading();
    if (focusInPanel && !panel.element.contains(document.activeElement)) title?.focus({ preventScroll: true });
  }

  function commanded(result) {
    draw(result.state);
    if (!panel.element.contains(document.activeElement)) heading()?.focus({ preventScroll: true });
  }

  draw(first);
  while (!gone()) {
    await sleep(POLL_MS);
    if (gone()) return;
    try {
      const latest = await api(tablePath(tableId), { headers: { "If-None-Match": `"${state.version}"` } });
      if (!gone() && latest.version !== state.version) draw(latest);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 304) {
        if (!gone()) stateView.before(notice(error.message, "error"));
        return;
      }
    }
  }
}
