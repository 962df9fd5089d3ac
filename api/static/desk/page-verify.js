// Verification, twice and independently: the service's own verdict (GET /tables/<id>/verify), and the
// browser's, which verify.js reaches from the public log, the keys and the signed head alone. The first
// failing version is linked to the table at that version. Receipts an auditor kept may be given to check too.

import { exportButtons, tableFrame } from "./frame.js";
import { api, eventsAfter } from "./http.js";
import { clear, h, link, notice, spoken, tablePath, value } from "./render.js";
import { verifyTable } from "./verify.js";

function verdictWords(ok) {
  return ok ? "ok" : "failed";
}

function versionLink(tableId, version, props = {}) {
  if (version === null || version === undefined) return "—";
  return link(`${tablePath(tableId)}?version=${version}`, `version ${version}`, props);
}

function serverPart(tableId, report) {
  const problems = report.problems || [];
  return [
    h("p", { class: `verdict ${verdictWords(report.ok)}`, "data-testid": "server-verdict",
      "data-verdict": verdictWords(report.ok) },
    report.ok ? "The service finds nothing wrong." : `The service lists ${problems.length} problem${problems.length === 1 ? "" : "s"}.`),
    h("dl", { class: "details" },
      h("dt", {}, "Chain"), h("dd", {}, value(report.chain)),
      h("dt", {}, "Commands run again"), h("dd", {}, String(report.commands_checked ?? "—")),
      h("dt", {}, "Rounds checked"), h("dd", {}, String(report.rounds_checked ?? "—")),
      h("dt", {}, "Shoes"), h("dd", {}, value(report.shoes))),
    problems.length ? h("ol", { class: "findings" }, problems.map((p) => h("li", {},
      versionLink(tableId, p.version), ` ${spoken(p.check)}: ${p.message}`))) : null,
  ];
}

function browserPart(tableId, result, events) {
  const findings = result.findings || [];
  const failed = result.failedVersion;
  const verdict = h("p", { class: `verdict ${verdictWords(result.ok)}`, "data-testid": "verdict",
    "data-verdict": verdictWords(result.ok) },
  result.ok ? `This browser checked ${events} events and finds nothing wrong.`
    : ["This browser finds the log failing first at ",
      versionLink(tableId, failed, { "data-testid": "failed-version", class: "first-failure" }), "."]);
  if (!result.ok && failed !== null && failed !== undefined) verdict.dataset.failedVersion = String(failed);
  const hidden = result.hidden || [];
  // Events shown with a face-down card hidden from this token: their digests are over the full events.
  const unchecked = hidden.length ? h("p", { "data-testid": "hidden" }, `${hidden.length} event`
    + `${hidden.length === 1 ? "" : "s"} hide a card from this token (the first at version ${hidden[0]}): `
    + "their own digests are checked once the round is over and its cards are shown.") : null;
  return [verdict, unchecked,
    findings.length ? h("ol", { class: "findings" }, findings.map((f) => h("li", {
      class: f.version === failed ? "first" : null, dataset: { version: String(f.version ?? "") } },
    versionLink(tableId, f.version), ` ${spoken(f.check)}: ${f.message}`))) : null];
}

// Receipts as scripts/demo --receipts keeps them: one JSON object a line (a JSON array is read too).
function readReceipts(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) return JSON.parse(trimmed);
  return trimmed.split(/\r?\n/).filter((line) => line.trim()).map((line) => JSON.parse(line));
}

export function mount(view, { params: [tableId] }) {
  let gone = false;
  const server = h("section", { class: "verify-part", "aria-labelledby": "server-title" },
    h("h2", { id: "server-title" }, "The service's verdict"), h("p", { class: "loading" }, "Asking the service…"));
  const browser = h("section", { class: "verify-part", "aria-labelledby": "browser-title" },
    h("h2", { id: "browser-title" }, "This browser's own check"), h("p", { class: "loading" }, "Reading the log…"));
  const file = h("input", { type: "file", id: "receipts", accept: ".jsonl,.ndjson,.json,application/json,text/plain" });
  clear(view, tableFrame(tableId, "/verify", "Verification"), exportButtons(tableId),
    h("div", { class: "verify-grid" }, server, browser),
    h("form", { class: "receipts", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "receipts" }, "Receipts you kept (JSON lines), to check them too"), file));

  api(tablePath(tableId, "/verify")).then((report) => {
    if (!gone) clear(server, h("h2", { id: "server-title" }, "The service's verdict"), serverPart(tableId, report));
  }).catch((error) => {
    if (!gone) clear(server, h("h2", { id: "server-title" }, "The service's verdict"), notice(error.message, "error"));
  });

  let material = null;
  async function check(receipts) {
    clear(browser, h("h2", { id: "browser-title" }, "This browser's own check"), h("p", { class: "loading" }, "Checking…"));
    try {
      material ??= await Promise.all([eventsAfter(tableId, 0), api("/keys"), api(tablePath(tableId, "/head"))]);
      const [events, keys, head] = material;
      const result = await verifyTable({ events, keys, head, receipts, tableId });
      if (!gone) clear(browser, h("h2", { id: "browser-title" }, "This browser's own check"), browserPart(tableId, result, events.length));
    } catch (error) {
      if (!gone) clear(browser, h("h2", { id: "browser-title" }, "This browser's own check"), notice(error.message || String(error), "error"));
    }
  }

  file.addEventListener("change", async () => {
    if (!file.files.length) return;
    let receipts;
    try {
      receipts = readReceipts(await file.files[0].text());
    } catch {
      browser.append(notice("That file is not JSON lines of receipts.", "error"));
      return;
    }
    check(receipts);
  });
  check(undefined);
  return { unmount() { gone = true; } };
}
