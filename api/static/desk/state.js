// A table's state drawn as a table: what it waits for, the money, the cards in play, and the game's own keys, in
// words. Every key the service sends is shown (those named below in their place, any other one under "More"),
// but a key of a stage or a moment where it means nothing (RELEVANT).

import { amount, cards, clear, h, isCards, named, spoken, value, when, words } from "./render.js";

// Keys every table has, shown by the page itself (or not at all: the digest and the rules are elsewhere).
const COMMON = new Set(["table_id", "game", "version", "digest", "rules", "players", "phase", "balances",
  "expects", "as_of", "receipt", "round", "hands"]);
// Each game's own keys, in the order shown; anything else the service adds is shown under "More".
const LAYOUT = {
  "chemin-de-fer": ["bank", "stakes", "punter", "banker", "seats", "shoe", "lots", "house"],
  "punto-banco": ["window", "result", "stakes", "exposure", "croupier", "shoe", "burn", "discarded", "house"],
  "card-lottery": ["stage", "game_number", "lottery_cards", "table", "leader", "to_beat", "turn", "last_winner",
    "set_aside", "penalty_piles", "banker", "dealer", "holders", "seats", "decks", "pot", "kitty"],
};
// Keys that mean something only at some stage of a game: shown while relevant(state) holds, else left out.
const RELEVANT = {
  "card-lottery": {
    lottery_cards: (s) => s.stage !== 2,
    set_aside: (s) => s.stage !== 2,
    table: (s) => s.stage === 2,
    leader: (s) => s.stage === 2,
    to_beat: (s) => s.stage === 2,
    turn: (s) => s.stage === 2,
    penalty_piles: (s) => s.stage === 2,
  },
  // the lots that drew the seats, until the first coup
  "chemin-de-fer": { lots: (s) => !s.round },
};
// Roles a state names, shown beside the players' names.
const ROLES = ["banker", "dealer", "croupier", "punter", "leader", "turn"];
const ROLE_WORDS = { turn: "to play" };

function relevant(state, key) {
  const rule = (RELEVANT[state.game] || {})[key];
  return !rule || rule(state);
}

// Whose turn it is, public to every viewer (waits_for; expects for a service that does not send it).
function waitsFor(state) {
  const waiting = state.waits_for || state.expects || [];
  if (!waiting.length) return "no command at this version";
  const byCommand = new Map();
  for (const e of waiting) byCommand.set(e.command, [...(byCommand.get(e.command) || []), e.player]);
  return [...byCommand].map(([command, players]) => `${spoken(command)} by ${[...new Set(players)].join(" or ")}`)
    .join("; ");
}

// Stakes on the felt: "100 on banker, 20 on tie" for each player (punto banco), or each player's amount.
function stakes(item, state) {
  const entries = Object.entries(item || {});
  if (!entries.length) return h("span", { class: "none" }, "none");
  return h("ul", { class: "stakes", "data-testid": "stakes" }, entries.map(([player, staked]) => h("li",
    { dataset: { player } }, h("span", { class: "who" }, who(player, state)), " ",
    typeof staked === "number" ? amount(staked)
      : Object.entries(staked).map(([spot, sum]) => `${amount(sum)} on ${spoken(spot)}`).join(", "))));
}

function rolesOf(state, player) {
  return ROLES.filter((role) => state[role] === player);
}

// The players and the game's accounts (house, pot, kitty: whichever the state holds).
function money(state, accounts) {
  const rows = (state.players || Object.keys(state.balances || {})).map((player) => {
    const balance = (state.balances || {})[player];
    return h("tr", { dataset: { player } },
      h("th", { scope: "row" }, player, rolesOf(state, player).map((r) => h("span", { class: "tag" }, ROLE_WORDS[r] || r))),
      h("td", { class: "num", "data-testid": "balance", dataset: { player, amount: String(balance) } },
        amount(balance)));
  });
  const held = accounts.filter((name) => typeof state[name] === "number").map((name) => h("tr", { class: "account" },
    h("th", { scope: "row" }, words(name)),
    h("td", { class: "num", "data-testid": "account", dataset: { account: name, amount: String(state[name]) } },
      amount(state[name]))));
  return h("table", { class: "money", "data-testid": "balances" },
    h("caption", {}, "Balances"),
    h("tbody", {}, rows, held));
}

// A key that is a player's name stays as written; any other key is put in words.
function who(key, state) {
  return (state.players || []).includes(key) ? key : words(key);
}

function hands(state) {
  const held = state.hands || {};
  const names = Object.keys(held);
  if (!names.length) return null;
  // Chemin de fer's hands are the punter's and the banker's: the state names who they are
  const owner = (name) => (state.game === "chemin-de-fer" && state[name] ? `${words(name)} (${state[name]})` : who(name, state));
  return h("div", { class: "hands" }, names.map((name) => h("div", { class: "hand", dataset: { hand: name } },
    h("span", { class: "who" }, owner(name)), cards(held[name]))));
}

