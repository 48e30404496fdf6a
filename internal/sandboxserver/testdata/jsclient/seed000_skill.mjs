import { Sandbox } from 'e2b'
const sandbox = await Sandbox.create('hermes', {
envs: { OPENROUTER_API_KEY: process.env.OPENROUTER_API_KEY },
timeoutMs: 900_000,
})
await sandbox.commands.run('mkdir -p /home/user/incidents')
await sandbox.files.write('/home/user/runbook.md', `
# Checkout incident runbook
- Compare error rates by endpoint and release.
- Check dependency latency before proposing a rollback.
- Write findings to /home/user/reports/incident.md.
`)
await sandbox.files.write('/home/user/incidents/first.json', JSON.stringify({
release: 'checkout-42',
errorRate: 0.08,
paymentsP95Ms: 1700,
}))
const common =
'hermes chat -Q --yolo --provider openrouter ' +
'--model anthropic/claude-sonnet-4.6 '
await sandbox.commands.run(
common +
`-q "Study /home/user/runbook.md, apply it to /home/user/incidents/first.json, and create a reusable skill named incident-triage"`,
)
await sandbox.files.write('/home/user/incidents/next.json', JSON.stringify({
release: 'checkout-43',
errorRate: 0.11,
errorsByRelease: { 'checkout-42': 3, 'checkout-43': 417 },
}))
const nextIncident = await sandbox.commands.run(
common +
`--skills incident-triage -q "Use the incident-triage skill to investigate the newest incident"`,
)
console.log(nextIncident.stdout)
await sandbox.kill()
