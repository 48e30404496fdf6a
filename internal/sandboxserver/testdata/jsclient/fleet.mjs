// Issue 29's fleet proof, before a node is lost: creates N sandboxes
// through node A's address only; through node B runs a command in each and
// writes a file, and through node C reads it back; C lists them all. Then
// every third sandbox (i % 3 == 0) is paused through C and resumed through
// B, and the next ones (i % 3 == 1) are paused through B and left paused
// (they must come back when their node does). Prints the sandbox ids and
// the paused ones as JSON {ids, paused}.
//   env: A_API A_ENVD B_API B_ENVD C_API C_ENVD N E2B_API_KEY
import { Sandbox } from 'e2b'

const at = (n) => ({ apiUrl: process.env[`${n}_API`], sandboxUrl: process.env[`${n}_ENVD`] })
const n = Number(process.env.N || 6)
const made = await Promise.all(Array.from({ length: n }, () => Sandbox.create('base', { ...at('A'), timeoutMs: 1_800_000 })))
const ids = made.map((s) => s.sandboxId)
await Promise.all(ids.map(async (id) => {
  const b = await Sandbox.connect(id, at('B'))
  const r = await b.commands.run(`echo ran-in-${id}`)
  if (r.stdout.trim() !== `ran-in-${id}`) throw new Error(`${id} through B: stdout ${JSON.stringify(r.stdout)}`)
  await b.files.write('/home/user/fleet.txt', `written through B in ${id}`)
  const c = await Sandbox.connect(id, at('C'))
  const text = await c.files.read('/home/user/fleet.txt')
  if (text !== `written through B in ${id}`) throw new Error(`${id} through C: read ${JSON.stringify(text)}`)
}))
const listed = await Sandbox.list({ ...at('C'), limit: 100 }).nextItems()
const mine = listed.filter((s) => ids.includes(s.sandboxId))
if (mine.length !== n) throw new Error(`C lists ${mine.length} of the ${n} sandboxes`)
const paused = []
await Promise.all(ids.map(async (id, i) => {
  if (i % 3 === 0) {
    await (await Sandbox.connect(id, at('C'))).pause()
    // A resume without timeoutMs runs for 15 s (E2B's default), then ends.
    const b = await Sandbox.connect(id, { ...at('B'), timeoutMs: 1_800_000 })
    if ((await b.files.read('/home/user/fleet.txt')) !== `written through B in ${id}`) throw new Error(`${id}: file lost over pause through C, resume through B`)
  } else if (i % 3 === 1) {
    await (await Sandbox.connect(id, at('B'))).pause()
    paused.push(id)
  }
}))
const states = new Map((await Sandbox.list({ ...at('A'), limit: 100 }).nextItems()).map((s) => [s.sandboxId, s.state]))
for (const id of paused) {
  if (states.get(id) !== 'paused') throw new Error(`${id} paused through B, listed through A as ${states.get(id)}`)
}
console.log(JSON.stringify({ ids, paused }))
