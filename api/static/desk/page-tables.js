// The tables, the newest first: every table the service keeps, filtered by game (asked of the service), player and when it was
// opened (filtered here: the list already names them), and followed live by the heads stream (GET /events).
// The filters are in the address, so a filtered list has its own link.

import { allPages } from "./http.js";
import { followHeads } from "./live.js";
import { amount, clear, h, keepFocus, link, when, notice, tablePath } from "./render.js";

const LIVE_WORDS = { stream: "live", polling: "live (read again every 5 s)", offline: "reconnecting…" };

function picked(query) {
  return { game: query.get("game") || "", player: query.get("player") || "", from: query.get("from") || "",
    to: query.get("to") || "" };
}

function fits(table, filters) {
  if (filters.game && table.game !== filters.game) return false;
  if (filters.player) {
    const wanted = filters.player.toLocaleLowerCase();
    if (!(table.players || []).some((p) => p.toLocaleLowerCase().includes(wanted))) return false;
  }
  const opened = Date.parse(table.opened_at);
  if (filters.from && opened < Date.parse(`${filters.from}Z`)) return false;
  if (filters.to && opened > Date.parse(`${filters.to}Z`)) return false;
  return true;
}

export function mount(view, { query, desk }) {
  const filters = picked(query);
  const body = h("tbody");
  const count = h("p", { class: "count", role: "status" });
  const live = h("span", { class: "live", "data-testid": "live" }, "…");
  const form = h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() });
  let tables = [];
  let complete = true;
  let reading = null;
  let again = null;
  let gone = false;
  document.title = "Tables · Zametano desk";

  const field = (name, label, control) => h("div", { class: "field" }, h("label", { for: `filter-${name}` }, label),
    control);
  const game = h("select", { id: "filter-game", name: "game" }, h("option", { value: "" }, "every game"));
  const player = h("input", { id: "filter-player", name: "player", type: "search", value: filters.player,
    placeholder: "a name, or part of one" });
  const from = h("input", { id: "filter-from", name: "from", type: "datetime-local", value: filters.from });
  const to = h("input", { id: "filter-to", name: "to", type: "datetime-local", value: filters.to });
  form.append(field("game", "Game", game), field("player", "Player", player), field("from", "Opened from (UTC)", from),
    field("to", "Opened up to (UTC)", to));

  clear(view, h("h1", {}, "Tables"), form, h("div", { class: "bar-line" }, count, live),
    h("table", { class: "tables", "data-testid": "tables" },
      h("thead", {}, h("tr", {}, ["Table", "Game", "Players", "Opened", "Version", "Last event", "Rounds"]
        .map((t) => h("th", { scope: "col" }, t)))),
      body));

  let gameTitles = {};
  desk.games().then((games) => {
    gameTitles = Object.fromEntries(Object.entries(games).map(([name, about]) => [name, about.title || name]));
    if (tables.length) draw();
    for (const [name, about] of Object.entries(games)) {
      game.append(h("option", { value: name, selected: name === filters.game }, about.title || name));
    }
  });

  function row(table) {
    return h("tr", { dataset: { tableId: table.table_id, game: table.game } },
      h("td", {}, link(tablePath(table.table_id), table.table_id.slice(0, 8),
        { title: table.table_id, dataset: { focus: table.table_id } })),
      h("td", {}, gameTitles[table.game] || table.game),
      h("td", {}, (table.players || []).join(", ")),
      h("td", { class: "time" }, when(table.opened_at)),
      h("td", { class: "num", "data-testid": "version" }, amount(table.version)),
      h("td", { class: "time" }, when(table.updated_at)),
      h("td", { class: "num" }, link(tablePath(table.table_id, "/rounds"), String(table.rounds ?? 0),
        { dataset: { focus: `${table.table_id} rounds` } }),
        table.index_error ? h("span", { class: "tag bad", title: table.index_error.message }, "index stopped") : null));
  }

  function draw() {
    // the newest first: the table a pit boss looks for is most often the one just opened
    const shown = tables.filter((t) => fits(t, filters))
      .sort((a, b) => String(b.opened_at).localeCompare(String(a.opened_at)));
    keepFocus(body, () => clear(body, shown.map(row)), () => body.querySelector("a"));
    const more = complete ? "" : " (the first 20,000 read)";
    clear(count, `${shown.length} of ${tables.length} tables shown${more}.`);
    if (!tables.length) clear(count, "No table yet: open one with ./scripts/demo or POST /tables.");
  }

  async function read() {
    const path = filters.game ? `/tables?game=${encodeURIComponent(filters.game)}` : "/tables";
    const page = await allPages(path, "tables");
    if (gone) return;
    tables = page.items;
    complete = page.complete;
    draw();
  }

  function readSoon() {
    clearTimeout(again);
    again = setTimeout(() => { reading = read().catch(() => {}); }, 300);
  }

  function changed() {
    Object.assign(filters, { game: game.value, player: player.value.trim(), from: from.value, to: to.value });
    const params = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    const search = params.toString();
    history.replaceState(null, "", location.pathname + (search ? `?${search}` : ""));
  }

  game.addEventListener("change", () => { changed(); read().catch((e) => clear(count, e.message)); });
  for (const input of [player, from, to]) input.addEventListener("input", () => { changed(); draw(); });

  reading = read().catch((error) => {
    clear(count);
    body.replaceChildren();
    view.append(notice(error.message, "error"));
  });

  // A head of a table listed moves its row; a table not listed yet (just opened) has the list read again.
  const follower = followHeads({
    onHead: (head) => {
      const table = tables.find((t) => t.table_id === head.table_id);
      if (!table) {
        if (!filters.game || head.game === filters.game) readSoon();
        return;
      }
      table.version = head.version;
      table.updated_at = head.timestamp;
      draw();
    },
    refresh: () => reading.then(read),
    onMode: (mode) => { live.textContent = LIVE_WORDS[mode] || mode; live.dataset.mode = mode; },
  });

  return {
    unmount() {
      gone = true;
      clearTimeout(again);
      follower.stop();
    },
  };
}
