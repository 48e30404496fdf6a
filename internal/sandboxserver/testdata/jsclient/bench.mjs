// Benchmark of hermes sandbox serve (bench/e2b/run.sh) through the E2B JS SDK (bench/e2b/run.sh
// starts the server and runs this with E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY set). Prints p50/p99 of:
//   cycle: Sandbox.create('base') -> commands.run('echo hi') -> kill (RUNS times)
//   create: the Sandbox.create part of each cycle
//   warm: commands.run('echo hi') in one running sandbox (WARM_RUNS times)
//   concurrent: CONCURRENT sandboxes created, each running echo hi, killed, at once
import { Sandbox } from 'e2b'

const RUNS = Number(process.env.RUNS ?? 100)
const WARM_RUNS = Number(process.env.WARM_RUNS ?? 200)
const CONCURRENT = Number(process.env.CONCURRENT ?? 50)
const TEMPLATE = process.env.TEMPLATE ?? 'base'

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const report = (name, xs) =>
  console.log(`${name.padEnd(12)} n=${String(xs.length).padEnd(4)} p50=${pct(xs, 50).toFixed(1)} ms  p99=${pct(xs, 99).toFixed(1)} ms  max=${Math.max(...xs).toFixed(1)} ms`)

async function cycle() {
  const t0 = performance.now()
  const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 60_000 })
  const t1 = performance.now()
  const r = await sbx.commands.run('echo hi')
  if (r.stdout !== 'hi\n') throw new Error(`echo hi printed ${JSON.stringify(r.stdout)}`)
  await sbx.kill()
  return [performance.now() - t0, t1 - t0]
}

await cycle() // warm the server (disk template, spare init)
const cycles = [], creates = []
for (let i = 0; i < RUNS; i++) {
  const [c, cr] = await cycle()
  cycles.push(c)
  creates.push(cr)
}
report('cycle', cycles)
report('create', creates)

const sbx = await Sandbox.create(TEMPLATE, { timeoutMs: 120_000 })
const warm = []
for (let i = 0; i < WARM_RUNS; i++) {
  const t0 = performance.now()
  await sbx.commands.run('echo hi')
  warm.push(performance.now() - t0)
}
await sbx.kill()
report('warm run', warm)

const t0 = performance.now()
const each = await Promise.all(Array.from({ length: CONCURRENT }, () => cycle().then(([c]) => c)))
const wall = performance.now() - t0
report('concurrent', each)
console.log(`concurrent   ${CONCURRENT} sandboxes create+run+kill at once: wall ${wall.toFixed(0)} ms`)

// upload: UPLOAD_MB of random bytes written to one sandbox with
// files.write (UPLOAD_RUNS times; 0 MB skips it), as MB/s.
const UPLOAD_MB = Number(process.env.UPLOAD_MB ?? 0)
if (UPLOAD_MB > 0) {
  const data = new Uint8Array(UPLOAD_MB << 20)
  for (let i = 0; i < data.length; i += 65536) crypto.getRandomValues(data.subarray(i, Math.min(i + 65536, data.length)))
  const up = await Sandbox.create(TEMPLATE, { timeoutMs: 600_000 })
  const rates = []
  for (let i = 0; i < Number(process.env.UPLOAD_RUNS ?? 3); i++) {
    const t0 = performance.now()
    await up.files.write('/home/user/upload.bin', data.buffer)
    const ms = performance.now() - t0
    rates.push((UPLOAD_MB / ms) * 1000)
  }
  const size = (await up.commands.run('stat -c %s /home/user/upload.bin')).stdout.trim()
  if (Number(size) !== data.length) throw new Error(`uploaded ${size} bytes of ${data.length}`)
  await up.kill()
  console.log(`upload       ${UPLOAD_MB} MB files.write n=${rates.length}: ${rates.map((r) => r.toFixed(0)).join(', ')} MB/s (median ${pct(rates, 50).toFixed(0)})`)
}
