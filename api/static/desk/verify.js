/*
 * verify.js: a Zametano table checked in the browser, from its public log, without trusting the server.
 *
 * A plain ES module (no dependency, no build step) that anyone can read alone. It uses the browser's
 * WebCrypto only (SHA-256, HMAC-SHA256, Ed25519), so it runs in a secure context (https, or a page of
 * localhost / 127.0.0.1). It makes the checks of scripts/verify-shoe and scripts/audit, as
 * docs/design.md describes them for re-implementers ("The event envelope and the hash chain", "The fair
 * shuffle", "Signing keys, receipts and heads", "Checking in the browser"):
 *
 *   chain    the log holds every version from 1 on, once and in order; every event has the envelope
 *            (version, type, timestamp, actor, data, digest); its timestamp is RFC 3339 and comes after
 *            the one before; its digest is sha256 of the canonical JSON of {prev, version, type,
 *            timestamp, actor, data without "seed"}, prev being the digest recorded at the version before
 *            ("" for version 1). Each event is linked to the recorded digest before it, so every altered
 *            event is named, not only the first. Chain rule 2: a first event (TableOpened) whose data
 *            records a table_id must name the table whose log it is (`tableId`, else the head's), so
 *            events moved to another table's id are named; a log without it is under rule 1. Chain rule 3
 *            ("chain": 3 in that data, with its table_id): each concealed part of an event is chained as
 *            its commitment, "commit:" + sha256 of the canonical JSON of {salt, value}, made here from the
 *            salt and the value shown (the event's `salts`, pointer -> salt) or taken as given (its
 *            `concealed`, pointer -> commitment, the value shown "??" or null): every digest is recomputed
 *            whatever the reader is shown, and a part shown hidden without a commitment, a pointer to
 *            nothing or in both, a salt or a commitment not of its form is a finding at its version.
 *   cards    every shoe: shuffled once, cut at most once and before its first card, dealt position after
 *            position from 0 (burns included), no seed shown before its ShoeRevealed; once revealed, the
 *            seed is 32 bytes whose sha256 is the commitment recorded at the shuffle, and every dealt card
 *            is the card the seed puts there (HMAC-SHA256 stream, Fisher-Yates with rejection sampling,
 *            then the cut). A shoe not revealed yet cannot be checked, and is no failure.
 *   receipt  the head (GET /tables/<id>/head) and any receipts given: signed with Ed25519 by a key of
 *            GET /keys (key_id = first 16 hex digits of sha256 of the raw key) over the canonical JSON of
 *            the receipt without its signature; and the log holds the signed version with the signed
 *            digest and timestamp. One receipt holds every event up to its version.
 *
 * What it cannot see: the game's rules and money (the server's /verify and the round audits replay every
 * command), the snapshots and the read model (a log cut short behind them), or a seed that was changed in
 * the store before it was revealed except through its commitment. A log rewritten and chained again by
 * someone with the database, or cut at the end, verifies here as it does everywhere else; only a receipt
 * kept from before (a heads file, a terminal's saved command responses) shows it: pass those as receipts.
 *
 *   import { verifyTable, readTable } from "/desk/static/verify.js";
 *   const table = await readTable("", tableId, { token });   // the head first, then the log, then the keys
 *   const result = await verifyTable({ ...table, receipts: keptReceipts });
 *   // result: { ok, failedVersion, findings: [{ version, check, message }], events, hidden, chainRule, shoes, receipts }
 *
 * `ok` is true when nothing was found; `failedVersion` is the lowest version a finding names (null when
 * none names one); findings are in version order. `shoes` lists each shoe ({shoe, deck, decks, cut,
 * dealt, revealed, ok}: ok null while unrevealed) and `receipts` counts the signatures verified. `chainRule`
 * is 1, 2 or 3. `hidden` lists, under rules 1 and 2, the versions shown with a part hidden from this reader
 * (a face-down card not shown yet): their digests cannot be recomputed, every other link is; once the round
 * is over and its cards are shown, nothing is hidden and the whole chain is checked. Under rule 3 it is
 * always empty: every digest is checked.
 * verifyTable throws (rather than answering "failed") when the browser cannot check at all: no WebCrypto
 * (an insecure page) or no Ed25519 in it.
 */

const ALGORITHM = "hmac-sha256-fisher-yates-v1";
const RANKS = "23456789TJQKA";
const SUITS = "shdc";
const SEED_BYTES = 32;
const ENVELOPE = ["version", "type", "timestamp", "actor", "data", "digest"];
const RECEIPT_FIELDS = ["table_id", "version", "digest", "timestamp", "key_id", "signature"];
const SHOE_EVENTS = ["ShoeShuffled", "ShoeCut", "CardDealt", "ShoeRevealed"];
const UNCHAINED = "seed"; // a revealed seed is bound by its commitment, not by the chain
const BATCH = 256; // digests asked of WebCrypto at once
const encoder = new TextEncoder();

// --- canonical JSON: Python's json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False) --

