// Issue 29's durability proof, before the restart: creates 21 sandboxes,
// writes a file in each, pauses 10, kills 1, leaves 10 running; prints
// {running, paused, killed} (sandbox ids) as JSON.
import { Sandbox } from 'e2b'

const made = await Promise.all(Array.from({ length: 21 }, () => Sandbox.create('base', { timeoutMs: 600_000 })))
await Promise.all(made.map((s) => s.files.write('/home/user/kept.txt', `kept by ${s.sandboxId}`)))
const paused = made.slice(0, 10)
const running = made.slice(10, 20)
const killed = made[20]
await Promise.all(paused.map((s) => s.pause()))
await killed.kill()
console.log(JSON.stringify({
  running: running.map((s) => s.sandboxId),
  paused: paused.map((s) => s.sandboxId),
  killed: killed.sandboxId,
}))
