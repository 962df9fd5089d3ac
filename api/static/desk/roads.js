// Baccarat's roads on a table's page (docs/rules/roads.md): the bead plate, the big road and the three derived
// roads of the shoe at the version the page shows, read from GET /tables/<id>/roads?version=N, drawn as SVG.
//
// The page only mounts the panel: the panel follows the version the page draws through the state view's
// data-version (set last by fillState, so that state N is drawn when it reads N), and reads the roads of that
// version; the roads of a version never change, so each is read once. A game without roads gets no panel.

import { api, root } from "./http.js";
import { clear, h, notice, tablePath } from "./render.js";

const SVG = "http://www.w3.org/2000/svg";
const CELL = 18; // pixels a cell
const ROWS = 6;
const MIN_COLUMNS = 12; // a road drawn at least this wide, so an empty shoe still shows its grid
const COLOURS = { banker: "#b3261e", player: "#1d4ed8", tie: "#15803d", red: "#b3261e", blue: "#1d4ed8" };
const LETTERS = { banker: "B", player: "P", tie: "T" };
const ROADS = [
  ["bead_plate", "Bead plate", "every coup down each column: B banker (red), P player (blue), T tie (green)"],
  ["big_road", "Big road", "the wins, a column a streak: red banker, blue player; a green slash is a tie, a dot a pair"],
  ["big_eye_boy", "Big eye boy", "red: the road repeats itself, blue: it does not"],
  ["small_road", "Small road", "compared two columns back"],
  ["cockroach_pig", "Cockroach pig", "compared three columns back"],
];
const KEPT = 200; // roads kept, by version and shoe

// The panel's own styles, linked once: the page's shell stays as it is.
function styled() {
  if (document.querySelector("link[data-roads]")) return;
  document.head.append(h("link", { rel: "stylesheet", href: `${root()}/desk/static/roads.css`, "data-roads": "" }));
}

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}

function centre(cell) {
  return [(cell.column - 0.5) * CELL, (cell.row - 0.5) * CELL];
}

// The marks of one cell, by road: a bead with its letter, a hollow ring with its ties and pairs, a derived
// road's ring, dot or slash.
function marks(road, cell) {
  const [x, y] = centre(cell);
  const r = CELL / 2 - 2;
  const colour = COLOURS[cell.outcome || cell.colour];
  const slash = (stroke) => svg("line", { x1: x - r, y1: y + r, x2: x + r, y2: y - r, stroke, "stroke-width": 2 });
  if (road === "bead_plate") {
    return [svg("circle", { cx: x, cy: y, r, fill: colour }),
      svg("text", { x, y: y + 4, "text-anchor": "middle", "font-size": 10, fill: "#fff" }, LETTERS[cell.outcome])];
  }
  if (road === "big_road") {
    const drawn = [svg("circle", { cx: x, cy: y, r: r - 1, fill: "none", stroke: colour, "stroke-width": 2 })];
    if (cell.ties) drawn.push(slash(COLOURS.tie));
    if (cell.ties > 1) drawn.push(svg("text", { x, y: y + 3, "text-anchor": "middle", "font-size": 8 }, String(cell.ties)));
    if (cell.banker_pair) drawn.push(svg("circle", { cx: x - r + 1, cy: y - r + 1, r: 2, fill: COLOURS.banker }));
    if (cell.player_pair) drawn.push(svg("circle", { cx: x + r - 1, cy: y + r - 1, r: 2, fill: COLOURS.player }));
    return drawn;
  }
  if (road === "big_eye_boy") return [svg("circle", { cx: x, cy: y, r: r - 2, fill: "none", stroke: colour, "stroke-width": 2 })];
  if (road === "small_road") return [svg("circle", { cx: x, cy: y, r: r - 2, fill: colour })];
  return [slash(colour)];
}

// What a reader of the screen hears for a road: how many cells, and the last one.
function described(name, cells, roads) {
  if (!cells.length) return `${name}: empty`;
  const last = cells.reduce((a, b) => (b.coup >= a.coup ? b : a));
  const columns = Math.max(...cells.map((c) => c.column));
  const what = last.outcome || last.colour;
  return `${name}: ${cells.length} marks in ${columns} columns, the last ${what} (coup ${last.coup} of ${roads.coups})`;
}

