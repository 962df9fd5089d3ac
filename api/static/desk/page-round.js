// A round's audit: its checks as badges, the cards dealt, every decision with its actor, the free decisions
// weighed with their cost, every payment, the balances before and after, and any problem at its version, each
// linked to the table at that version.

import { voidMark } from "./corrections.js";
import { roundDecisions } from "./decisions.js";
import { tableFrame } from "./frame.js";
import { api } from "./http.js";
import { amount, card, clear, eventWords, h, link, notice, spoken, summary, tablePath, when } from "./render.js";

// Each check's name in words (the service's own name stays in data-check).
const CHECK_NAMES = { chain: "chain", cards: "cards", rules: "rules", money: "money", read_model: "listings" };

const CHECKS = {
  chain: "every digest follows from the one before",
  cards: "every card dealt is the revealed shoe's",
  rules: "the rules, run again, record the same",
  money: "the payments add up",
  read_model: "the read model's row is the round the log gives",
};

function badge(name, ok) {
  const state = ok === true ? "true" : ok === false ? "false" : "pending";
  const mark = ok === true ? "✓" : ok === false ? "✗" : "…";
  const said = ok === null || ok === undefined ? "not yet: a shoe of the round is still unrevealed" : CHECKS[name] || "";
  return h("li", { class: `badge ${state}`, "data-check": name, "data-ok": state, title: said },
    h("span", { class: "mark", "aria-hidden": "true" }, mark), ` ${CHECK_NAMES[name] || spoken(name)} `,
    h("span", { class: "sr" }, ok === true ? "passed" : ok === false ? "failed" : "pending"),
    h("span", { class: "why" }, said));
}

function section(title, headings, rows) {
  return h("section", { class: "audit-part", "aria-label": title }, h("h2", {}, title),
    rows.length ? h("table", { class: "rows" }, h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows)) : h("p", { class: "none" }, "none"));
}

function balances(audit) {
  const before = audit.state_before?.balances || {};
  const after = audit.state_after?.balances || {};
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return names.map((name) => h("tr", { dataset: { player: name } }, h("th", { scope: "row" }, name),
    h("td", { class: "num" }, amount(before[name] ?? 0)), h("td", { class: "num" }, amount(after[name] ?? 0)),
    h("td", { class: "num" }, amount((after[name] ?? 0) - (before[name] ?? 0)))));
}

export function mount(view, { params: [tableId, number] }) {
  let gone = false;
  const loading = h("p", { class: "loading" }, "Loading the audit…");
  clear(view, tableFrame(tableId, "/rounds", `Round ${number}`), loading);
  const at = (version) => link(`${tablePath(tableId)}?version=${version}`, String(version));
  api(tablePath(tableId, `/rounds/${number}`)).then((audit) => {
    if (gone) return;
    const n = audit.round;
    clear(view, tableFrame(tableId, "/rounds", `Round ${n}`),
      h("p", { class: "summary-line" }, audit.summary, voidMark(audit)),
      h("p", {}, "Versions ", at(audit.first_version), " to ", at(audit.last_version), ", from ", when(audit.started_at), " to ", when(audit.ended_at), "."),
      h("ul", { class: "badges", "aria-label": "Checks" }, Object.entries(audit.checks).map(([name, ok]) => badge(name, ok))),
      audit.problems.length ? section("Problems", ["Version", "Check", "Event", "What is wrong"], audit.problems.map((p) =>
        h("tr", { class: "problem" }, h("td", { class: "num" }, p.version ? at(p.version) : "—"), h("td", {}, CHECK_NAMES[p.check] || spoken(p.check)),
          h("td", {}, p.type ? eventWords(p.type) : ""), h("td", {}, p.message)))) : null,
      section("Cards", ["Version", "Deck", "Position", "Card", "To", "Face"], audit.cards.map((c) =>
        h("tr", { dataset: { version: String(c.version) } }, h("td", { class: "num" }, at(c.version)), h("td", { class: "num" }, c.shoe),
          h("td", { class: "num" }, c.position), h("td", {}, card(c.card)), h("td", {}, spoken(c.to)), h("td", {}, c.face_up ? "up" : "down")))),
      section("Decisions", ["Version", "Event", "Actor", "Data"], audit.decisions.map((d) =>
        h("tr", { dataset: { version: String(d.version) } }, h("td", { class: "num" }, at(d.version)), h("td", { title: d.type }, eventWords(d.type)),
          h("td", {}, d.actor), h("td", {}, summary(d.data))))),
      roundDecisions(audit, at),
      section("Payments", ["Version", "From", "To", "Amount", "Reason"], audit.payments.map((p) =>
        h("tr", { dataset: { version: String(p.version) } }, h("td", { class: "num" }, at(p.version)), h("td", {}, p.payer),
          h("td", {}, p.payee), h("td", { class: "num" }, amount(p.amount)), h("td", {}, p.reason)))),
      section("Balances", ["Player", "Before", "After", "Change"], balances(audit)),
      h("nav", { class: "pager", "aria-label": "Other rounds" },
        n > 1 ? link(tablePath(tableId, `/rounds/${n - 1}`), `← Round ${n - 1}`) : null, " ",
        link(tablePath(tableId, `/rounds/${n + 1}`), `Round ${n + 1} →`)));
  }).catch((error) => {
    if (!gone) loading.replaceWith(notice(error.message, "error"));
  });
  return { unmount() { gone = true; } };
}