/** Python sorts keys by code point; JavaScript's default sort compares UTF-16 units, which order the
 * characters above U+FFFF before U+E000..U+FFFF. */
function byCodePoint(a, b) {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i);
    const y = b.codePointAt(j);
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return (i < a.length) - (j < b.length);
}

/** A float as Python's repr writes it: the shortest digits that read back (which toExponential gives),
 * in fixed notation unless the exponent is below -4 or above 15. */
function pythonFloat(x) {
  const [mantissa, exp] = x.toExponential().split("e");
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace(/^-/, "").replace(".", "");
  const exponent = Number(exp);
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${body}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  return `${sign}${whole}.${digits.slice(exponent + 1) || "0"}`;
}

function canonicalNumber(n) {
  if (!Number.isFinite(n)) throw new Error(`${n} has no JSON form`);
  if (Number.isInteger(n)) {
    // Above 2**53 a double no longer holds every whole number: the text the server hashed is lost.
    if (!Number.isSafeInteger(n)) throw new Error(`the number ${n} is beyond what a browser reads exactly`);
    return String(n);
  }
  return pythonFloat(n);
}

/**
 * The canonical JSON of a value, as the server hashes and signs it. Strings escape exactly as Python's
 * do with ensure_ascii=False (JSON.stringify escapes the same characters: ", \, and the controls below
 * U+0020, as \b \t \n \f \r or \u00xx); other characters stay as they are. The service records only
 * whole numbers; a float that is a whole number (2.0) cannot be told from 2 once parsed.
 */
export function canonicalJson(value) {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return canonicalNumber(value);
    case "string":
      return JSON.stringify(value);
    case "object":
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
      return `{${Object.keys(value)
        .sort(byCodePoint)
        .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`)
        .join(",")}}`;
    default:
      throw new Error(`a ${typeof value} has no JSON form`);
  }
}

// --- bytes and WebCrypto ------------------------------------------------------------------------------

function subtle() {
  const found = globalThis.crypto && globalThis.crypto.subtle;
  if (!found) {
    throw new Error("this page has no WebCrypto: open it over https or from localhost to verify in the browser");
  }
  return found;
}

function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The bytes of a hex string (either case, as Python's bytes.fromhex), or null when it is not hex. */
function fromHex(text) {
  if (typeof text !== "string" || text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) return null;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i += 1) bytes[i] = parseInt(text.substr(2 * i, 2), 16);
  return bytes;
}

/** base64url with or without its "=" padding (the receipt format); null for anything else. */
function fromBase64url(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return null;
  const bare = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  try {
    return Uint8Array.from(atob(bare + "=".repeat((4 - (bare.length % 4)) % 4)), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

async function sha256Hex(bytes) {
  return hex(await subtle().digest("SHA-256", bytes));
}

// --- the fair shuffle (docs/design.md "The fair shuffle"; domain/shuffle.py) ------------------------------

/** The unshuffled order: per deck, suits s h d c, ranks 2..A within a suit. */
export function newDeck(decks) {
  const cards = [];
  for (let d = 0; d < decks; d += 1) for (const s of SUITS) for (const r of RANKS) cards.push(r + s);
  return cards;
}

/** 32-bit big-endian words of the blocks HMAC-SHA256(key=seed, msg=str(k)) for k = 0, 1, 2, ... */
class WordStream {
  constructor(key) {
    this.key = key;
    this.k = 0;
    this.words = [];
    this.at = 0;
  }

  async next() {
    if (this.at === this.words.length) {
      // A shoe takes a block for about every eight cards: several are asked of WebCrypto at once.
      const blocks = await Promise.all(
        Array.from({ length: 16 }, (_, i) => subtle().sign("HMAC", this.key, encoder.encode(String(this.k + i)))),
      );
      this.k += blocks.length;
      this.words = blocks.flatMap((block) => {
        const view = new DataView(block);
        return Array.from({ length: block.byteLength / 4 }, (_, i) => view.getUint32(4 * i, false));
      });
      this.at = 0;
    }
    const word = this.words[this.at];
    this.at += 1;
    return word;
  }
}

/** The shoe in dealing order: Fisher-Yates driven by the seed's stream, rejection sampling so that every
 * order is equally likely, then the cut (the card at CardDealt.position p is shoe[p]). */
export async function shoeOrder(seedHex, decks, cut = 0) {
  const seed = fromHex(seedHex);
  if (seed === null || seed.length !== SEED_BYTES) throw new Error(`a shuffle seed is ${SEED_BYTES} bytes in hex`);
  const key = await subtle().importKey("raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const stream = new WordStream(key);
  const cards = newDeck(decks);
  for (let i = cards.length - 1; i > 0; i -= 1) {
    const n = i + 1;
    const limit = 2 ** 32 - (2 ** 32 % n);
    let u = await stream.next();
    while (u >= limit) u = await stream.next();
    const j = u % n;
    [cards[i], cards[j]] = [cards[j], cards[i]];
  }
  return cards.slice(cut).concat(cards.slice(0, cut));
}

// --- the chain (docs/design.md "The event envelope and the hash chain"; domain/chain.py) -----------------

/** The digest an event must carry, given the digest recorded at the version before it; `data` is its chained
 * data where that is not its data without the seed (chain rule 3: chainedData). */
export async function eventDigest(prev, event, data = null) {
  if (data === null) data = Object.fromEntries(Object.entries(event.data).filter(([key]) => key !== UNCHAINED));
  const envelope = {
    prev,
    version: event.version,
    type: event.type,
    timestamp: event.timestamp,
    actor: event.actor,
    data,
  };
  return sha256Hex(encoder.encode(canonicalJson(envelope)));
}

// --- concealed parts (docs/design.md "Concealed parts (chain rule 3)") ------------------------------------

const HIDDEN = "??"; // a face-down card as shown to a reader it is hidden from (a stood total: null)
const SALT = /^[0-9a-f]{32}$/;
const COMMITMENT = /^commit:[0-9a-f]{64}$/;
const ARRAY_INDEX = /^(0|[1-9][0-9]{0,17})$/;

/** What a rule-3 digest covers in place of a concealed part: "commit:" + sha256 of {salt, value}. */
export async function commitmentTo(salt, value) {
  return `commit:${await sha256Hex(encoder.encode(canonicalJson({ salt, value })))}`;
}

/** The reference tokens of a JSON Pointer (RFC 6901) naming a part inside an event's data, or null. */
function pointerTokens(pointer) {
  if (typeof pointer !== "string" || !pointer.startsWith("/") || /~(?![01])/.test(pointer)) return null;
  return pointer.slice(1).split("/").map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function pointerOf(tokens) {
  return tokens.map((token) => `/${String(token).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");
}

