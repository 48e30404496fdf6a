// Issue 29's fleet proof, after node C was killed: through node A and B,
// C's sandboxes (LOST) answer an error naming node C, promptly; the others
// (KEPT) still run commands and keep their files. Prints "fleet ok".
//   env: A_API A_ENVD B_API B_ENVD LOST KEPT (comma-separated ids) E2B_API_KEY
import { Sandbox } from 'e2b'

const at = (n) => ({ apiUrl: process.env[`${n}_API`], sandboxUrl: process.env[`${n}_ENVD`] })
const lost = (process.env.LOST || '').split(',').filter(Boolean)
const kept = (process.env.KEPT || '').split(',').filter(Boolean)
for (const id of lost) {
  try {
    await Sandbox.connect(id, at('A'))
    throw new Error(`${id}: connect through A succeeded while its node is gone`)
  } catch (e) {
    if (!/node c\b/.test(e.message)) throw new Error(`${id}: not the node-down error: ${e.message}`)
    console.log(`lost ${id}: ${e.message}`)
  }
}
await Promise.all(kept.map(async (id) => {
  const s = await Sandbox.connect(id, at('B'))
  const r = await s.commands.run(`cat /home/user/fleet.txt`)
  if (r.stdout !== `written through B in ${id}`) throw new Error(`${id} after C's loss: ${JSON.stringify(r.stdout)}`)
}))
console.log('fleet ok')
