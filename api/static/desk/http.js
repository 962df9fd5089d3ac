// The desk's calls to the API: the token the person entered (kept in sessionStorage, so it goes with the tab
// and no further), the one error body read into words, downloads, and keys for idempotent commands.

const TOKEN_KEY = "zametano.desk.token";

export function root() {
  return document.body.dataset.root || "";
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(extra = {}) {
  const headers = { ...extra };
  const given = token();
  if (given) headers.Authorization = `Bearer ${given}`;
  return headers;
}

// A refusal or failure of the API, in the words of its error body (docs/api.md "Errors").
export class ApiError extends Error {
  constructor(status, body, fallback) {
    const message = body && typeof body.message === "string" && body.message ? body.message : fallback;
    super(message);
    this.status = status;
    this.body = body || {};
  }

  // Each part of the request at fault, with its messages: "amount: ...".
  details() {
    const errors = this.body.errors && typeof this.body.errors === "object" ? this.body.errors : {};
    return Object.entries(errors)
      .flatMap(([name, messages]) => (Array.isArray(messages) ? messages : [messages])
        .filter((m) => m !== this.message)
        .map((m) => `${name}: ${m}`));
  }
}

function fallbackWords(response) {
  return `The service answered HTTP ${response.status} ${response.statusText}.`.replace(" .", ".");
}

export async function raw(path, { method = "GET", body, headers = {}, accept = "application/json", signal } = {}) {
  const init = { method, headers: authHeaders({ Accept: accept, ...headers }), signal, cache: "no-store" };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(root() + path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, null, "The service cannot be reached: is it running?");
  }
  if (!response.ok) {
    let parsed = null;
    try {
      parsed = await response.json();
    } catch {
      parsed = null;
    }
    const error = new ApiError(response.status, parsed, fallbackWords(response));
    if (response.status === 401) error.message = `This page needs a token the service knows: enter one above. ${error.message}`;
    throw error;
  }
  return response;
}

export async function api(path, options = {}) {
  const response = await raw(path, options);
  return response.json();
}

// Every page of a cursor-paged list (GET /tables, /rounds), up to `most` items.
export async function allPages(path, key, { most = 20000, signal } = {}) {
  const items = [];
  let cursor = null;
  const joiner = path.includes("?") ? "&" : "?";
  do {
    const page = await api(`${path}${joiner}limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { signal });
    items.push(...page[key]);
    cursor = page.next_cursor;
  } while (cursor && items.length < most);
  return { items, complete: !cursor };
}

// Every event of a table after `after`, in version order.
export async function eventsAfter(tableId, after, { signal } = {}) {
  const events = [];
  let next = after;
  while (next !== null && next !== undefined) {
    const page = await api(`/tables/${encodeURIComponent(tableId)}/events?after=${next}&limit=1000`, { signal });
    events.push(...page.events);
    next = page.next_after;
  }
  return events;
}

// A file for the person to keep, from an API answer (the token goes in a header, so no plain link would do).
export function saveFile(name, blob) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// An Idempotency-Key: random, so that only a resend of the very same command can repeat it.
export function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16)); // randomUUID needs a secure context
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}