/** [container, key] of the part the tokens name in data, or null when there is none. */
function partAt(data, tokens) {
  let node = data;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i];
    let key;
    if (isObject(node) && Object.prototype.hasOwnProperty.call(node, token)) key = token;
    else if (Array.isArray(node) && ARRAY_INDEX.test(token) && Number(token) < node.length) key = Number(token);
    else return null;
    if (i === tokens.length - 1) return [node, key];
    node = node[key];
  }
  return null;
}

/** A copy of node with the part the tokens name set to value (only the containers on the way copied). */
function replaced(node, tokens, value) {
  if (!tokens.length) return value;
  const copy = Array.isArray(node) ? [...node] : { ...node };
  const key = Array.isArray(node) ? Number(tokens[0]) : tokens[0];
  // defineProperty, not assignment: a key "__proto__" (which JSON.parse makes an own key) stays a key
  Object.defineProperty(copy, key, { value: replaced(node[key], tokens.slice(1), value), enumerable: true,
    writable: true, configurable: true });
  return copy;
}

/** Where data shows a part hidden ("??", or a stood hand's total null) that no commitment stands for. */
function hiddenWithoutCommitment(data, type) {
  if (type === "HandStood" && data.total === null) return "/total";
  const stack = [[data, []]];
  while (stack.length) {
    const [node, path] = stack.pop();
    if (node === HIDDEN) return pointerOf(path);
    if (Array.isArray(node)) node.forEach((child, index) => stack.push([child, [...path, index]]));
    else if (isObject(node)) Object.entries(node).forEach(([key, child]) => stack.push([child, [...path, key]]));
  }
  return null;
}

/** What is wrong with a rule-3 event's salts and concealed parts as given, before any digest, or null. */
function concealmentProblem(event) {
  const salts = "salts" in event ? event.salts : {};
  const concealed = "concealed" in event ? event.concealed : {};
  if (!isObject(salts)) return "its salts are not a JSON object from pointer to salt";
  if (!isObject(concealed)) return "its concealed parts are not a JSON object from pointer to commitment";
  for (const [pointer, salt] of Object.entries(salts)) {
    if (typeof salt !== "string" || !SALT.test(salt)) {
      return `the salt of ${JSON.stringify(pointer)} is not 32 lowercase hex digits`;
    }
  }
  for (const [pointer, commitment] of Object.entries(concealed)) {
    if (typeof commitment !== "string" || !COMMITMENT.test(commitment)) {
      return `the commitment of ${JSON.stringify(pointer)} is not "commit:" and 64 lowercase hex digits`;
    }
  }
  const both = Object.keys(salts).find((pointer) => Object.prototype.hasOwnProperty.call(concealed, pointer));
  if (both !== undefined) return `${JSON.stringify(both)} is both among its salts and concealed`;
  const paths = [];
  for (const pointer of [...Object.keys(salts), ...Object.keys(concealed)]) {
    const tokens = pointerTokens(pointer);
    const place = tokens && !(tokens.length === 1 && tokens[0] === UNCHAINED) ? partAt(event.data, tokens) : null;
    if (!place) return `${JSON.stringify(pointer)} names no part of its data`;
    const shownThere = place[0][place[1]];
    if (Object.prototype.hasOwnProperty.call(concealed, pointer) && shownThere !== HIDDEN && shownThere !== null) {
      return `${JSON.stringify(pointer)} is concealed from this reader, yet its data shows a value there, `
        + 'not "??" or null';
    }
    paths.push([tokens, pointer]);
  }
  for (const [outer, outerPointer] of paths) {
    for (const [inner, innerPointer] of paths) {
      if (inner !== outer && inner.length > outer.length && outer.every((token, i) => inner[i] === token)) {
        return `${JSON.stringify(outerPointer)} and ${JSON.stringify(innerPointer)} name parts one inside the other`;
      }
    }
  }
  return null;
}

