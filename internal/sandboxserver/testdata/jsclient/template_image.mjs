// Templates from OCI images (issue 27): hermes sandbox serve --template
// NAME=REF makes sandboxes from an image in a registry. The sandbox sees
// the image's files (not the host's), its Env, starts commands in its
// WorkingDir and runs them as its User (IMAGE_UID), root when asked or
// through sudo, found on the image's PATH. A
// template whose image cannot be pulled fails the create with E2B's
// error, naming the template and the reference (BROKEN_TEMPLATE,
// BROKEN_REF). Exits non-zero with a message on the first mismatch.
import { Sandbox } from 'e2b'
import assert from 'node:assert/strict'

const uid = process.env.IMAGE_UID
const sbx = await Sandbox.create(process.env.TEMPLATE, { timeoutMs: 120_000 })
try {
  let r = await sbx.commands.run('cat hello.txt; echo $GREETING; pwd; id -u; id -g')
  assert.equal(r.stdout, `hello from the image\nfrom-image\n/opt/app\n${uid}\n${uid}\n`)
  r = await sbx.commands.run('id -u; test -e /etc/debian_version || echo no-host-tree', { user: 'root' })
  assert.equal(r.stdout, '0\nno-host-tree\n')
  // The sandbox's user has passwordless sudo, as on E2B, though it is the
  // image's User and the image's PATH (/bin) has no /usr/local/bin.
  r = await sbx.commands.run('sudo id -u; /usr/local/bin/sudo id -u; command -v sudo')
  assert.equal(r.stdout, '0\n0\n/bin/sudo\n')
  r = await sbx.commands.run('pwd', { cwd: '/tmp' })
  assert.equal(r.stdout, '/tmp\n')

  await sbx.files.write('/home/user/notes.md', '# notes\n')
  r = await sbx.commands.run('stat -c %u /home/user/notes.md /home/user')
  assert.equal(r.stdout, `${uid}\n${uid}\n`)
  assert.equal(await sbx.files.read('/opt/app/hello.txt'), 'hello from the image\n')
} finally {
  await sbx.kill()
}

const broken = process.env.BROKEN_TEMPLATE
await assert.rejects(Sandbox.create(broken, { timeoutMs: 60_000 }), (err) => {
  assert.match(err.message, new RegExp(`template "${broken}": pull image ${process.env.BROKEN_REF.replace(/[.]/g, '[.]')}`))
  return true
})
console.log('template image ok')
