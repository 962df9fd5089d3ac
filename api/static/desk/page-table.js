// One table: a timeline over its versions (a slider, step and play buttons, a moment picker), the state at
// the version chosen exactly as GET /tables/<id>/state?version=N gives it, the event log beside it, the
// croupier's panel for a role that may command, the table followed live, and (read when opened) its players
// ranked by what their free decisions cost.

import { mountCorrections } from "./corrections.js";
import { croupierPanel } from "./croupier.js";
import { costRanking } from "./decisions.js";
import { exportButtons, tableFrame } from "./frame.js";
import { api } from "./http.js";
import { followTable } from "./live.js";
import { roadsPanel } from "./roads.js";
import { clear, clock, deskPath, eventWords, h, inactive, keepFocus, notice, setInactive, skipLink, summary, tablePath } from "./render.js";
import { fillState } from "./state.js";

const BLOCK = 100; // events fetched together for the log
const AROUND = 25; // events shown on either side of the version shown
const PLAY_MS = 600;
const LIVE_WORDS = { stream: "live", polling: "live (polling every 2 s)", offline: "reconnecting…" };

// The log, read in blocks of BLOCK events and kept; events that arrive live are added to their block.
class EventLog {
  constructor(tableId) {
    this.tableId = tableId;
    this.blocks = new Map();
    this.loading = new Map();
  }

  add(events) {
    for (const event of events) {
      const k = Math.floor((event.version - 1) / BLOCK);
      const block = this.blocks.get(k);
      if (event.version !== k * BLOCK + (block ? block.length : 0) + 1) continue;
      if (block) block.push(event);
      else this.blocks.set(k, [event]);
    }
  }

  block(k, head) {
    const block = this.blocks.get(k);
    if (block && block.length >= Math.min(BLOCK, head - k * BLOCK)) return Promise.resolve(block);
    if (!this.loading.has(k)) {
      const path = tablePath(this.tableId, `/events?after=${k * BLOCK}&limit=${BLOCK}`);
      this.loading.set(k, api(path).then((page) => {
        this.blocks.set(k, page.events);
        return page.events;
      }).finally(() => this.loading.delete(k)));
    }
    return this.loading.get(k);
  }

  async range(from, to, head) {
    const ks = [];
    for (let k = Math.floor((from - 1) / BLOCK); k <= Math.floor((to - 1) / BLOCK); k += 1) ks.push(k);
    const blocks = await Promise.all(ks.map((k) => this.block(k, head)));
    return blocks.flat().filter((e) => e.version >= from && e.version <= to);
  }
}

// A moment as the picker shows it (UTC, to the millisecond), and the picker's value as RFC 3339.
function toPicker(timestamp) {
  return typeof timestamp === "string" ? timestamp.slice(0, 23) : "";
}

function fromPicker(text) {
  return `${text.length === 16 ? `${text}:00` : text}Z`;
}

function timelineControls() {
  const slider = h("input", { type: "range", id: "timeline", "data-testid": "timeline", min: 1, max: 1, step: 1 });
  const button = (label, text, testid) => h("button", { type: "button", "aria-label": label, title: label,
    "data-testid": testid }, text);
  return {
    slider,
    position: h("output", { for: "timeline", "data-testid": "position" }),
    first: button("First version", "|◀", "first"),
    back: button("One version back", "◀", "back"),
    play: button("Play", "▶ Play", "play"),
    forward: button("One version forward", "▶", "forward"),
    latest: button("Latest version, followed live", "Latest ▶|", "latest"),
    picker: h("input", { type: "datetime-local", id: "moment", step: "0.001" }),
    live: h("span", { class: "live", "data-testid": "live", role: "status" }, "…"),
    status: h("p", { class: "status", role: "status" }),
  };
}

export function mount(view, { params: [tableId], query, desk }) {
  const stops = [];
  let gone = false;
  start(view, tableId, query, desk, stops, () => gone).catch((error) => {
    if (!gone) clear(view, h("h1", {}, "Table"), notice(error.message || String(error), "error"));
  });
  return {
    unmount() {
      gone = true;
      stops.forEach((stop) => stop());
    },
  };
}

