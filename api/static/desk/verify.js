// The browser's own verification of a table, from its public log alone.
//
// A minimal stand-in with the interface the desk calls: it checks only that the versions run from 1 without a
// gap, that the timestamps rise, and that the signed head names the log's last event. The full check (the
// digest chain, every shoe against its seed and commitment, the receipts' Ed25519 signatures) replaces this
// file with the same interface:
//   verifyTable({events, keys, head, receipts}) -> {ok, failedVersion, findings: [{version, check, message}]}

export async function verifyTable({ events, head }) {
  const findings = [];
  let previous = null;
  events.forEach((event) => {
    const expected = previous ? previous.version + 1 : 1;
    if (event.version !== expected) {
      findings.push({ version: expected, check: "log", message: `version ${expected} is missing: the log goes on with ${event.version}` });
    } else if (previous && !(event.timestamp > previous.timestamp)) {
      findings.push({ version: event.version, check: "log", message: "its timestamp does not rise above the one before" });
    }
    previous = event;
  });
  const last = events[events.length - 1];
  if (head && (!last || head.version !== last.version || head.digest !== last.digest)) {
    findings.push({ version: head.version, check: "head", message: "the signed head is not the log's last event" });
  }
  const failedVersion = findings.length ? Math.min(...findings.map((f) => f.version)) : null;
  return { ok: findings.length === 0, failedVersion, findings };
}
