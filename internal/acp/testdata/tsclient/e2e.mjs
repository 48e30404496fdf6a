// End-to-end test of `hermes-acp` with the official ACP TypeScript client
// (@agentclientprotocol/sdk). Run by TestACPWithTypeScriptClient
// (cmd/hermes), which scripts the fake model and sets:
//   HERMES_ACP  the hermes-acp link to the built binary
//   WORKSPACE   the editor's workspace (holds build/ and a.txt)
// Prints one JSON line with what it saw; exits 1 with a message on failure.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const ws = process.env.WORKSPACE;
const fail = (msg) => {
  console.error("FAIL: " + msg);
  process.exit(1);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// connect spawns hermes-acp and returns the client connection and the
// updates and permission requests it records.
function connect() {
  const child = spawn(process.env.HERMES_ACP, [], { cwd: ws, stdio: ["pipe", "pipe", "inherit"], env: process.env });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const seen = { updates: [], permissions: [] };
  const app = acp
    .client({ name: "hermes-e2e" })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      seen.permissions.push(params);
      // Allow the command once, deny the edit.
      const want = params.toolCall.kind === "edit" ? "reject_once" : "allow_once";
      const opt = params.options.find((o) => o.kind === want);
      if (!opt) fail("no " + want + " option in " + JSON.stringify(params.options));
      return { outcome: { outcome: "selected", optionId: opt.optionId } };
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      seen.updates.push(params.update);
    });
  const conn = app.connect(stream);
  return { child, agent: conn.agent, conn, seen };
}

async function waitFor(seen, pred, what) {
  for (let i = 0; i < 1000; i++) {
    if (seen.updates.some(pred)) return;
    await sleep(20);
  }
  fail("timed out waiting for " + what + "; got " + seen.updates.map((u) => u.sessionUpdate).join(" "));
}

const text = (updates, kind) =>
  updates.filter((u) => u.sessionUpdate === kind && u.content?.type === "text").map((u) => u.content.text).join("");

const out = {};
const a = connect();
const init = await a.agent.request(acp.methods.agent.initialize, {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
});
if (init.protocolVersion !== 1) fail("protocol version " + init.protocolVersion);
if (!init.agentCapabilities?.loadSession) fail("loadSession not advertised");
const created = await a.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
const sessionId = created.sessionId;
out.sessionId = sessionId;
await waitFor(a.seen, (u) => u.sessionUpdate === "available_commands_update", "available_commands_update");

// 1. A prompt running terminal (allowed) and patch (denied).
const r1 = await a.agent.request(acp.methods.agent.session.prompt, {
  sessionId,
  prompt: [{ type: "text", text: "clean up the build" }],
});
out.stop1 = r1.stopReason;
const calls = a.seen.updates.filter((u) => u.sessionUpdate === "tool_call");
const exec = calls.find((u) => u.kind === "execute");
const edit = calls.find((u) => u.kind === "edit");
if (!exec || !exec.title.includes("rm -r build")) fail("no execute tool_call with the command: " + JSON.stringify(calls));
const diff = edit?.content?.find((c) => c.type === "diff");
if (!diff || diff.oldText !== "one" || diff.newText !== "two" || !diff.path.endsWith("/a.txt")) fail("no diff content: " + JSON.stringify(edit));
const execDone = a.seen.updates.find((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === exec.toolCallId && u.status === "completed");
if (!execDone || !JSON.stringify(execDone.content).includes("removed")) fail("terminal output missing: " + JSON.stringify(execDone));
out.permissions = a.seen.permissions.map((p) => p.toolCall.kind + ":" + p.options.map((o) => o.optionId).join(","));
out.answer1 = text(a.seen.updates, "agent_message_chunk");

// 2. A second prompt in the same session.
const before = a.seen.updates.length;
const r2 = await a.agent.request(acp.methods.agent.session.prompt, {
  sessionId,
  prompt: [{ type: "text", text: "what did you do?" }],
});
out.stop2 = r2.stopReason;
out.answer2 = text(a.seen.updates.slice(before), "agent_message_chunk");

// 3. Cancel while a command runs.
const p3 = a.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "wait a bit" }] });
await waitFor(a.seen, (u) => u.sessionUpdate === "tool_call" && u.title.includes("sleep"), "the sleep tool_call");
await a.agent.notify(acp.methods.agent.session.cancel, { sessionId });
const r3 = await p3;
out.stop3 = r3.stopReason;
a.conn.close();
a.child.stdin.end();
await new Promise((r) => a.child.on("exit", r));

// 4. Load the session in a new process: its history is replayed.
const b = connect();
await b.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
const list = await b.agent.request(acp.methods.agent.session.list, { cwd: ws });
out.listed = list.sessions.map((s) => s.sessionId);
await b.agent.request(acp.methods.agent.session.load, { sessionId, cwd: ws, mcpServers: [] });
out.replayUser = text(b.seen.updates, "user_message_chunk");
out.replayAgent = text(b.seen.updates, "agent_message_chunk");
out.replayTools = b.seen.updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.kind);
b.conn.close();
b.child.stdin.end();
await new Promise((r) => b.child.on("exit", r));
console.log(JSON.stringify(out));
