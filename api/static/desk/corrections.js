// Corrections in the desk (docs/api.md "Corrections"): a voided round marked as void with its reason wherever a
// round is listed, and, for a supervisor, a panel to request a round's void and to approve or refuse another
// supervisor's request. The service decides everything (who may, which round); the panel shows its refusals in
// its own words. Kept in a module of its own: the pages only call voidMark and mountCorrections.

import { ApiError, api, newKey } from "./http.js";
import { clear, h, tablePath } from "./render.js";

// The documented reasons, in the order docs/api.md lists them.
const REASONS = {
  "card-exposed": "a card shown before its time",
  misdeal: "cards out of order, to the wrong hand, too many",
  "dealt-before-close": "dealt before the stakes were closed in the room",
  "shoe-fault": "the shoe dropped, damaged or wrongly built",
  "wrong-stake": "a stake recorded for the wrong player, spot or amount",
  "equipment-failure": "a terminal or the service failed during the round",
  other: "anything else: the note says what",
};

// "void: <reason>" for a round voided (a row of GET /rounds, a round's audit, a player's round), else null.
export function voidMark(round) {
  const voided = round && round.void;
  if (!voided) return null;
  const how = voided.settled ? "its payments reversed" : "its stakes returned";
  return h("span", { class: "badge false void", "data-testid": "void", title: `${REASONS[voided.reason] || ""}; ${how}` },
    ` void: ${voided.reason} `, h("span", { class: "why" }, `(${how}, request ${voided.request})`));
}

// The supervisor's panel under a table, for a supervisor's token (or a service without tokens, where the
// supervisor names himself). Reads the table's state itself, and again after each correction it sends.
export async function mountCorrections(view, tableId, desk) {
  if (desk.role !== "supervisor" && desk.role !== "open") return null;
  const me = desk.role === "supervisor" ? (await api("/me")).name : null;
  const said = h("div", { class: "said", role: "alert", "data-testid": "correction-refusal" });
  const pending = h("div", { class: "pending", "data-testid": "pending-corrections" });
  const name = h("input", { id: "supervisor-name", type: "text", autocomplete: "off", value: me || "", readonly: me ? true : null });
  const round = h("input", { id: "void-round", type: "number", min: 1, inputmode: "numeric" });
  const reason = h("select", { id: "void-reason" },
    Object.entries(REASONS).map(([code, words]) => h("option", { value: code, title: words }, code)));
  const note = h("input", { id: "void-note", type: "text", maxlength: 500, autocomplete: "off" });
  const request = h("form", { class: "command", "data-testid": "request-void", novalidate: true },
    h("h3", {}, "Request a round's void"),
    h("label", { for: "supervisor-name" }, "Supervisor"), name,
    h("label", { for: "void-round" }, "Round", h("span", { class: "bounds" }, "the table's latest")), round,
    h("label", { for: "void-reason" }, "Reason"), reason,
    h("label", { for: "void-note" }, "Note", h("span", { class: "bounds" }, "optional, up to 500 characters")), note,
    h("button", { type: "submit" }, "request_correction"));
  const element = h("section", { class: "croupier corrections", id: "corrections", "data-testid": "corrections",
    "aria-labelledby": "corrections-title" }, h("h2", { id: "corrections-title" }, "Corrections"),
  h("p", { class: "hint" }, "A void takes effect once a second supervisor approves it."), said, request, pending);

  async function send(command, fields) {
    clear(said);
    const body = { command, player: name.value.trim(), ...fields };
    try {
      await api(tablePath(tableId, "/commands"), { method: "POST", body, headers: { "Idempotency-Key": newKey() } });
      await refresh();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      clear(said, h("strong", {}, `${command}: `), error.message);
    }
  }

  function decision(asked) {
    const why = h("input", { type: "text", maxlength: 500, "aria-label": `Why refuse request ${asked.request}` });
    return h("li", { dataset: { request: String(asked.request) } },
      `Request ${asked.request}: round ${asked.round} void (${asked.reason}${asked.note ? `: ${asked.note}` : ""}), `
        + `asked by ${asked.requested_by}. `,
      h("button", { type: "button", onclick: () => send("approve_correction", { request: asked.request }) }, "Approve"),
      " ", why, " ",
      h("button", { type: "button", onclick: () => send("refuse_correction", { request: asked.request,
        ...(why.value.trim() ? { note: why.value.trim() } : {}) }) }, "Refuse"));
  }

  async function refresh() {
    const state = await api(tablePath(tableId));
    if (!round.value && state.round) round.value = String(state.round);
    const asked = state.corrections || [];
    clear(pending, h("h3", {}, "Requests waiting for a second supervisor"),
      asked.length ? h("ul", {}, asked.map(decision)) : h("p", { class: "none" }, "none"));
  }

  request.addEventListener("submit", (event) => {
    event.preventDefault();
    send("request_correction", { kind: "void_round", round: Number(round.value), reason: reason.value,
      ...(note.value.trim() ? { note: note.value.trim() } : {}) });
  });
  view.append(element);
  await refresh();
  return element;
}