/**
 * The data a rule-3 event's digest covers: its data without the seed, each concealed part replaced by its
 * commitment, made from the salt and the value shown (a part in `salts`) or as given (a part in
 * `concealed`). Returns {data} or {problem}.
 */
export async function chainedData(event) {
  const problem = concealmentProblem(event);
  if (problem) return { problem };
  let data = Object.fromEntries(Object.entries(event.data).filter(([key]) => key !== UNCHAINED));
  for (const [pointer, salt] of Object.entries(event.salts || {})) {
    const tokens = pointerTokens(pointer);
    const [container, key] = partAt(data, tokens);
    data = replaced(data, tokens, await commitmentTo(salt, container[key]));
  }
  for (const [pointer, commitment] of Object.entries(event.concealed || {})) {
    data = replaced(data, pointerTokens(pointer), commitment);
  }
  const hidden = hiddenWithoutCommitment(data, event.type);
  if (hidden !== null) {
    return { problem: `its data shows ${hidden} hidden with no commitment for it (no salt, not concealed)` };
  }
  return { data };
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Microseconds since 1970 (a BigInt: a double would lose them) of an RFC 3339 time, or null. */
function moment(text) {
  const m = typeof text === "string" ? RFC3339.exec(text) : null;
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const back = new Date(ms);
  if (back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    return null;
  }
  let offset = 0;
  if (!/^[Zz]$/.test(m[8])) {
    offset = (Number(m[8].slice(1, 3)) * 60 + Number(m[8].slice(4, 6))) * (m[8][0] === "-" ? -1 : 1);
  }
  return (BigInt(ms) - BigInt(offset) * 60000n) * 1000n + BigInt((m[7] || "").padEnd(6, "0"));
}

function isWhole(value) {
  return Number.isInteger(value);
}

function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function envelopeProblem(event) {
  if (!isObject(event)) return "the event is not a JSON object";
  const missing = ENVELOPE.filter((name) => !(name in event));
  if (missing.length) return `the event has no ${missing.map((m) => `'${m}'`).join(", ")}`;
  if (!isObject(event.data)) return "its data is not a JSON object";
  return null;
}

function missingMessage(first, last, found) {
  const what = first === last ? `version ${first} is` : `versions ${first} to ${last} are`;
  if (found === null) return `${what} missing: the log ends at ${first - 1}`;
  if (first === 1) return `${what} missing: the log starts at ${found}`;
  return `${what} missing: the log goes from ${first - 1} to ${found}`;
}

/** Every version present once and in order; the events that can be linked, by version. */
function orderFindings(events, found) {
  const byVersion = new Map();
  let highest = 0;
  events.forEach((event, index) => {
    const problem = envelopeProblem(event);
    const version = isObject(event) && isWhole(event.version) && event.version >= 1 ? event.version : null;
    if (problem || version === null) {
      const why = problem || `has version ${JSON.stringify(isObject(event) ? event.version : null)}`;
      found.push({ version, check: "chain", message: `event ${index + 1} of the log: ${why}` });
      return;
    }
    if (byVersion.has(version)) {
      found.push({ version, check: "chain", message: `version ${version} is in the log twice` });
    } else {
      if (version < highest) {
        const message = `version ${version} comes after version ${highest}: the log is out of order`;
        found.push({ version, check: "chain", message });
      }
      byVersion.set(version, event);
    }
    highest = Math.max(highest, version);
  });
  let expected = 1;
  for (const version of [...byVersion.keys()].sort((a, b) => a - b)) {
    if (version > expected) {
      found.push({ version: expected, check: "chain", message: missingMessage(expected, version - 1, version) });
    }
    expected = version + 1;
  }
  if (!events.length) {
    found.push({ version: 1, check: "chain", message: "the log is empty: a table always starts with an event" });
  }
  return byVersion;
}

async function linkProblem(event, before, rule) {
  const found = [];
  const now = moment(event.timestamp);
  if (now === null) {
    found.push(`timestamp ${JSON.stringify(event.timestamp)} is not RFC 3339 with an offset`);
  } else if (before) {
    const then = moment(before.timestamp);
    if (then !== null && now <= then) {
      found.push(`its timestamp ${event.timestamp} is not after ${before.timestamp}, the one before it`);
    }
  }
  let recomputed;
  try {
    let data = null;
    if (rule === 3) {
      const chained = await chainedData(event);
      if (chained.problem) return [...found, chained.problem].join("; ");
      data = chained.data;
    }
    recomputed = await eventDigest(before ? before.digest : "", event, data);
  } catch (error) {
    return [...found, `its digest cannot be recomputed: ${error.message}`].join("; ");
  }
  if (event.digest !== recomputed) {
    found.push(`digest ${event.digest} recorded, ${recomputed} recomputed from the event before it: `
      + "this event or the one before it was altered");
  }
  return found.length ? found.join("; ") : null;
}

/**
 * Whether the reader was shown this event with a part hidden from him ("??" for a face-down card, a null
 * total; docs/api.md "What each role sees"): its recorded digest is over the full event, so it cannot be
 * recomputed here, while the next event still links to that recorded digest.
 */
export function hidesSomething(event) {
  const data = isObject(event) && isObject(event.data) ? event.data : {};
  if (event.type === "HandStood" && data.total === null) return true;
  return JSON.stringify(data).includes('"??"');
}

/**
 * The chain rule of a log, as its first event tells it: 3 where its data records "chain", 2 where it records a
 * table_id, else 1; null without a first TableOpened. A log without its first event is taken as rule 3 where
 * its events carry salts or commitments.
 */
function chainRuleOf(byVersion) {
  const first = byVersion.get(1);
  if (!first) {
    const parts = [...byVersion.values()].some((event) => "salts" in event || "concealed" in event);
    return parts ? 3 : null;
  }
  if (first.type !== "TableOpened") return null;
  if ("chain" in first.data) return 3; // a rule it does not know is named by checkBinding, and checked as the latest
  return "table_id" in first.data ? 2 : 1;
}

async function checkChain(events, found, hidden) {
  const byVersion = orderFindings(events, found);
  const rule = chainRuleOf(byVersion);
  const versions = [...byVersion.keys()].sort((a, b) => a - b);
  // Each link needs only the digest recorded before it: the links are checked side by side.
  for (let start = 0; start < versions.length; start += BATCH) {
    const slice = versions.slice(start, start + BATCH);
    const problems = await Promise.all(
      slice.map((version) => {
        const before = version > 1 ? byVersion.get(version - 1) : null;
        if (version > 1 && !before) return null; // named as missing: nothing to link it to
        // Rules 1 and 2: a part hidden from this reader leaves its event's digest unrecomputable; rule 3
        // commits to it, so every digest is checked.
        if (rule !== 3 && hidesSomething(byVersion.get(version))) {
          hidden.push(version);
          return null;
        }
        return linkProblem(byVersion.get(version), before, rule);
      }),
    );
    problems.forEach((message, i) => {
      if (message) found.push({ version: slice[i], check: "chain", message });
    });
  }
  return byVersion;
}

/**
 * Chain rules 2 and 3 (docs/design.md "The table in the chain", "Concealed parts (chain rule 3)"): a first
 * event whose data records a table_id binds the chain to that table, and the log must be the one served for
 * that very table. A first event without it is chained under rule 1, which binds no table; one that records
 * "chain": 3 is under rule 3, and records the table_id too. Returns the rule (null without a first
 * TableOpened).
 */
function checkBinding(byVersion, tableId, found) {
  const first = byVersion.get(1);
  const rule = chainRuleOf(byVersion);
  if (!first || first.type !== "TableOpened" || !isObject(first.data)) return rule;
  if ("chain" in first.data && first.data.chain !== 3) {
    found.push({ version: 1, check: "chain", message: `the first event names chain rule `
      + `${JSON.stringify(first.data.chain)}, which this check does not know (it knows rules 1, 2 and 3): its `
      + "digests are checked as under rule 3" });
  } else if (rule === 3 && typeof first.data.table_id !== "string") {
    found.push({ version: 1, check: "chain", message: "the first event names chain rule 3 but records no "
      + "table_id, which every rule-3 table records" });
  }
  if (!("table_id" in first.data)) return rule;
  const bound = first.data.table_id;
  if (typeof tableId === "string" && (typeof bound !== "string" || bound.toLowerCase() !== tableId.toLowerCase())) {
    found.push({ version: 1, check: "chain", message: `the first event binds the chain to table `
      + `${JSON.stringify(first.data.table_id)}, but this log is served as table ${JSON.stringify(tableId)}: `
      + "the events were moved from another table" });
  }
  return rule;
}

// --- the shoes (docs/design.md "The fair shuffle") ------------------------------------------------------

function newShoe(number) {
  return {
    shoe: number, deck: null, decks: null, cut: 0, shuffled: false, cutSeen: false, algorithm: null,
    commitment: null, seed: null, revealed: null, deals: [], next: 0, failed: false,
  };
}

function shoeSize(shoe) {
  return isWhole(shoe.decks) && shoe.decks > 0 ? 52 * shoe.decks : null;
}

// What each shoe event does to its shoe; `fail(message)` names a problem at the event's version.
const ON = {
  ShoeShuffled(shoe, version, data, fail) {
    if (shoe.shuffled) {
      fail(`shoe ${shoe.shoe} is shuffled a second time, after its shuffle at version ${shoe.shuffled}`);
      return;
    }
    const { deck, decks, algorithm, commitment } = data;
    Object.assign(shoe, { shuffled: version, deck, decks, algorithm, commitment });
    if (shoeSize(shoe) === null) {
      fail(`shoe ${shoe.shoe}: decks ${JSON.stringify(decks)} is not a positive whole number`);
    }
    if (algorithm !== ALGORITHM) {
      fail(`shoe ${shoe.shoe} names the algorithm ${JSON.stringify(algorithm)}; the only one is ${ALGORITHM}`);
    }
    if (typeof shoe.commitment !== "string") fail(`shoe ${shoe.shoe}: the shuffle records no commitment`);
  },
  ShoeCut(shoe, version, data, fail) {
    const position = data.position;
    const size = shoeSize(shoe);
    if (shoe.cutSeen) fail(`shoe ${shoe.shoe} is cut a second time`);
    else if (shoe.deals.length) fail(`shoe ${shoe.shoe} is cut after dealing began`);
    else if (!isWhole(position) || position < 0 || (size !== null && position > size)) {
      fail(`shoe ${shoe.shoe}: cut position ${JSON.stringify(position)} is outside the shoe`);
    } else shoe.cut = position;
    shoe.cutSeen = true;
  },
  CardDealt(shoe, version, data, fail) {
    const position = data.position;
    if (!isWhole(position)) {
      fail(`a card of shoe ${shoe.shoe} is dealt without a position`);
      return;
    }
    if (position !== shoe.next) fail(`position ${position} of shoe ${shoe.shoe} is dealt where ${shoe.next} was next`);
    const size = shoeSize(shoe);
    if (size !== null && position >= size) {
      fail(`position ${position} is past the end of shoe ${shoe.shoe} (${size} cards)`);
    }
    if (shoe.revealed) fail(`a card of shoe ${shoe.shoe} is dealt after its seed was revealed`);
    shoe.deals.push({ version, position, card: data.card });
    shoe.next = position + 1;
  },
  ShoeRevealed(shoe, version, data, fail) {
    if (shoe.revealed) {
      fail(`shoe ${shoe.shoe} is revealed a second time, after its reveal at version ${shoe.revealed}`);
      return;
    }
    shoe.revealed = version;
    shoe.seed = data.seed;
  },
};

/** Once the seed is public: its commitment, then every dealt card against the shoe it gives. */
async function checkRevealed(shoe, fail) {
  const at = shoe.revealed;
  const seed = fromHex(shoe.seed);
  if (seed === null) {
    fail(at, `shoe ${shoe.shoe}: the seed revealed at version ${at}, ${JSON.stringify(shoe.seed)}, is not hexadecimal`);
    return;
  }
  if (seed.length !== SEED_BYTES) {
    fail(at, `shoe ${shoe.shoe}: the seed revealed at version ${at} is ${seed.length} bytes, not ${SEED_BYTES}`);
    return;
  }
  const hashed = await sha256Hex(seed);
  if (hashed !== shoe.commitment) {
    fail(at, `shoe ${shoe.shoe}: the seed revealed at version ${at} hashes to ${hashed}, `
      + `the commitment recorded at version ${shoe.shuffled} is ${shoe.commitment}`);
    return;
  }
  if (shoe.algorithm !== ALGORITHM || shoeSize(shoe) === null) return; // named at the shuffle
  const order = await shoeOrder(shoe.seed, shoe.decks, shoe.cut);
  for (const { version, position, card } of shoe.deals) {
    if (position >= 0 && position < order.length && card !== order[position]) {
      fail(version, `${card} recorded at position ${position} of shoe ${shoe.shoe}; the shoe recomputed from the `
        + `seed revealed at version ${at} has ${order[position]} there`);
    }
  }
}

async function checkShoes(events, found) {
  const shoes = new Map();
  const failing = (shoe) => (version, message) => {
    shoe.failed = true;
    found.push({ version: isWhole(version) ? version : null, check: "cards", message });
  };
  for (const event of events) {
    if (envelopeProblem(event) !== null || !SHOE_EVENTS.includes(event.type)) continue;
    const { version, type, data } = event;
    const number = isWhole(data.shoe) ? data.shoe : "?";
    if (!shoes.has(number)) shoes.set(number, newShoe(number));
    const shoe = shoes.get(number);
    const fail = (message) => failing(shoe)(version, message);
    if (number === "?") fail(`${type} names no shoe number`);
    if (type !== "ShoeShuffled" && !shoe.shuffled) fail(`${type} of shoe ${number} comes before the shoe was shuffled`);
    if (type !== "ShoeRevealed" && UNCHAINED in data) {
      fail(`${type} shows the seed of shoe ${number} before its reveal`);
    }
    ON[type](shoe, version, data, fail);
  }
  const rows = [];
  for (const shoe of [...shoes.values()].sort((a, b) => (a.shoe === "?") - (b.shoe === "?") || a.shoe - b.shoe)) {
    if (shoe.revealed) await checkRevealed(shoe, failing(shoe));
    rows.push({
      shoe: shoe.shoe, deck: shoe.deck, decks: shoe.decks, cut: shoe.cut, dealt: shoe.deals.length,
      revealed: Boolean(shoe.revealed), ok: shoe.failed ? false : shoe.revealed ? true : null,
    });
  }
  return rows;
}

// --- receipts (docs/design.md "Signing keys, receipts and heads"; service/signing.py) --------------------

async function keyRing(keys) {
  const listed = Array.isArray(keys) ? keys : isObject(keys) && Array.isArray(keys.keys) ? keys.keys : [];
  const ring = new Map();
  for (const entry of listed) {
    if (!isObject(entry) || typeof entry.key_id !== "string" || ring.has(entry.key_id)) continue;
    const raw = fromBase64url(entry.public_key);
    const id = raw === null ? null : (await sha256Hex(raw)).slice(0, 16);
    let why = null;
    if (entry.algorithm !== "Ed25519") why = `its algorithm is ${JSON.stringify(entry.algorithm)}, not "Ed25519"`;
    else if (raw === null || raw.length !== 32) why = "its public_key is not 32 bytes in base64url";
    else if (id !== entry.key_id) why = `its public key's id is ${id}`;
    ring.set(entry.key_id, { why, raw, key: null });
  }
  return ring;
}

async function importKey(listed, keyId) {
  if (!listed.key) {
    try {
      listed.key = await subtle().importKey("raw", listed.raw, { name: "Ed25519" }, false, ["verify"]);
    } catch (error) {
      // A browser without Ed25519 cannot say whether the house signed: that is no verdict on the table.
      throw new Error(`this browser cannot verify Ed25519 signatures (key ${keyId}): ${error.message}`);
    }
  }
  return listed.key;
}

function receiptShapeProblem(receipt) {
  if (!isObject(receipt)) return "the receipt is not a JSON object";
  const missing = RECEIPT_FIELDS.find((name) => !(name in receipt));
  if (missing) return `the receipt has no '${missing}'`;
  if (typeof receipt.table_id !== "string" || !receipt.table_id) return "its table_id is not a table's id";
  if (!isWhole(receipt.version) || receipt.version < 1) {
    return `its version ${JSON.stringify(receipt.version)} is not a whole number from 1`;
  }
  const notText = ["digest", "timestamp", "key_id", "signature"].find((name) => typeof receipt[name] !== "string");
  return notText ? `its ${notText} is not a string` : null;
}

/** What is wrong with one receipt, or null: signed by a listed key, for this table, and held by the log. */
async function receiptProblem(receipt, tableId, ring, byVersion, last) {
  const shape = receiptShapeProblem(receipt);
  if (shape) return shape;
  const { version, key_id: keyId } = receipt;
  const of = `the receipt of version ${version}`;
  if (tableId !== null && receipt.table_id !== tableId) return `${of} is for table ${receipt.table_id}, not this one`;
  const listed = ring.get(keyId);
  if (!listed) return `${of} is signed by key ${keyId}, which the keys given do not list`;
  if (listed.why) return `${of} is signed by key ${keyId}, which is of no use: ${listed.why}`;
  const signature = fromBase64url(receipt.signature);
  if (signature === null || signature.length !== 64) return `${of}: its signature is not 64 bytes of base64url`;
  const unsigned = Object.fromEntries(Object.entries(receipt).filter(([name]) => name !== "signature"));
  const message = encoder.encode(canonicalJson(unsigned));
  if (!(await subtle().verify("Ed25519", await importKey(listed, keyId), signature, message))) {
    return `${of} is not the house's: its signature does not verify with key ${keyId}`;
  }
  const signed = `the house signed version ${version} (digest ${receipt.digest}, ${receipt.timestamp})`;
  const event = byVersion.get(version);
  if (!event) {
    return `${signed}, but the log ${last >= version ? `has no version ${version}` : `ends at version ${last}`}`;
  }
  const differences = ["digest", "timestamp"].filter((name) => event[name] !== receipt[name]);
  return differences.map((name) => `${name} signed ${receipt[name]}, log has ${event[name]}`).join("; ") || null;
}

function headProblem(head) {
  if (!isObject(head)) return "no signed head was given: the log cannot be held to what the house signed";
  if (!isObject(head.receipt)) return "the head carries no receipt";
  const differs = ["table_id", "version", "digest", "timestamp"].find((name) => head[name] !== head.receipt[name]);
  if (!differs) return null;
  const [said, signed] = [head[differs], head.receipt[differs]].map((value) => JSON.stringify(value));
  return `the head says ${differs} ${said}, its receipt signs ${signed}`;
}

async function checkReceipts({ head, keys, receipts }, byVersion, found) {
  const ring = await keyRing(keys);
  let last = 0;
  for (const version of byVersion.keys()) last = Math.max(last, version);
  const held = [];
  const problem = headProblem(head);
  if (problem) {
    const version = isObject(head) && isWhole(head.version) ? head.version : null;
    found.push({ version, check: "receipt", message: problem });
  } else held.push(head.receipt);
  const signedFor = isObject(head) && isObject(head.receipt) ? head.receipt.table_id : null;
  const tableId = typeof signedFor === "string" ? signedFor : null;
  // Saved command responses carry their receipt under "receipt"; bare receipts are taken as they are.
  for (const item of receipts || []) {
    held.push(isObject(item) && !("signature" in item) && isObject(item.receipt) ? item.receipt : item);
  }
  let verified = 0;
  for (const receipt of held) {
    const message = await receiptProblem(receipt, tableId, ring, byVersion, last);
    if (message) {
      const version = isObject(receipt) && isWhole(receipt.version) ? receipt.version : null;
      found.push({ version, check: "receipt", message });
    } else verified += 1;
  }
  return verified;
}

// --- the whole table -----------------------------------------------------------------------------------

/**
 * Checks a table from its public log. `events`: the whole log as GET /tables/<id>/events gives it (every
 * page's "events", in order); `keys`: GET /keys's body (or a list of key entries, yours added); `head`:
 * GET /tables/<id>/head's body, read before the log (a table being played may grow meanwhile, and the
 * log must reach the signed version); `receipts`: optional receipts kept from before (bare, or command
 * responses carrying one under "receipt").
 */
export async function verifyTable({ events, keys, head, receipts, tableId } = {}) {
  if (!Array.isArray(events)) throw new TypeError("verifyTable needs the log: events, an array");
  subtle();
  const findings = [];
  const hidden = [];
  const byVersion = await checkChain(events, findings, hidden);
  const signedFor = isObject(head) && isObject(head.receipt) ? head.receipt.table_id : null;
  const chainRule = checkBinding(byVersion, typeof tableId === "string" ? tableId : signedFor, findings);
  const shoes = await checkShoes(events, findings);
  const verified = await checkReceipts({ head, keys, receipts }, byVersion, findings);
  // Stable: the findings of one version keep the order in which they were found.
  findings.sort((a, b) => (a.version === null) - (b.version === null) || (a.version || 0) - (b.version || 0));
  return {
    ok: findings.length === 0,
    failedVersion: findings.length && findings[0].version !== null ? findings[0].version : null,
    findings,
    events: events.length,
    hidden: hidden.sort((a, b) => a - b),
    chainRule,
    shoes,
    receipts: verified,
  };
}

// --- reading a table over the API -------------------------------------------------------------------------

async function getJson(url, token, fetcher) {
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetcher(url, { headers });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const said = isObject(body) && typeof body.message === "string" ? `: ${body.message}` : "";
    const error = new Error(`${url} answered HTTP ${response.status}${said}`);
    Object.assign(error, { status: response.status, body });
    throw error;
  }
  return body;
}

