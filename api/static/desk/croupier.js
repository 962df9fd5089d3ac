// The croupier's panel (operator only): one form per command the table expects now, its inputs made from the
// bounds of `expects` alone (docs/api.md "The state"), so the panel knows no game's rules. Entries of one command
// that differ only in their player and their choices (punto banco's stake by each player on each spot) are one
// form: the player and each choice picked from a list, the other fields' bounds those of the entry picked. Each command is
// posted with If-Match (the version the panel shows) and an Idempotency-Key; the service's refusal is shown
// in its own words. The browser does not check the bounds itself (the forms do not validate): the service is
// the one that decides, and says why.

import { ApiError, api, newKey } from "./http.js";
import { card, clear, h, keepFocus, spoken, tablePath } from "./render.js";

function bounds(spec) {
  const parts = [];
  if (spec.min !== undefined && spec.max !== undefined) parts.push(`${spec.min} to ${spec.max}`);
  else if (spec.min !== undefined) parts.push(`at least ${spec.min}`);
  else if (spec.max !== undefined) parts.push(`at most ${spec.max}`);
  if (spec.multiple_of) parts.push(`a multiple of ${spec.multiple_of}`);
  if (spec.count !== undefined) parts.push(`${spec.count} of them`);
  if (spec.min_count !== undefined || spec.max_count !== undefined) {
    parts.push(`${spec.min_count ?? 1} to ${spec.max_count ?? "any number"} of them`);
  }
  if (spec.sum !== undefined) parts.push(`adding up to ${spec.sum}`);
  if (spec.optional) parts.push("optional");
  return parts.join(", ");
}

function firstNumber(spec) {
  const step = spec.multiple_of || 1;
  const low = spec.min ?? (spec.kind === "amount" ? 1 : 0);
  return Math.ceil(low / step) * step;
}

// An even share of `sum` over `count` amounts, each at least `min`.
function shares(spec) {
  const count = spec.count ?? 1;
  const low = spec.min ?? 0;
  if (spec.sum === undefined) return Array(count).fill(low);
  const spare = Math.max(spec.sum - count * low, 0);
  return Array.from({ length: count }, (_, i) => low + Math.floor(spare / count) + (i < spare % count ? 1 : 0));
}

let fieldIds = 0;

// The entries of `expects` grouped into forms: one group for the entries of a command whose fields are the same
// (by name and kind), so that they differ only in their player and their choices.
function groups(expects) {
  const found = new Map();
  for (const entry of expects) {
    const shape = `${entry.command}|${Object.entries(entry.fields || {}).map(([n, s]) => `${n}:${s.kind}`).join(",")}`;
    if (!found.has(shape)) found.set(shape, { command: entry.command, entries: [] });
    found.get(shape).entries.push(entry);
  }
  return [...found.values()];
}

