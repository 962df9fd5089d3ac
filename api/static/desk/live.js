// Following the service live: its Server-Sent Events streams read with fetch() and a ReadableStream (an
// EventSource cannot send the Authorization header), resumed with Last-Event-ID after any break. Where the
// service does not stream (it answers 404, 406 or anything but text/event-stream) the desk polls instead, and
// keeps polling; a 503 (too many streams) is polled through for its Retry-After, then the stream is tried again.

import { api, authHeaders, eventsAfter, root, sleep } from "./http.js";

// A stream that says nothing for this long (not even its heartbeat) is taken as broken and opened again.
const SILENCE_MS = 45000;
const MAX_BACKOFF_MS = 15000;

// Reads text/event-stream (the WHATWG format) from `body`: calls onMessage({id, event, data}) for each message
// and onActivity() for every chunk (heartbeat comments included). Resolves when the stream ends.
export async function readEvents(body, onMessage, onActivity = () => {}) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let event = "";
  let id = null;
  const line = (text) => {
    if (text === "") {
      if (data.length) onMessage({ id, event: event || "message", data: data.join("\n") });
      data = [];
      event = "";
      return;
    }
    if (text.startsWith(":")) return; // a comment: the heartbeat
    const colon = text.indexOf(":");
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
    else if (field === "id" && !value.includes("\0")) id = value;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onActivity();
    buffer += value;
    let end;
    while ((end = /\r\n|\r|\n/.exec(buffer)) !== null) {
      if (end[0] === "\r" && end.index === buffer.length - 1) break; // its "\n" may come in the next chunk
      line(buffer.slice(0, end.index));
      buffer = buffer.slice(end.index + end[0].length);
    }
  }
}

// One attempt at the stream at `path`: "ended" once it closes, "unsupported" where the service does not
// stream, {retryAfter} on a 503, "failed" when it could not be asked.
async function streamOnce(path, lastEventId, onMessage, onMode, signal) {
  const inner = new AbortController();
  const abort = () => inner.abort();
  signal.addEventListener("abort", abort, { once: true });
  let timer = setTimeout(abort, SILENCE_MS);
  const alive = () => {
    clearTimeout(timer);
    timer = setTimeout(abort, SILENCE_MS);
  };
  try {
    const headers = authHeaders({ Accept: "text/event-stream" });
    const last = lastEventId();
    if (last !== null && last !== undefined) headers["Last-Event-ID"] = String(last);
    const response = await fetch(root() + path, { headers, signal: inner.signal, cache: "no-store" });
    const type = response.headers.get("Content-Type") || "";
    if (response.ok && type.startsWith("text/event-stream")) {
      onMode("stream");
      await readEvents(response.body, onMessage, alive);
      return "ended";
    }
    response.body?.cancel().catch(() => {});
    if (response.status === 503) return { retryAfter: Number(response.headers.get("Retry-After")) || 5 };
    if (response.status === 401 || response.status === 403) return "failed";
    return "unsupported";
  } catch {
    return "failed";
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", abort);
  }
}

// Follows `path`: the stream while the service gives one, else `poll()` every `intervalMs`. onMode is told
// "stream", "polling" or "offline" as that changes.
export function follow({ path, lastEventId, onMessage, poll, intervalMs, onMode }) {
  const controller = new AbortController();
  const { signal } = controller;
  let mode = null;
  const setMode = (next) => {
    if (next !== mode) {
      mode = next;
      onMode(next);
    }
  };
  const pollFor = async (ms) => {
    const until = ms === Infinity ? Infinity : Date.now() + ms;
    while (!signal.aborted && Date.now() < until) {
      try {
        await poll(signal);
        setMode("polling");
      } catch (error) {
        if (signal.aborted) return;
        setMode("offline");
      }
      await sleep(intervalMs, signal);
    }
  };
  (async () => {
    let backoff = 1000;
    while (!signal.aborted) {
      const outcome = await streamOnce(path, lastEventId, onMessage, setMode, signal);
      if (signal.aborted) return;
      if (outcome === "ended") {
        backoff = 1000;
        await sleep(250, signal);
      } else if (outcome === "unsupported") {
        await pollFor(Infinity);
      } else if (outcome.retryAfter) {
        await pollFor(outcome.retryAfter * 1000);
      } else {
        setMode("offline");
        await poll(signal).catch(() => {}); // so that nothing is missed while the stream is away
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  })();
  return { stop: () => controller.abort() };
}

// Follows one table's log after version `after`: onEvents(events) gets every new event exactly once, in
// version order, whether it came by the stream, by polling, or by the page's own commands (deliver()).
export function followTable(tableId, { after, onEvents, onMode }) {
  let last = after;
  let queue = Promise.resolve();
  const path = `/tables/${encodeURIComponent(tableId)}/events`;
  const headPath = `/tables/${encodeURIComponent(tableId)}/head`;
  const take = (events) => {
    const fresh = events.filter((e) => e.version > last).sort((a, b) => a.version - b.version);
    const run = [];
    for (const event of fresh) {
      if (event.version !== last + 1) break;
      run.push(event);
      last = event.version;
    }
    if (run.length) onEvents(run);
    return fresh.length > run.length; // a gap: some events were missed
  };
  const catchUp = () => {
    queue = queue.then(async () => take(await eventsAfter(tableId, last))).catch(() => {});
    return queue;
  };
  const deliver = (events) => {
    if (take(events)) catchUp();
  };
  const follower = follow({
    path,
    lastEventId: () => last,
    onMessage: (message) => {
      if (message.event !== "table-event") return;
      try {
        deliver([JSON.parse(message.data)]);
      } catch {
        catchUp();
      }
    },
    poll: async (signal) => {
      const head = await api(headPath, { signal });
      if (head.version > last) await catchUp();
    },
    intervalMs: 2000,
    onMode,
  });
  return { stop: follower.stop, deliver, last: () => last };
}

// Follows the heads of every table (GET /events): onHead({table_id, game, version, digest, timestamp, ...}).
// Without the stream, `refresh()` (the page's own reading of the list) runs every 5 s instead.
export function followHeads({ onHead, refresh, onMode }) {
  let lastId = null;
  let caughtUp = false;
  return follow({
    path: "/events",
    lastEventId: () => lastId,
    onMessage: (message) => {
      if (message.id !== null) lastId = message.id;
      if (message.event !== "head") return;
      try {
        onHead(JSON.parse(message.data));
      } catch {
        /* a message this page cannot read: the next head of the table says the same and more */
      }
    },
    poll: refresh,
    intervalMs: 5000,
    onMode: (mode) => {
      // The first stream starts where the log stands when it connects: a table opened between the page's
      // first reading and then would be in neither, so the list is read once more now.
      if (mode === "stream" && !caughtUp) {
        caughtUp = true;
        Promise.resolve(refresh()).catch(() => {});
      }
      onMode(mode);
    },
  });
}
