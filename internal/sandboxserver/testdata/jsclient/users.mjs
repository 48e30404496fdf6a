// E2B's user model (issue 25): commands and file operations run as
// `user` (uid SANDBOX_USER_UID: the uid hermes sandbox serve logged, 1000
// as in E2B unless the host uses it; home /home/user) unless the SDK passes user: 'root';
// files the SDK writes belong to the user that wrote them; the hermes
// template's HERMES_HOME belongs to `user` and has the bundled skills.
// Exits non-zero with a message on the first mismatch.
import { Sandbox } from 'e2b'
import assert from 'node:assert/strict'

const uid = process.env.SANDBOX_USER_UID
assert.match(uid ?? '', /^[0-9]+$/, 'SANDBOX_USER_UID: the uid the server logged')

const sbx = await Sandbox.create('hermes', { timeoutMs: 120_000 })
try {
  let r = await sbx.commands.run('echo $(id -u) $(id -g) $HOME $USER; pwd')
  assert.equal(r.stdout, `${uid} ${uid} /home/user user\n/home/user\n`)
  r = await sbx.commands.run('echo $(id -u) $HOME; pwd', { user: 'root' })
  assert.equal(r.stdout, '0 /root\n/root\n')

  await sbx.files.write('/home/user/runbook.md', '# runbook\n')
  r = await sbx.commands.run('stat -c %u:%g /home/user/runbook.md /home/user /home/user/.hermes')
  assert.equal(r.stdout, `${uid}:${uid}\n`.repeat(3))
  await sbx.files.write('/tmp/as-root.txt', 'x', { user: 'root' })
  r = await sbx.commands.run('stat -c %u /tmp/as-root.txt')
  assert.equal(r.stdout, '0\n')

  // The user cannot write where root owns the directory; root can.
  await assert.rejects(sbx.files.write('/etc/hermes-e2b-test', 'x'))
  await sbx.files.write('/etc/hermes-e2b-test', 'x', { user: 'root' })
  assert.equal(await sbx.files.read('/etc/hermes-e2b-test'), 'x')
  await assert.rejects(sbx.commands.run('touch /etc/hermes-e2b-other'))

  // Passwordless sudo, as E2B's `user` has: root for that command only,
  // writes under /usr as a package install makes, stdin and the exit status
  // passed through; root without capabilities, as user: 'root' is.
  r = await sbx.commands.run('id -u; sudo id -u; sudo -n -E id -u; echo x | sudo sh -c "cat; exit 3" || echo code=$?')
  assert.equal(r.stdout, `${uid}\n0\n0\nx\ncode=3\n`)
  r = await sbx.commands.run('sudo mkdir -p /usr/local/lib/e2b-pkg && echo 1.0 | sudo tee /usr/local/lib/e2b-pkg/VERSION >/dev/null && stat -c %u /usr/local/lib/e2b-pkg/VERSION && cat /usr/local/lib/e2b-pkg/VERSION')
  assert.equal(r.stdout, '0\n1.0\n')
  const probe = "grep -E '^(Cap(Inh|Prm|Eff|Bnd)|NoNewPrivs|Seccomp):' /proc/self/status; readlink /proc/self/ns/pid"
  const asRoot = await sbx.commands.run(probe, { user: 'root' })
  r = await sbx.commands.run(`sudo sh -c "${probe}"`)
  assert.equal(r.stdout, asRoot.stdout)
  assert.match(r.stdout, /CapEff:\t0000000000000000/)

  // mkdir through the SDK belongs to the user too.
  await sbx.files.makeDir('/home/user/incidents')
  r = await sbx.commands.run('stat -c %u /home/user/incidents')
  assert.equal(r.stdout, `${uid}\n`)

  // The hermes template's bundled skills, seeded into the user's HERMES_HOME.
  r = await sbx.commands.run('hermes skills list')
  assert.match(r.stdout, /working-in-a-box/)
  r = await sbx.commands.run('stat -c %u /home/user/.hermes/skills')
  assert.equal(r.stdout, `${uid}\n`)
  console.log('users ok')
} finally {
  await sbx.kill()
}
