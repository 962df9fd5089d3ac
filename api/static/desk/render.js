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

// "2026-11-29T20:15:04.000007+00:00" as "2026-11-29 20:15:04.000007 UTC".
export function moment(text) {
  if (typeof text !== "string") return "—";
  return text.replace("T", " ").replace(/(\+00:00|Z)$/, " UTC");
}

export function clock(text) {
  const match = /T(\d\d:\d\d:\d\d(?:\.\d+)?)/.exec(text || "");
  return match ? match[1] : String(text);
}

export function words(key) {
  const text = String(key).replace(/_/g, " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

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
  return h("dl", { class: "pairs" }, entries.map(([k, v]) => [h("dt", {}, k), h("dd", {}, value(v))]));
}

function rows(items) {
  const keys = [...new Set(items.flatMap((x) => Object.keys(x)))];
  return h("table", { class: "rows" },
    h("thead", {}, h("tr", {}, keys.map((k) => h("th", { scope: "col" }, words(k))))),
    h("tbody", {}, items.map((x) => h("tr", {}, keys.map((k) => h("td", {}, value(x[k])))))));
}

// An event's data in one line: key=value pairs, cards drawn.
export function summary(data) {
  const parts = Object.entries(data || {}).map(([k, v]) => {
    let shown;
    if (isCard(v)) shown = card(v);
    else if (isCards(v)) shown = cards(v, { small: true });
    else if (v !== null && typeof v === "object") shown = JSON.stringify(v);
    else shown = String(v);
    return h("span", { class: "kv" }, h("span", { class: "k" }, k), " ", shown);
  });
  return h("span", { class: "summary" }, parts);
}

export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
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