// The time left of a betting window, from its deadline and this browser's clock (the service decides by its own:
// a stake sent in the last moment may still be refused).
function timeLeft(closesAt) {
  const ms = Date.parse(closesAt) - Date.now();
  return ms > 0 ? `${Math.ceil(ms / 1000)} s left` : "closed";
}

// Every window shown counts down, whichever page drew it.
setInterval(() => {
  for (const left of document.querySelectorAll("[data-closes-at] .left")) {
    left.textContent = timeLeft(left.parentElement.dataset.closesAt);
  }
}, 250);

function betting(item) {
  if (!item) return "no timed window open";
  return h("span", { class: "window", "data-testid": "window", dataset: { closesAt: item.closes_at } },
    `${item.seconds} s, closes at `, when(item.closes_at), " · ", h("strong", { class: "left" }, timeLeft(item.closes_at)));
}

function shown(key, item, state) {
  if (key === "stakes" && item && typeof item === "object") return stakes(item, state);
  if (key === "window" && state.game === "punto-banco") return betting(item);
  if (key === "exposure" && item && typeof item === "object") {
    return `${amount(item.now)} now; limit ${item.limit === null ? "none" : amount(item.limit)}`;
  }
  if (key === "lottery_cards") {
    const prizes = state.lottery_amounts || [];
    if (!item.length) return value(item);
    return h("span", { class: "cards prizes" }, item.map((c, i) => h("span", { class: "prize" },
      value(c), h("span", { class: "under" }, prizes[i] === undefined ? "" : amount(prizes[i])))));
  }
  if (key === "result" && item && typeof item === "object") {
    const natural = item.natural ? ", a natural" : "";
    return `${item.outcome} wins, player ${item.player_total} to banker ${item.banker_total}${natural} (coup ${item.coup})`;
  }
  if (item && typeof item === "object" && "remaining" in item && "dealt" in item) {
    if (item.number === null) return "not shuffled yet";
    const last = item.last_coup ? "; the last coup of the shoe" : "";
    return `deck ${item.number}: ${item.dealt} dealt, ${item.remaining} left${last}`;
  }
  if (key === "decks" && item && typeof item === "object") {
    return h("dl", { class: "pairs" }, Object.entries(item).map(([k, v]) => [h("dt", {}, named(k)), h("dd", {}, shown("", v))]));
  }
  if (item && typeof item === "object" && !Array.isArray(item) && Object.values(item).some(isCards)) {
    // cards by whose they are (piles, burned cards): an empty pile shows as one too
    return h("dl", { class: "pairs" }, Object.entries(item).map(([k, v]) => [h("dt", {}, who(k, state)),
      h("dd", {}, Array.isArray(v) ? cards(v) : value(v))]));
  }
  return value(item);
}

function details(state, keys) {
  const present = keys.filter((key) => key in state && relevant(state, key));
  if (!present.length) return null;
  return h("dl", { class: "details" }, present.map((key) => [
    h("dt", {}, words(key)), h("dd", { dataset: { key } }, shown(key, state[key], state))]));
}

// Fills `element` (the state view: data-testid="state") with `state`, and sets its data-version last, so that
// whoever waits for data-version=N finds state N drawn.
export function fillState(element, state, game = {}) {
  const opened = Boolean(element.querySelector("details.more")?.open);
  const accounts = game.accounts || [];
  const layout = (LAYOUT[state.game] || []).filter((key) => !accounts.includes(key));
  const rest = Object.keys(state).filter((key) => !COMMON.has(key) && !layout.includes(key)
    && !accounts.includes(key) && key !== "lottery_amounts" && key !== "waits_for" && relevant(state, key));
  const at = state.as_of ? when(state.as_of.timestamp) : "now";
  clear(element,
    h("header", { class: "state-head" },
      h("h2", {}, `Version ${state.version}`),
      h("p", { class: "phase" }, h("span", { class: "label" }, "Phase "), h("strong", { dataset: { phase: state.phase || "" } }, state.phase ? spoken(state.phase) : "—"),
        typeof state.round === "number" ? h("span", { class: "round" }, ` · round ${state.round}`) : null),
      h("p", { class: "at" }, "as of ", at),
      h("p", { class: "waits" }, h("span", { class: "label" }, "Waits for "), waitsFor(state))),
    h("div", { class: "state-body" },
      money(state, accounts),
      h("div", { class: "felt" }, hands(state), details(state, layout)),
      rest.length ? h("details", { class: "more", open: opened }, h("summary", { dataset: { focus: "more" } }, "More"),
        details(state, rest)) : null));
  element.dataset.version = String(state.version);
  element.setAttribute("aria-label", `The table at version ${state.version}`);
}
