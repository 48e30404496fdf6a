import { Sandbox } from 'e2b'
const sandbox = await Sandbox.create('hermes', {
envs: { OPENROUTER_API_KEY: process.env.OPENROUTER_API_KEY },
timeoutMs: 600_000,
})
const result = await sandbox.commands.run(
`hermes chat -Q --yolo --provider openrouter --model anthropic/claude-sonnet-4.6 -q "Inspect this workspace and summarize its purpose"`
)
console.log(result.stdout)
await sandbox.kill()