/**
 * What verifyTable needs, read from the service at `base` ("" for this page's own): the signed head
 * first, then the whole log page by page, then the keys. A stored event the service says it cannot read
 * (409 naming `damaged_version`) is stepped over, as scripts/audit does: the events around it are read,
 * and its version, missing from the log, is a finding. Returns {events, keys, head, headError, unreadable};
 * a head the service cannot read from its own log (409, 500) is null (a finding of verifyTable), with its
 * error in `headError`; any other failure (404, 401, 403, 503, the network) is thrown: nothing was checked.
 */
export async function readTable(base, tableId, { token = null, pageSize = 1000, fetch: fetcher = null } = {}) {
  const get = (url) => getJson(url, token, fetcher || globalThis.fetch.bind(globalThis));
  const table = `${base}/tables/${encodeURIComponent(tableId)}`;
  let head = null;
  let headError = null;
  try {
    head = await get(`${table}/head`);
  } catch (error) {
    // Only a head the service cannot read (its log damaged) leaves a log to check; no such table, a token
    // refused, a service unavailable or a network failure is no verdict and is thrown.
    if (error.status !== 409 && error.status !== 500) throw error;
    headError = error.message;
  }
  const events = [];
  const unreadable = [];
  let after = 0;
  let damaged = null; // the next version the service cannot read, once it said so
  for (;;) {
    if (damaged === after + 1) {
      after = damaged;
      damaged = null;
      continue;
    }
    const limit = damaged === null ? pageSize : damaged - 1 - after;
    let page;
    try {
      page = await get(`${table}/events?after=${after}&limit=${limit}`);
    } catch (error) {
      const version = isObject(error.body) ? error.body.damaged_version : null;
      if (error.status === 409 && damaged === null && isWhole(version) && version > after) {
        unreadable.push(version);
        damaged = version;
        continue;
      }
      throw error;
    }
    events.push(...page.events);
    if (page.next_after === null) break;
    if (!isWhole(page.next_after) || page.next_after <= after) {
      throw new Error(`${table}/events does not advance past ${after}`);
    }
    after = page.next_after;
  }
  const keys = await get(`${base}/keys`);
  return { events, keys, head, headError, unreadable, tableId };
}
