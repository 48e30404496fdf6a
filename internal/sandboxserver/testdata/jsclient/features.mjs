// The E2B SDK features hermes sandbox serve must honour, beyond seed 000:
// background commands, onStdout, CommandExitError, files.list/read/remove,
// setTimeout, pause and connect, list with a state filter, kill.
// Exits non-zero with a message on the first mismatch.
import { Sandbox, CommandExitError } from 'e2b'
import assert from 'node:assert/strict'

const sbx = await Sandbox.create('base', { envs: { FROM_CREATE: 'yes' }, timeoutMs: 120_000 })
try {
  const r = await sbx.commands.run('echo out $FROM_CREATE; echo err >&2; pwd')
  assert.equal(r.stdout, 'out yes\n/home/user\n')
  assert.equal(r.stderr, 'err\n')

  const seen = []
  await sbx.commands.run('for i in 1 2 3; do echo line$i; done', { onStdout: (d) => seen.push(d) })
  assert.equal(seen.join(''), 'line1\nline2\nline3\n')

  await assert.rejects(sbx.commands.run('echo bad >&2; exit 7'), (e) => {
    assert.ok(e instanceof CommandExitError, 'CommandExitError')
    assert.equal(e.exitCode, 7)
    assert.equal(e.stderr, 'bad\n')
    return true
  })

  const bgOut = []
  const bg = await sbx.commands.run('sleep 1; echo bg-done', { background: true, onStdout: (d) => bgOut.push(d) })
  const procs = await sbx.commands.list()
  assert.ok(procs.some((p) => p.pid === bg.pid), 'background command listed')
  const done = await bg.wait()
  assert.equal(done.exitCode, 0)
  assert.equal(bgOut.join(''), 'bg-done\n')

  // A client that goes away leaves the command running; connect finds it.
  const detached = await sbx.commands.run('sleep 2; echo still-here', { background: true })
  await detached.disconnect()
  const rejoined = await sbx.commands.connect(detached.pid)
  const rj = await rejoined.wait()
  assert.equal(rj.stdout, 'still-here\n')

  // The request's timeout (Connect-Timeout-Ms) kills the command.
  const t0 = Date.now()
  await assert.rejects(sbx.commands.run('sleep 60', { timeoutMs: 1000 }))
  assert.ok(Date.now() - t0 < 30_000, 'timeoutMs ended the command')
  // (the client gives up at the deadline; the kill lands a moment later)
  let alive = true
  for (let i = 0; i < 100 && alive; i++) {
    alive = (await sbx.commands.list()).some((p) => p.cmd === '/bin/bash' && p.args.includes('sleep 60'))
    if (alive) await new Promise((r) => setTimeout(r, 100))
  }
  assert.ok(!alive, 'timed-out command is gone')

  // stdin: send, then close (EOF)
  const cat = await sbx.commands.run('cat', { background: true, stdin: true })
  await sbx.commands.sendStdin(cat.pid, 'piped\n')
  await sbx.commands.closeStdin(cat.pid)
  assert.equal((await cat.wait()).stdout, 'piped\n')

  // PTY: a terminal of the asked size, input typed into it
  const ptyOut = []
  const term = await sbx.pty.create({ cols: 91, rows: 37, onData: (d) => ptyOut.push(Buffer.from(d).toString()) })
  await sbx.pty.sendInput(term.pid, new TextEncoder().encode('stty size; echo pty-$((6*7)); exit\n'))
  await term.wait().catch(() => {})
  const screen = ptyOut.join('')
  assert.ok(screen.includes('pty-42'), `pty output: ${JSON.stringify(screen)}`)
  assert.ok(screen.includes('37 91'), `pty size: ${JSON.stringify(screen)}`)

  const killMe = await sbx.commands.run('sleep 600', { background: true })
  assert.equal(await sbx.commands.kill(killMe.pid), true)

  await sbx.files.write('/home/user/dir/a.txt', 'alpha')
  await sbx.files.write([{ path: '/home/user/dir/b.txt', data: 'beta' }])
  assert.equal(await sbx.files.read('/home/user/dir/a.txt'), 'alpha')
  const names = (await sbx.files.list('/home/user/dir')).map((e) => e.name).sort()
  assert.deepEqual(names, ['a.txt', 'b.txt'])
  await sbx.files.remove('/home/user/dir/a.txt')
  assert.equal(await sbx.files.exists('/home/user/dir/a.txt'), false)
  assert.equal(await sbx.files.makeDir('/home/user/dir/sub'), true)
  assert.equal(await sbx.files.makeDir('/home/user/dir/sub'), false)
  await sbx.files.rename('/home/user/dir/b.txt', '/home/user/dir/sub/c.txt')
  assert.equal(await sbx.files.read('/home/user/dir/sub/c.txt'), 'beta')

  await sbx.setTimeout(300_000)
  const info = await sbx.getInfo()
  assert.ok(info.endAt.getTime() - Date.now() > 200_000, 'setTimeout moved endAt')

  await sbx.pause()
  const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems()
  assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId), 'paused sandbox listed as paused')
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await back.files.read('/home/user/dir/sub/c.txt'), 'beta', 'files survive pause and connect')
  const again = await back.commands.run('echo $FROM_CREATE')
  assert.equal(again.stdout, 'yes\n')
} finally {
  await sbx.kill()
}
assert.equal(await Sandbox.kill(sbx.sandboxId), false)
console.log('features ok')