// One field's input(s), and read(): its value as the command takes it (undefined: left out). `focus` names the
// field's first control across redraws of the panel (render.js keepFocus).
function fieldInput(name, spec, focus) {
  const id = `f${++fieldIds}`;
  const label = h("label", { for: id }, spoken(name), h("span", { class: "bounds" }, bounds(spec)));
  let control;
  let read;
  if (spec.kind === "int" || spec.kind === "amount") {
    control = h("input", { id, name, type: "number", inputmode: "numeric", min: spec.min, max: spec.max,
      step: spec.multiple_of || 1, value: spec.optional ? "" : String(firstNumber(spec)) });
    read = () => (control.value.trim() === "" ? undefined : Number(control.value));
  } else if ((spec.kind === "card" || spec.kind === "cards") && !spec.cards && !spec.sets) {
    // A hand the reader may not see (docs/api.md "What each role sees"): the croupier keys in the card(s) the
    // player shows, and the service refuses one he does not hold.
    control = h("input", { id, name, type: "text", spellcheck: "false", autocomplete: "off",
      placeholder: spec.kind === "card" ? "e.g. Kh" : "e.g. Kh 9s" });
    read = () => {
      const given = control.value.trim().split(/[\s,]+/).filter(Boolean);
      if (spec.kind === "card") return given[0];
      return given.length ? given : undefined;
    };
  } else if (spec.kind === "choice" || spec.kind === "card") {
    const options = spec.kind === "choice" ? spec.choices || [] : spec.cards || [];
    control = h("select", { id, name }, spec.optional ? h("option", { value: "" }, "—") : null,
      options.map((o) => h("option", { value: o }, spec.kind === "choice" ? spoken(o) : o)));
    read = () => (control.value === "" ? undefined : control.value);
  } else if (spec.kind === "cards" && spec.sets) {
    control = h("select", { id, name }, spec.sets.map((set, i) => h("option", { value: String(i) }, set.join(" "))));
    read = () => spec.sets[Number(control.value)];
  } else if (spec.kind === "cards") {
    const wanted = spec.count ?? spec.min_count ?? 1;
    const boxes = (spec.cards || []).map((c, i) => h("label", { class: "pick" },
      h("input", { type: "checkbox", value: c, checked: i < wanted }), card(c)));
    control = h("fieldset", { id, class: "picks" }, h("legend", { class: "sr" }, name), boxes);
    read = () => [...control.querySelectorAll("input:checked")].map((box) => box.value);
  } else if (spec.kind === "amounts") {
    const inputs = shares(spec).map((v, i) => h("input", { type: "number", inputmode: "numeric", min: spec.min,
      value: String(v), "aria-label": `${name} ${i + 1}` }));
    control = h("span", { id, class: "amounts" }, inputs);
    read = () => inputs.map((input) => Number(input.value));
  } else {
    control = h("input", { id, name, type: "text", placeholder: "JSON" }); // a kind this page does not know yet
    read = () => (control.value.trim() === "" ? undefined : JSON.parse(control.value));
  }
  const first = control.matches("input, select") ? control : control.querySelector("input");
  if (first) first.dataset.focus = focus;
  return { element: h("div", { class: "field" }, label, control), read };
}

