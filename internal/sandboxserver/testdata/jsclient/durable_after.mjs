// Issue 29's durability proof, after the restart: every sandbox of IDS
// (durable_before.mjs's output) is connectable and has its file, and runs
// a command; the killed one answers SandboxNotFoundError; with
// OTHER_E2B_API_KEY (another tenant) none is found. Prints "durable ok".
import { Sandbox, SandboxNotFoundError } from 'e2b'
import assert from 'node:assert/strict'

const ids = JSON.parse(process.env.IDS)
for (const id of [...ids.running, ...ids.paused]) {
  const sbx = await Sandbox.connect(id, { timeoutMs: 600_000 })
  assert.equal(await sbx.files.read('/home/user/kept.txt'), `kept by ${id}`, `file of ${id}`)
  const r = await sbx.commands.run('cat /home/user/kept.txt')
  assert.equal(r.stdout, `kept by ${id}`, `command in ${id}`)
}
await assert.rejects(Sandbox.connect(ids.killed), (e) => {
  assert.ok(e instanceof SandboxNotFoundError, `killed sandbox: ${e}`)
  return true
})
if (process.env.OTHER_E2B_API_KEY) {
  for (const id of [ids.running[0], ids.paused[0]]) {
    await assert.rejects(Sandbox.connect(id, { apiKey: process.env.OTHER_E2B_API_KEY }), (e) => {
      assert.ok(e instanceof SandboxNotFoundError, `another tenant's connect to ${id}: ${e}`)
      return true
    })
  }
}
console.log('durable ok')
