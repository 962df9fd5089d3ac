// What every view of one table shows around itself: its title, the tabs to its other views, and the exports an
// auditor keeps (the whole log as JSON lines, and the head the service signed).

import { ApiError, api, raw, saveFile } from "./http.js";
import { clear, h, link, tablePath } from "./render.js";

const TABS = [["", "Table"], ["/rounds", "Rounds"], ["/verify", "Verification"]];

export function tableFrame(tableId, active, title) {
  document.title = `${title} · ${tableId.slice(0, 8)} · Zametano desk`;
  return [
    h("h1", {}, title, " ", h("code", { class: "id", title: tableId }, tableId)),
    h("nav", { class: "tabs", "aria-label": "Views of this table" },
      TABS.map(([rest, name]) => link(tablePath(tableId, rest), name,
        rest === active ? { "aria-current": "page", class: "active" } : {}))),
  ];
}

export function exportButtons(tableId) {
  const status = h("span", { class: "export-status", role: "status" });
  const run = (work) => async () => {
    clear(status, "Preparing the download…");
    try {
      await work();
      clear(status);
    } catch (error) {
      clear(status, error instanceof ApiError ? error.message : String(error));
    }
  };
  const log = async () => {
    const response = await raw(tablePath(tableId, "/events"), { accept: "application/x-ndjson" });
    saveFile(`${tableId}.ndjson`, await response.blob());
  };
  const head = async () => {
    const signed = await api(tablePath(tableId, "/head"));
    const text = `${JSON.stringify(signed, null, 2)}\n`;
    saveFile(`${tableId}-head-${signed.version}.json`, new Blob([text], { type: "application/json" }));
  };
  return h("div", { class: "exports", role: "group", "aria-label": "Exports" },
    h("button", { type: "button", "data-testid": "export-log", onclick: run(log),
      title: "Every event of the table, one JSON object a line" }, "Download the log (NDJSON)"),
    h("button", { type: "button", "data-testid": "export-head", onclick: run(head),
      title: "The table's head and the receipt the service signed for it" }, "Download the signed head"),
    status);
}
