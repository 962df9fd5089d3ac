// Free decisions weighed (docs/api.md "Decisions"): a round's, each with what it cost against the game's solution,
// and a table's players ranked by what their decisions gave away, read from GET /tables/<id>/decisions only
// when that section is opened.

import { api } from "./http.js";
import { amount, clear, h, notice, tablePath, units } from "./render.js";

const NONE_HERE = "No free decision in this round: the rules decided every draw, or a natural decided the coup.";
const NONE_IN_GAME = "No free decision: only Chemin de fer has free decisions (A.9, A.10); the other games' rules "
  + "decide every draw.";
const ABOUT = "Each draw or stand the table's rules left free, weighed against the exact solution of the draw game: "
  + "the gains and the cost are per unit staked, the amounts in units (an average given away, not money moved).";

function headings(names) {
  return h("thead", {}, h("tr", {}, names.map((t) => h("th", { scope: "col" }, t))));
}

// "vera 3.7394, boris 1.2000", or a dash when nothing was given away.
function givenTo(to) {
  const entries = Object.entries(to || {});
  return entries.length ? entries.map(([who, given]) => `${who} ${units(given)}`).join(", ") : "—";
}

function decisionRow(d, at) {
  const costly = d.cost > 0;
  return h("tr", { class: costly ? "costly" : null,
    dataset: { version: String(d.version), player: d.player, cost: String(d.cost), costAmount: String(d.cost_amount) } },
  h("td", { class: "num" }, at(d.version)),
  h("th", { scope: "row" }, d.player),
  h("td", {}, d.role),
  h("td", { class: "num" }, d.total),
  h("td", {}, d.role === "banker" ? (d.third === "stood" ? "punter stood" : `punter's third: ${d.third}`) : "—"),
  h("td", { "data-testid": "chosen" }, d.chosen),
  h("td", { "data-testid": "best" }, d.best),
  h("td", { class: "num", title: String(d.gains.draw) }, units(d.gains.draw, 6)),
  h("td", { class: "num", title: String(d.gains.stand) }, units(d.gains.stand, 6)),
  h("td", { class: "num", title: String(d.cost), "data-testid": "cost" }, units(d.cost, 6)),
  h("td", { class: "num" }, amount(d.at_stake)),
  h("td", { class: "num", "data-testid": "cost-amount" }, units(d.cost_amount)),
  h("td", {}, givenTo(d.to)));
}

// A round audit's free decisions, each linked to the table at its version; in words when there are none.
export function roundDecisions(audit, at) {
  const game = audit.state_before?.game || audit.state_after?.game;
  const list = audit.free_decisions || [];
  const title = "Free decisions";
  if (!list.length) {
    return h("section", { class: "audit-part", "aria-label": title, "data-testid": "free-decisions" }, h("h2", {}, title),
      h("p", { class: "none" }, game && game !== "chemin-de-fer" ? NONE_IN_GAME : NONE_HERE));
  }
  return h("section", { class: "audit-part", "aria-label": title, "data-testid": "free-decisions" }, h("h2", {}, title),
    h("table", { class: "rows decisions" },
      h("caption", {}, ABOUT),
      headings(["Version", "Player", "Role", "Total", "Saw", "Chose", "Best", "Gain drawing", "Gain standing",
        "Cost per unit", "At stake", "Cost (units)", "Given to"]),
      h("tbody", {}, list.map((d) => decisionRow(d, at)))));
}

// The players, most given away first (ties by name).
function byCost(players) {
  return Object.entries(players).sort(([a, x], [b, y]) => y.cost_amount - x.cost_amount || a.localeCompare(b));
}

function ranking(players) {
  const ranked = byCost(players);
  if (!ranked.length) return h("p", { class: "none" }, "No player.");
  return h("table", { class: "rows ranking", "data-testid": "cost-ranking" },
    h("caption", {}, "Players ranked by what their free decisions gave away, in units, against the game's solution; "
      + "beside it what their stakes were expected to lose and what they won or lost. Signals, not verdicts."),
    headings(["Rank", "Player", "Free decisions", "Costly", "Cost (units)", "Given to", "Theoretical loss", "Result"]),
    h("tbody", {}, ranked.map(([player, p], i) => h("tr", { dataset: { player, costAmount: String(p.cost_amount) } },
      h("td", { class: "num" }, i + 1),
      h("th", { scope: "row" }, player),
      h("td", { class: "num" }, p.decisions),
      h("td", { class: "num" }, p.costly),
      h("td", { class: "num", "data-testid": "cost-amount" }, units(p.cost_amount)),
      h("td", {}, givenTo(p.to)),
      h("td", { class: "num" }, p.theoretical_loss === null ? "not rated" : units(p.theoretical_loss)),
      h("td", { class: "num" }, amount(p.result))))));
}

// A section of the table page, closed at first: opening it reads the players' summary (every page of
// /decisions carries it whole, so one decision is enough), again at every opening, so that it is current.
export function costRanking(tableId, isGone) {
  const body = h("div", { id: "cost-ranking-body", class: "ranking-body", hidden: true });
  const toggle = h("button", { type: "button", "aria-expanded": "false", "aria-controls": "cost-ranking-body",
    "data-testid": "show-cost-ranking" }, h("span", { class: "mark", "aria-hidden": "true" }, "▸"), " Players ranked by cost");
  let ticket = 0;

  async function load() {
    const mine = ++ticket;
    clear(body, h("p", { class: "loading" }, "Loading the players' decisions…"));
    try {
      const page = await api(tablePath(tableId, "/decisions?limit=1"));
      if (mine === ticket && !isGone()) clear(body, ranking(page.players));
    } catch (error) {
      if (mine === ticket && !isGone()) clear(body, notice(error.message, "error"));
    }
  }

  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.querySelector(".mark").textContent = open ? "▾" : "▸";
    body.hidden = !open;
    if (open) load();
    else ticket += 1;
  });
  return h("section", { class: "cost-ranking", "aria-labelledby": "cost-ranking-title" },
    h("h2", { id: "cost-ranking-title" }, "Free decisions by player"), toggle, body);
}
