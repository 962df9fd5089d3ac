// A table's finished rounds, oldest first, each linked to its audit and to the table at its first and last
// versions.

import { voidMark } from "./corrections.js";
import { tableFrame } from "./frame.js";
import { api } from "./http.js";
import { clear, h, link, when, notice, tablePath } from "./render.js";

export function mount(view, { params: [tableId] }) {
  let gone = false;
  const body = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Show more rounds");
  const status = h("p", { class: "count", role: "status" });
  let cursor = null;
  let count = 0;

  clear(view, tableFrame(tableId, "/rounds", "Rounds"), status,
    h("table", { class: "rounds", "data-testid": "rounds" },
      h("thead", {}, h("tr", {}, ["Round", "Versions", "Started", "Ended", "Summary"].map((t) => h("th", { scope: "col" }, t)))),
      body),
    more);

  const at = (version) => link(`${tablePath(tableId)}?version=${version}`, String(version));
  const row = (round) => h("tr", { dataset: { round: String(round.round) } },
    h("th", { scope: "row" }, link(tablePath(tableId, `/rounds/${round.round}`), `Round ${round.round}`)),
    h("td", { class: "num" }, at(round.first_version), " to ", at(round.last_version)),
    h("td", { class: "time" }, when(round.started_at)),
    h("td", { class: "time" }, when(round.ended_at)),
    h("td", {}, round.summary, voidMark(round)));

  let reading = false;

  // The button stays enabled while a page is read (disabled, it would drop a keyboard user's focus); once there
  // is nothing more, the focus it had goes to the first round it brought.
  async function page() {
    if (reading) return;
    reading = true;
    const query = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    try {
      const answer = await api(tablePath(tableId, `/rounds${query}`));
      if (gone) return;
      const rows = answer.rounds.map(row);
      body.append(...rows);
      count += answer.rounds.length;
      cursor = answer.next_cursor;
      if (!cursor && document.activeElement === more) (rows[0]?.querySelector("a") || view).focus();
      more.hidden = !cursor;
      const stopped = answer.index_error ? ` The read model stopped at version ${answer.index_error.version}: ${answer.index_error.message}` : "";
      clear(status, `${count} finished round${count === 1 ? "" : "s"}${cursor ? " so far" : ""}.${stopped}`);
    } catch (error) {
      if (!gone) view.append(notice(error.message, "error"));
    } finally {
      reading = false;
    }
  }

  more.addEventListener("click", page);
  page();
  return { unmount() { gone = true; } };
}
