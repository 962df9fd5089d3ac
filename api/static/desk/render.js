// Building the page: elements (never from HTML text: names and data are always set as text), cards drawn as
// cards, amounts, moments, and any JSON value the service may add, shown as it is.

import { root } from "./http.js";

const PROPERTIES = new Set(["hidden", "disabled", "checked", "value", "selected", "required", "open", "max", "min"]);

// h("a", {href, class, dataset: {...}, onclick}, ...children): children are nodes or text; null is left out.
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "text") element.textContent = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (PROPERTIES.has(key)) element[key] = value;
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

export function clear(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

export function deskPath(path) {
  return `${root()}/desk${path}`;
}

export function link(path, text, props = {}) {
  return h("a", { href: deskPath(path), ...props }, text);
}

export function tablePath(tableId, rest = "") {
  return `/tables/${encodeURIComponent(tableId)}${rest}`;
}

// --- cards -------------------------------------------------------------------------------------------------

const CARD = /^([2-9TJQKA])([shdc])$/;
const SUITS = { s: ["♠", "spades"], h: ["♥", "hearts"], d: ["♦", "diamonds"], c: ["♣", "clubs"] };
const RANKS = { T: "10", J: "jack", Q: "queen", K: "king", A: "ace" };

function isCard(value) {
  return typeof value === "string" && (value === "??" || CARD.test(value));
}

export function card(code) {
  const match = CARD.exec(code);
  if (!match) {
    return h("span", { class: "card back", role: "img", "aria-label": "a face-down card", title: "face down",
      dataset: { card: "??" } });
  }
  const [, rank, suit] = match;
  const name = `${RANKS[rank] || rank} of ${SUITS[suit][1]}`;
  return h("span", { class: `card ${suit === "h" || suit === "d" ? "red" : "black"}`, role: "img", "aria-label": name,
    title: code, dataset: { card: code } },
  h("span", { class: "rank", "aria-hidden": "true" }, rank === "T" ? "10" : rank),
  h("span", { class: "suit", "aria-hidden": "true" }, SUITS[suit][0]));
}

export function cards(list, props = {}) {
  if (!list || !list.length) return h("span", { class: "none" }, "no cards");
  return h("span", { class: `cards${props.small ? " small" : ""}` }, list.map(card));
}

export function isCards(value) {
  return Array.isArray(value) && value.length > 0 && value.every(isCard);
}

// --- words -------------------------------------------------------------------------------------------------

export function amount(value) {
  if (typeof value !== "number") return String(value);
  return value.toLocaleString("en-GB").replace("-", "−");
}

// A figure that is not money moved (an average, in units or per unit staked) to a fixed number of decimals,
// as the service rounds it: 3.7394, −0.0247.
export function units(value, digits = 4) {
  if (typeof value !== "number") return String(value ?? "—");
  return value.toLocaleString("en-GB", { minimumFractionDigits: digits, maximumFractionDigits: digits })
    .replace("-", "−");
}

// A moment to the second, "2026-11-29 20:15:04 UTC", in a <time> whose title (shown on hover) and datetime keep
// the service's whole timestamp, microseconds included.
const STAMP = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

function stamped(text, shown) {
  if (typeof text !== "string") return h("span", { class: "none" }, "—");
  const full = moment(text, { whole: true });
  return h("time", { datetime: text, title: full }, shown);
}

// The words of a moment: to the second, or ({whole: true}) with its fraction of a second.
export function moment(text, { whole = false } = {}) {
  if (typeof text !== "string") return "—";
  const match = STAMP.exec(text);
  if (!match) return text;
  const [, day, time, fraction = "", zone] = match;
  const where = zone === "Z" || zone === "+00:00" ? "UTC" : zone;
  return `${day} ${time}${whole ? fraction : ""} ${where}`;
}

export function when(text) {
  return stamped(text, moment(text));
}

// The time of day alone, to the second (the whole moment on hover).
export function clock(text) {
  const match = STAMP.exec(text || "");
  return match ? stamped(text, match[2]) : String(text);
}

// A name the service uses (a field, a command, a phase, a check: "first_broken_version") in words ("first broken
// version"); words() starts it with a capital, as a label.
export function spoken(key) {
  return String(key).replace(/_/g, " ");
}

export function words(key) {
  const text = spoken(LABELS[key] || key);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// An event's type, "LotteryCardsRevealed", in words: "Lottery cards revealed" (a line breaks between words only);
// "Stage2Began": "Stage 2 began".
export function eventWords(type) {
  const text = String(type).replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([a-z])(\d)/g, "$1 $2").toLowerCase();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// Names whose words alone would not say what they hold.
const LABELS = {
  first_broken_version: "first version that does not chain",
  read_model: "read model (listings)",
  to_beat: "to beat",
  game_number: "game",
  lottery_cards: "lottery cards (prizes under them)",
  penalty_piles: "penalty piles",
  set_aside: "set aside",
  last_winner: "last prize won by",
  face_up: "face up",
  commands_checked: "commands run again",
  rounds_checked: "rounds checked",
};

// --- any value -------------------------------------------------------------------------------------------

// A JSON value as the service gives it: cards as cards, objects as labelled lists, lists of objects as tables.
export function value(item) {
  if (item === null || item === undefined) return h("span", { class: "none" }, "—");
  if (typeof item === "boolean") return item ? "yes" : "no";
  if (typeof item === "number") return amount(item);
  if (isCard(item)) return card(item);
  if (typeof item === "string") return item;
  if (Array.isArray(item)) {
    if (!item.length) return h("span", { class: "none" }, "none");
    if (isCards(item)) return cards(item);
    if (item.every((x) => x && typeof x === "object" && !Array.isArray(x))) return rows(item);
    return h("span", { class: "list" }, item.map((x, i) => [i ? ", " : "", value(x)]));
  }
  const entries = Object.entries(item);
  if (!entries.length) return h("span", { class: "none" }, "none");
  return h("dl", { class: "pairs" }, entries.map(([k, v]) => [h("dt", {}, named(k)), h("dd", {}, value(v))]));
}

function rows(items) {
  const keys = [...new Set(items.flatMap((x) => Object.keys(x)))];
  return h("table", { class: "rows" },
    h("thead", {}, h("tr", {}, keys.map((k) => h("th", { scope: "col" }, words(k))))),
    h("tbody", {}, items.map((x) => h("tr", {}, keys.map((k) => h("td", {}, value(x[k])))))));
}

// A key that names a player (or any value the service chose, such as a table id) stays as written; a field's
// name is put in words.
export function named(key) {
  return key in LABELS || /^[a-z]+(_[a-z]+)+$/.test(key) ? spoken(LABELS[key] || key) : key;
}

// Stakes and other maps of maps in one line of words: "anna: 100 on banker; boris: 50 on player".
function inWords(item) {
  if (item === null || typeof item !== "object") return typeof item === "number" ? amount(item) : String(item);
  if (Array.isArray(item)) return item.map(inWords).join(", ");
  const entries = Object.entries(item);
  if (!entries.length) return "none";
  if (entries.every(([, v]) => typeof v === "number")) {
    return entries.map(([k, v]) => `${amount(v)} on ${named(k)}`).join(", ");
  }
  return entries.map(([k, v]) => `${named(k)}: ${inWords(v)}`).join("; ");
}

// An event's data in one line: each field in words beside its value, cards drawn.
export function summary(data) {
  const parts = Object.entries(data || {}).map(([k, v]) => {
    let shown;
    if (isCard(v)) shown = card(v);
    else if (isCards(v)) shown = cards(v, { small: true });
    else if (v !== null && typeof v === "object") shown = inWords(v);
    else if (typeof v === "boolean") shown = v ? "yes" : "no";
    else if (typeof v === "number") shown = amount(v);
    else shown = String(v);
    return h("span", { class: "kv" }, h("span", { class: "k" }, spoken(k)), " ", shown);
  });
  return h("span", { class: "summary" }, parts);
}

export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

// --- narrow screens ----------------------------------------------------------------------------------------

// Each cell of a table of rows carries its column's heading (data-label), so that on a narrow screen, where the
// stylesheet stacks a row's cells (desk.css), each value is still shown beside what it is.
function labelCells(table) {
  const headings = [...table.querySelectorAll(":scope > thead th")].map((th) => th.textContent.trim());
  if (!headings.length) return;
  for (const row of table.querySelectorAll(":scope > tbody > tr")) {
    [...row.children].forEach((cell, i) => {
      if (headings[i] && cell.dataset.label !== headings[i]) cell.dataset.label = headings[i];
    });
  }
}

// Labels the cells of every table of rows in `part` now, and as they are drawn.
export function labelTables(part) {
  const label = () => part.querySelectorAll("table").forEach(labelCells);
  new MutationObserver(label).observe(part, { childList: true, subtree: true });
  label();
}

// --- keyboard focus ----------------------------------------------------------------------------------------

// Draws a part of the page again with draw() without dropping the keyboard focus that was inside it: a focused
// element that draw() removed would leave the focus on the page's body, and a keyboard or screen reader user at
// the top of the page. The focus goes to the new element with the same data-focus key, else to fallback() (by
// default the part itself, focusable for that alone).
export function keepFocus(part, draw, fallback = () => part) {
  const had = part.contains(document.activeElement) ? document.activeElement : null;
  const key = had?.closest("[data-focus]")?.dataset.focus;
  draw();
  if (!had || had.isConnected) return;
  const same = key === undefined ? null : [...part.querySelectorAll("[data-focus]")].find((e) => e.dataset.focus === key);
  const next = same || fallback() || part;
  if (!next.matches("a[href], button, input, select, textarea, summary, [tabindex]")) next.tabIndex = -1;
  next.focus({ preventScroll: true });
}

// A button that can not act now, told to screen readers (aria-disabled) while it keeps the focus: a button made
// `disabled` while focused drops the focus to the page's body. Its click handler checks inactive().
export function setInactive(button, inactive) {
  if (inactive) button.setAttribute("aria-disabled", "true");
  else button.removeAttribute("aria-disabled");
}

export function inactive(button) {
  return button.getAttribute("aria-disabled") === "true";
}

// A skip link to `target` (an element with an id), among the page's first Tab stops, for as long as the view
// that asks for it is shown: the router (app.js) removes a view's skip links with the view.
export function skipLink(target, text) {
  const skip = h("a", { class: "skip", href: `#${target.id}`, dataset: { view: "" } }, text);
  document.getElementById("skips").append(skip);
  return skip;
}
