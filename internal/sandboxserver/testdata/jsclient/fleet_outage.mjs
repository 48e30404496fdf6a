// Issue 29's database outage, through node A while the fleet's PostgreSQL
// is cut off: sandbox ID (on node B, reached through A before the cut)
// still connects, runs commands and writes and reads files through A;
// a create through A is refused with E2B's error saying the catalog
// cannot be reached. Prints "outage ok".
//   env: A_API A_ENVD ID E2B_API_KEY
import { Sandbox } from 'e2b'

const a = { apiUrl: process.env.A_API, sandboxUrl: process.env.A_ENVD }
const s = await Sandbox.connect(process.env.ID, { ...a, timeoutMs: 600_000 })
const r = await s.commands.run('echo still-running')
if (r.stdout.trim() !== 'still-running') throw new Error(`a command during the outage printed ${JSON.stringify(r.stdout)}`)
await s.files.write('/home/user/outage.txt', 'written during the outage')
if ((await s.files.read('/home/user/outage.txt')) !== 'written during the outage') throw new Error('file lost during the outage')
try {
  await Sandbox.create('base', a)
  throw new Error('a create succeeded while the catalog is out')
} catch (e) {
  if (!/catalog cannot be reached/.test(e.message)) throw new Error(`not the catalog error: ${e.message}`)
  console.log(`create refused: ${e.message}`)
}
console.log('outage ok')
