// A command in flight when the server gets SIGTERM is answered: connects
// to sandbox ID, starts a 2 s command, prints "started" (the test then
// sends SIGTERM), and prints the command's output when it ends.
import { Sandbox } from 'e2b'

const sbx = await Sandbox.connect(process.env.ID, { timeoutMs: 600_000 })
const h = await sbx.commands.run('sleep 2; echo finished-after-sigterm', { background: true })
console.log('started')
const r = await h.wait()
console.log(r.stdout.trim())
