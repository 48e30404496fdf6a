// Issue 29's fleet proof, before a node is lost: creates N sandboxes
// through node A's address only, then through node B runs a command in
// each and writes a file, and through node C reads it back, lists them and
// pauses and resumes one; prints the sandbox ids as JSON.
//   env: A_API A_ENVD B_API B_ENVD C_API C_ENVD N E2B_API_KEY
import { Sandbox } from 'e2b'

const at = (n) => ({ apiUrl: process.env[`${n}_API`], sandboxUrl: process.env[`${n}_ENVD`] })
const n = Number(process.env.N || 6)
const made = await Promise.all(Array.from({ length: n }, () => Sandbox.create('base', { ...at('A'), timeoutMs: 600_000 })))
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
const listed = await Sandbox.list(at('C')).nextItems()
const mine = listed.filter((s) => ids.includes(s.sandboxId))
if (mine.length !== n) throw new Error(`C lists ${mine.length} of the ${n} sandboxes`)
const c0 = await Sandbox.connect(ids[0], at('C'))
await c0.pause()
const b0 = await Sandbox.connect(ids[0], at('B'))
if ((await b0.files.read('/home/user/fleet.txt')) !== `written through B in ${ids[0]}`) throw new Error('file lost over pause/resume')
console.log(JSON.stringify(ids))