function road([key, name, about], roads) {
  const cells = roads[key] || [];
  const columns = Math.max(MIN_COLUMNS, ...cells.map((c) => c.column + 1));
  const width = columns * CELL;
  const height = ROWS * CELL;
  const grid = [];
  for (let i = 1; i < columns; i += 1) grid.push(svg("line", { x1: i * CELL, y1: 0, x2: i * CELL, y2: height, stroke: "#e5e7eb" }));
  for (let j = 1; j < ROWS; j += 1) grid.push(svg("line", { x1: 0, y1: j * CELL, x2: width, y2: j * CELL, stroke: "#e5e7eb" }));
  const picture = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": described(name, cells, roads), "data-road": key, "data-cells": cells.length },
  svg("rect", { width, height, fill: "#fff", stroke: "#d1d5db" }), ...grid, ...cells.flatMap((cell) => marks(key, cell)));
  const scroller = h("div", { class: "road-scroll" }, picture); // a long shoe scrolls inside its road, not the page
  return h("figure", { class: "road", dataset: { road: key } }, h("figcaption", {}, h("strong", {}, name), ` — ${about}`),
    scroller);
}

function totals(roads) {
  const t = roads.totals;
  if (roads.shoe === null) return "No shoe of coups yet.";
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return `Shoe ${roads.shoe}, ${plural(roads.coups, "coup")}: banker ${t.banker}, player ${t.player}, tie ${t.tie}; `
    + `${plural(t.natural, "natural")}, ${plural(t.banker_pair, "banker pair")}, ${plural(t.player_pair, "player pair")}.`;
}

// The panel, or null for a game that keeps no roads; `stateView` is the page's state view (data-version).
export function roadsPanel(tableId, game, stateView, isGone = () => false) {
  if (!game || !game.roads) return null;
  styled();
  const picker = h("select", { id: "roads-shoe", "data-testid": "roads-shoe" });
  const status = h("p", { class: "roads-totals", role: "status", "data-testid": "roads-totals" }, "Loading the roads…");
  const body = h("div", { class: "roads-body" });
  const element = h("section", { class: "roads", "aria-labelledby": "roads-title", "data-testid": "roads" },
    h("h2", { id: "roads-title" }, "Roads"),
    h("div", { class: "roads-bar" }, h("label", { for: "roads-shoe" }, "Shoe "), picker, " ", status),
    body);
  const kept = new Map();
  let chosen = ""; // "" the version's last shoe, else a shoe's number
  let ticket = 0;
  let waiting = null;

  function read(version) {
    const key = `${version}/${chosen}`;
    if (!kept.has(key)) {
      const query = `?version=${version}${chosen ? `&shoe=${chosen}` : ""}`;
      kept.set(key, api(tablePath(tableId, `/roads${query}`)).catch((error) => {
        kept.delete(key);
        throw error;
      }));
      if (kept.size > KEPT) kept.delete(kept.keys().next().value);
    }
    return kept.get(key);
  }

  function choices(roads) {
    const options = [h("option", { value: "" }, "the last one")]
      .concat(roads.shoes.map((n) => h("option", { value: String(n) }, `shoe ${n}`)));
    clear(picker, options);
    picker.value = chosen;
  }

  async function show() {
    const version = Number(stateView.dataset.version);
    if (!version) return;
    const mine = ++ticket;
    try {
      const roads = await read(version);
      if (mine !== ticket || isGone()) return;
      choices(roads);
      clear(status, totals(roads));
      clear(body, ROADS.map((spec) => road(spec, roads)));
      Object.assign(element.dataset, { version: String(version), shoe: String(roads.shoe), coups: String(roads.coups) });
    } catch (error) {
      if (mine !== ticket || isGone()) return;
      if (chosen) { // that shoe was not shuffled yet at this version: the version's own last shoe
        chosen = "";
        show();
        return;
      }
      clear(body, notice(error.message || String(error), "error"));
    }
  }

  function soon() {
    clearTimeout(waiting);
    waiting = setTimeout(show, 120); // a slider dragged or a live burst asks once
  }

  picker.addEventListener("change", () => { chosen = picker.value; show(); });
  new MutationObserver(soon).observe(stateView, { attributes: true, attributeFilter: ["data-version"] });
  soon();
  return element;
}
