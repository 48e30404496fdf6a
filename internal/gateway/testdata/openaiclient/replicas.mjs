// Drives replicas of the hermes API server with the official openai npm
// client, as a load balancer would: CONVERSATIONS conversations of TURNS
// turns each, chained by previous_response_id, every request sent to the
// next live replica in turn (round robin). The fake model answers
// "seen: " + the conversation's user inputs joined by "|", so each answer
// shows whether the chain is intact: nothing lost, duplicated or mixed in
// from another conversation.
//
// After turn PAUSE_AFTER (0 = never) it prints {"midway":true} and reads
// one line from stdin: {"killed": i} takes replica i out of the rotation.
// At the end it prints one JSON object with the counts and latencies.
//
// Environment: HERMES_API_BASES (comma-separated http://host:port/v1),
// HERMES_API_KEY, CONVERSATIONS, TURNS, CONCURRENCY (requests in flight).
import OpenAI from "openai";
import readline from "node:readline";

const bases = process.env.HERMES_API_BASES.split(",");
const key = process.env.HERMES_API_KEY;
const convs = Number(process.env.CONVERSATIONS || 60);
const turns = Number(process.env.TURNS || 5);
const concurrency = Number(process.env.CONCURRENCY || 16);
const pauseAfter = Number(process.env.PAUSE_AFTER || 0);

const clients = bases.map((b) => new OpenAI({ baseURL: b, apiKey: key, maxRetries: 0, timeout: 300000 }));
const alive = bases.map(() => true);
let next = 0;
function pick() {
  for (;;) {
    const i = next++ % bases.length;
    if (alive[i]) return i;
  }
}

const state = Array.from({ length: convs }, () => ({ prev: null, sent: [], by: [], bad: null }));
const latencies = [];
const counts = { answered: 0, lost: 0, duplicated: 0, interleaved: 0, failed: 0, movedFromKilled: 0 };
const examples = [];
let killed = -1;

function judge(c, expected, text) {
  if (text === "seen: " + expected.join("|")) return null;
  const got = (text || "").replace(/^seen: /, "").split("|");
  if (got.some((g) => !g.startsWith(`c${c}t`))) return "interleaved";
  if (new Set(got).size < got.length) return "duplicated";
  return "lost";
}

async function turn(c, t) {
  const s = state[c];
  if (s.bad) return;
  const input = `c${c}t${t}`;
  const i = pick();
  const t0 = performance.now();
  try {
    const params = { model: "hermes-agent", input };
    if (s.prev) params.previous_response_id = s.prev;
    const r = await clients[i].responses.create(params);
    latencies.push(performance.now() - t0);
    const expected = [...s.sent, input];
    const verdict = judge(c, expected, r.output_text);
    if (verdict) {
      counts[verdict]++;
      s.bad = verdict;
      if (examples.length < 5) examples.push({ conversation: c, turn: t, replica: i, verdict, got: r.output_text });
      return;
    }
    if (killed >= 0 && s.by[s.by.length - 1] === killed) counts.movedFromKilled++;
    counts.answered++;
    s.prev = r.id;
    s.sent.push(input);
    s.by.push(i);
  } catch (e) {
    counts.failed++;
    s.bad = "failed";
    if (examples.length < 5) examples.push({ conversation: c, turn: t, replica: i, error: String(e) });
  }
}

async function pool(items, n, fn) {
  let at = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (at < items.length) await fn(items[at++]);
  }));
}

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const start = performance.now();
const all = Array.from({ length: convs }, (_, c) => c);
for (let t = 1; t <= turns; t++) {
  await pool(all, concurrency, (c) => turn(c, t));
  if (t === pauseAfter) {
    console.log(JSON.stringify({ midway: true }));
    const { value } = await lines.next();
    killed = JSON.parse(value).killed;
    alive[killed] = false;
  }
}
const elapsed = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
const q = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : 0);
const chainsIntact = state.filter((s) => !s.bad && s.sent.length === turns).length;
console.log(JSON.stringify({
  conversations: convs, turns, ...counts, chainsIntact, examples,
  seconds: elapsed, answersPerSecond: counts.answered / elapsed, p50ms: q(0.5), p99ms: q(0.99),
}));
process.exit(0);