// The panel for `state` (the table's latest): onDone(result) after each command recorded.
export function croupierPanel(tableId, { onDone, games = {} }) {
  const hint = h("p", { class: "hint", role: "status" });
  const said = h("div", { class: "said", "data-testid": "refusal", role: "alert" });
  const forms = h("div", { class: "commands" });
  const element = h("section", { class: "croupier", id: "croupier", tabindex: -1, "data-testid": "croupier",
    "aria-labelledby": "croupier-title" }, h("h2", { id: "croupier-title" }, "Croupier"), hint, said, forms);
  let pending = null; // the command last sent without a definitive answer, and its key
  let busy = false;

  async function send(expect, readers, form) {
    if (busy) return;
    const body = { command: expect.command, player: expect.player };
    try {
      for (const [name, read] of readers) {
        const v = read();
        if (v !== undefined) body[name] = v;
      }
    } catch {
      clear(said, `The field of ${spoken(expect.command)} is not JSON.`);
      return;
    }
    const text = JSON.stringify(body);
    // A resend of the very same command after no definitive answer (a 503, the network) reuses its key, so that
    // the service records it once whatever happened to the first attempt.
    const key = pending && pending.text === text && pending.version === form.dataset.version ? pending.key : newKey();
    pending = { text, key, version: form.dataset.version };
    busy = true;
    element.setAttribute("aria-busy", "true");
    clear(said);
    try {
      const result = await api(tablePath(tableId, "/commands"), { method: "POST", body,
        headers: { "If-Match": `"${form.dataset.version}"`, "Idempotency-Key": key } });
      pending = null;
      onDone(result);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      if (error.status !== 0 && error.status !== 503) pending = null;
      clear(said, h("strong", {}, `${spoken(expect.command)} by ${expect.player}: `), error.message,
        error.details().map((d) => h("span", { class: "detail" }, ` ${d}`)));
    } finally {
      busy = false;
      element.removeAttribute("aria-busy");
    }
  }

  // One form for a group of entries of one command (groups() below): the player and each choice field picked
  // from what the entries allow, the other fields drawn from the entry that matches the picks.
  function form(group, version, index) {
    const { command, entries } = group;
    const choices = Object.entries(entries[0].fields || {}).filter(([, spec]) => spec.kind === "choice").map(([n]) => n);
    const players = [...new Set(entries.map((e) => e.player))];
    const titleId = `cmd-${index}`;
    const who = players.length > 1 ? h("select", { id: `${titleId}-player`, name: "player",
      dataset: { focus: `${command} player` } }, players.map((p) => h("option", { value: p }, p))) : null;
    const picks = h("div", { class: "picks-line" });
    const rest = h("div", { class: "rest" });
    const button = h("button", { type: "submit", dataset: { command, player: players[0], focus: `${command} send` } },
      spoken(command));
    const described = games.commands?.[command]?.description;
    const element = h("form", { class: "command", novalidate: true, "aria-labelledby": titleId,
      dataset: { command, player: players[0], version: String(version) } },
    h("h3", { id: titleId }, h("span", { class: "name" }, spoken(command)),
      players.length > 1 ? null : [" by ", players[0]]),
    described ? h("p", { class: "about" }, described) : null,
    who ? h("div", { class: "field" }, h("label", { for: who.id }, "player"), who) : null,
    picks, rest, button);
    let selects = new Map();
    let inputs = [];

    const player = () => (who ? who.value : players[0]);
    const mine = () => entries.filter((e) => e.player === player());
    // The entry the picks name (the first of this player's where a pick is not one of its own).
    const matched = () => mine().find((e) => choices.every((n) => !selects.has(n)
      || (e.fields[n].choices || []).includes(selects.get(n).value))) || mine()[0];

    function drawPicks() {
      const before = new Map([...selects].map(([n, s]) => [n, s.value]));
      selects = new Map();
      clear(picks, choices.map((n) => {
        const options = [...new Set(mine().flatMap((e) => e.fields[n].choices || []))];
        const field = fieldInput(n, { kind: "choice", choices: options }, `${command} ${n}`);
        const select = field.element.querySelector("select");
        if (options.includes(before.get(n))) select.value = before.get(n);
        select.addEventListener("change", drawRest);
        selects.set(n, select);
        return field.element;
      }));
    }

    function drawRest() {
      const entry = matched();
      const kept = new Map(inputs.map(([n, f]) => [n, f.element.querySelector("input")?.value]));
      inputs = Object.entries(entry.fields || {}).filter(([n]) => !choices.includes(n))
        .map(([n, spec]) => [n, fieldInput(n, spec, `${command} ${n}`)]);
      for (const [n, field] of inputs) {
        const input = field.element.querySelector("input[type=number]");
        if (input && kept.get(n)) input.value = kept.get(n);
      }
      clear(rest, inputs.map(([, field]) => field.element));
      element.dataset.player = button.dataset.player = entry.player;
    }

    who?.addEventListener("change", () => { drawPicks(); drawRest(); });
    drawPicks();
    drawRest();
    element.addEventListener("submit", (event) => {
      event.preventDefault();
      const entry = matched();
      const readers = [...choices.map((n) => [n, () => selects.get(n).value]),
        ...inputs.map(([n, field]) => [n, field.read])];
      send({ command, player: entry.player }, readers, element);
    });
    return element;
  }

  // Drawn again at each version: a focus that was in the panel stays on the same control of the same command
  // by the same player, else goes to the first control of the first command the table now expects.
  function show(state) {
    const expects = state.expects || [];
    // Whose turn it is is public (waits_for); the forms are only this reader's own commands (expects).
    const waiting = [...new Set((state.waits_for || []).map((w) => `${spoken(w.command)} by ${w.player}`))];
    const waits = waiting.length ? `The table waits for ${waiting.join("; ")}. ` : "";
    clear(hint, h("span", { "data-testid": "waits-for" }, waits), `Commands act on the latest version, ${state.version}.`);
    const none = waiting.length ? "None of the commands the table waits for is yours to send now."
      : "The table expects no command now.";
    keepFocus(forms, () => clear(forms, expects.length ? groups(expects).map((g, i) => form(g, state.version, i))
      : h("p", { class: "none" }, none)), () => forms.querySelector("[data-focus]"));
  }

  return { element, show };
}