async function start(view, tableId, query, desk, stops, gone) {
  clear(view, h("p", { class: "loading" }, "Loading the table…"));
  const [latest, games] = await Promise.all([api(tablePath(tableId)), desk.games()]);
  if (gone()) return;
  const game = games[latest.game] || {};
  const c = timelineControls();
  const stateView = h("section", { class: "state", "data-testid": "state" });
  const logBody = h("tbody");
  const log = new EventLog(tableId);
  const panel = desk.mayCommand() ? croupierPanel(tableId, { games: game, onDone: commanded }) : null;
  const states = new Map();
  let head = latest.version;
  let headState = latest;
  let shown = null; // the state drawn
  let following = false;
  let place = {}; // what the address names: {version}, {at} or nothing (the latest, followed)
  let ticket = 0;
  let loading = false;
  let player = null;

  clear(view,
    tableFrame(tableId, "", game.title || latest.game),
    h("p", { class: "players" }, `Players: ${(latest.players || []).join(", ")}`),
    exportButtons(tableId),
    h("section", { class: "timeline", "aria-label": "Timeline" },
      h("div", { class: "slider" }, h("label", { for: "timeline" }, "Version"), c.slider, c.position),
      h("div", { class: "buttons", role: "group", "aria-label": "Move in time" }, c.first, c.back, c.play, c.forward,
        c.latest),
      h("form", { class: "moment", onsubmit: (e) => { e.preventDefault(); showMoment(c.picker.value); } },
        h("label", { for: "moment" }, "Moment (UTC)"), c.picker, h("button", { type: "submit" }, "Go")),
      c.live, c.status),
    h("div", { class: "table-grid" },
      stateView,
      h("section", { class: "log", "aria-labelledby": "log-title" },
        h("h2", { id: "log-title" }, "Event log"),
        h("div", { class: "scroller" }, h("table", { "data-testid": "log" },
          h("thead", {}, h("tr", {}, ["Version", "Time", "Event", "Actor", "Data"].map((t) => h("th", { scope: "col" }, t)))),
          logBody)))),
    roadsPanel(tableId, game, stateView, gone),
    panel ? panel.element : null,
    costRanking(tableId, gone));

  function stateAt(version) {
    if (!states.has(version)) {
      states.set(version, api(tablePath(tableId, `/state?version=${version}`)).catch((error) => {
        states.delete(version);
        throw error;
      }));
      if (states.size > 500) states.delete(states.keys().next().value);
    }
    return states.get(version);
  }

  function say(text) {
    clear(c.status, text || "");
  }

  function address() {
    const params = new URLSearchParams();
    if (place.at) params.set("at", place.at);
    else if (place.version) params.set("version", String(place.version));
    const search = params.toString();
    history.replaceState(null, "", location.pathname + (search ? `?${search}` : ""));
  }

  function controls() {
    c.slider.max = String(head);
    c.slider.value = String(shown ? shown.version : head);
    const at = shown ? shown.version : head;
    c.position.textContent = `${at} of ${head}`;
    c.slider.setAttribute("aria-valuetext", `version ${at} of ${head}`);
    setInactive(c.first, at <= 1);
    setInactive(c.back, at <= 1);
    setInactive(c.forward, at >= head);
    c.latest.setAttribute("aria-pressed", String(following));
  }

  function draw(state) {
    shown = state;
    keepFocus(stateView, () => fillState(stateView, state, game));
    c.picker.value = toPicker(state.as_of?.timestamp);
    controls();
    drawLog();
  }

  async function showVersion(version, { follow = false } = {}) {
    const wanted = Math.min(Math.max(1, Math.round(version)), head);
    following = follow;
    place = follow ? {} : { version: wanted };
    address();
    const mine = ++ticket;
    c.slider.value = String(wanted);
    loading = true;
    try {
      const state = await stateAt(wanted);
      if (mine === ticket && !gone()) {
        say("");
        draw(state);
      }
    } catch (error) {
      if (mine === ticket) say(error.message);
    } finally {
      if (mine === ticket) loading = false;
    }
  }

  async function showMoment(text) {
    if (!text) return;
    const at = fromPicker(text);
    const mine = ++ticket;
    try {
      const state = await api(tablePath(tableId, `/state?at=${encodeURIComponent(at)}`));
      if (mine !== ticket || gone()) return;
      following = false;
      place = { at };
      address();
      say("");
      draw(state);
    } catch (error) {
      if (mine === ticket) say(error.message);
    }
  }

  async function drawLog() {
    if (!shown) return;
    const at = shown.version;
    const events = await log.range(Math.max(1, at - AROUND), Math.min(head, at + AROUND), head).catch(() => null);
    if (!events || gone() || !shown || shown.version !== at) return;
    const link = (row) => row?.querySelector("a");
    keepFocus(logBody, () => clear(logBody, events.map((event) => logRow(event, at))),
      () => link(logBody.querySelector("tr.current")));
    centre(logBody.querySelector("tr.current"));
  }

  // The version shown in the middle of the log's own scroller, the versions after it in sight (the page itself
  // does not move).
  function centre(row) {
    const scroller = row?.closest(".scroller");
    if (!scroller) return;
    const top = row.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
    scroller.scrollTop = Math.max(0, top - (scroller.clientHeight - row.offsetHeight) / 2);
  }

  function logRow(event, at) {
    const here = `${deskPath(tablePath(tableId))}?version=${event.version}`;
    const go = (e) => {
      e.preventDefault();
      stopPlaying();
      showVersion(event.version);
    };
    return h("tr", { dataset: { version: String(event.version) },
      class: event.version === at ? "current" : event.version > at ? "future" : null,
      "aria-current": event.version === at ? "step" : null },
    h("td", { class: "num" }, h("a", { href: here, onclick: go, dataset: { focus: `v${event.version}` } },
      String(event.version))),
    h("td", { class: "time" }, clock(event.timestamp)),
    h("td", { class: "type", title: event.type }, eventWords(event.type)),
    h("td", { class: "actor" }, event.actor),
    h("td", { class: "data" }, summary(event.data)));
  }

  function stopPlaying() {
    if (player) clearInterval(player);
    player = null;
    c.play.textContent = "▶ Play";
    c.play.setAttribute("aria-label", "Play");
    c.play.setAttribute("aria-pressed", "false");
  }

  function togglePlay() {
    if (player) return stopPlaying();
    if (!shown || shown.version >= head) showVersion(1);
    c.play.textContent = "⏸ Pause";
    c.play.setAttribute("aria-label", "Pause");
    c.play.setAttribute("aria-pressed", "true");
    player = setInterval(() => {
      if (!shown || loading) return; // the last step is still on its way
      if (shown.version >= head) stopPlaying();
      else showVersion(shown.version + 1);
    }, PLAY_MS);
    return undefined;
  }

  let sliding = null;
  c.slider.addEventListener("input", () => {
    stopPlaying();
    c.position.textContent = `${c.slider.value} of ${head}`;
    clearTimeout(sliding);
    sliding = setTimeout(() => showVersion(Number(c.slider.value)), 120);
  });
  c.slider.addEventListener("change", () => {
    clearTimeout(sliding);
    showVersion(Number(c.slider.value));
  });
  const step = (button, to) => button.addEventListener("click", () => {
    if (inactive(button)) return;
    stopPlaying();
    showVersion(to());
  });
  step(c.first, () => 1);
  step(c.back, () => (shown?.version || head) - 1);
  step(c.forward, () => (shown?.version || head) + 1);
  c.latest.addEventListener("click", () => { stopPlaying(); showVersion(head, { follow: true }); });
  c.play.addEventListener("click", togglePlay);
  stops.push(stopPlaying);

  let refreshing = null;
  function refreshPanel() {
    if (!panel || headState.version >= head) return;
    clearTimeout(refreshing);
    refreshing = setTimeout(async () => {
      const latestNow = await api(tablePath(tableId)).catch(() => null);
      if (latestNow && !gone() && latestNow.version > headState.version) {
        headState = latestNow;
        panel.show(headState);
      }
    }, 100);
  }

  function arrived(events) {
    log.add(events);
    head = Math.max(head, events[events.length - 1].version);
    if (following) showVersion(head, { follow: true });
    else {
      controls();
      drawLog();
    }
    refreshPanel();
  }

  function commanded(result) {
    follower.deliver(result.events);
    if (result.state && result.state.version >= headState.version) {
      headState = result.state;
      panel.show(headState);
    }
  }

  const follower = followTable(tableId, { after: head, onEvents: arrived,
    onMode: (mode) => { c.live.textContent = LIVE_WORDS[mode] || mode; c.live.dataset.mode = mode; } });
  stops.push(follower.stop);
  if (panel) {
    panel.show(headState);
    skipLink(panel.element, "Skip to the croupier's panel");
  }
  mountCorrections(view, tableId, desk).catch(() => null); // a supervisor's panel (corrections.js)

  // The place the address names, in the service's own words when there is no such place.
  const at = query.get("at");
  const asked = query.get("version");
  if (at === null && asked === null) return showVersion(head, { follow: true });
  const named = at !== null ? `/state?at=${encodeURIComponent(at)}` : `/state?version=${encodeURIComponent(asked)}`;
  const state = await api(tablePath(tableId, named)).catch((error) => error);
  if (gone()) return undefined;
  if (state instanceof Error) {
    await showVersion(head, { follow: true });
    return say(state.message);
  }
  place = at !== null ? { at } : { version: state.version };
  return draw(state);
}
