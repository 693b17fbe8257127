// commands through the official SDK (as E2B's own SDK tests of commands).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, newSandbox, rejectsWith, eventually, FC } from './lib.mjs'

test('run foreground command', async (t) => {
  const sbx = await newSandbox(t)
  const r = await sbx.commands.run('echo "Hello, World!"')
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'Hello, World!\n')
  assert.equal(r.stderr, '')
  const special = await sbx.commands.run('echo "!@#$%^&*()_+"')
  assert.equal(special.stdout, '!@#$%^&*()_+\n')
  const multi = await sbx.commands.run('echo "Hello,\nWorld!"')
  assert.equal(multi.stdout, 'Hello,\nWorld!\n')
  const chunks = []
  const cb = await sbx.commands.run('echo out; echo err >&2', { onStdout: (d) => chunks.push(d) })
  assert.equal(cb.stderr, 'err\n')
  assert.equal(chunks.join(''), 'out\n')
})

test('non-zero exit raises CommandExitError with exitCode/stdout/stderr', async (t) => {
  const sbx = await newSandbox(t)
  await assert.rejects(sbx.commands.run('echo partial; echo bad >&2; exit 3'), (err) => {
    assert.ok(err instanceof e2b.CommandExitError, `got ${err.constructor.name}: ${err.message}`)
    assert.equal(err.exitCode, 3)
    assert.equal(err.stdout, 'partial\n')
    assert.equal(err.stderr, 'bad\n')
    assert.match(err.error, /exit status 3/)
    return true
  })
})

test('envs, cwd and user', async (t) => {
  const sbx = await newSandbox(t)
  assert.equal((await sbx.commands.run('echo $FOO', { envs: { FOO: 'bar' } })).stdout, 'bar\n')
  assert.equal((await sbx.commands.run('echo "[$FOO]"')).stdout, '[]\n', 'command env must not leak')
  const child = await sbx.commands.run('printenv PYV', { envs: { PYV: 'pyval' } })
  assert.equal(child.stdout, 'pyval\n')
  assert.equal((await sbx.commands.run('pwd')).stdout, '/home/user\n')
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')
  assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n')
  assert.equal((await sbx.commands.run('whoami', { user: 'root' })).stdout, 'root\n')
  assert.equal((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n')
  assert.equal((await sbx.commands.run('echo $HOME', { user: 'root' })).stdout, '/root\n')
  assert.equal((await sbx.commands.run('echo $E2B_SANDBOX')).stdout, 'true\n')
  assert.equal((await sbx.commands.run('echo $E2B_SANDBOX_ID')).stdout, `${sbx.sandboxId}\n`)
  await assert.rejects(sbx.commands.run('pwd', { cwd: '/does/not/exist' }), e2b.SandboxError)
})

// E2B's base lets its user sudo (E2B's own test: a variable given to one
// command does not reach a later `sudo echo "$FOO"`). abx-local's sudo is
// served by envd (docs/security.md "sudo"); the fc profile has none.
test('sudo runs as root; one command\'s envs do not leak into the next', async (t) => {
  const sbx = await newSandbox(t)
  if (FC) {
    await assert.rejects(sbx.commands.run('sudo id'), (err) => {
      assert.ok(err instanceof e2b.CommandExitError, `got ${err.constructor.name}: ${err.message}`)
      assert.equal(err.exitCode, 1)
      assert.match(err.stderr, /no sudo service/)
      return true
    })
    return
  }
  assert.equal((await sbx.commands.run('whoami')).stdout, 'user\n')
  assert.equal((await sbx.commands.run('sudo whoami')).stdout, 'root\n')
  assert.equal((await sbx.commands.run('echo "$FOO"', { envs: { FOO: 'bar' } })).stdout, 'bar\n')
  assert.equal((await sbx.commands.run('sudo echo "$FOO"')).stdout, '\n')
  await assert.rejects(sbx.commands.run('sudo sh -c "exit 3"'), (err) => err.exitCode === 3)
})

test('timeout: fast command succeeds, slow one times out', async (t) => {
  const sbx = await newSandbox(t)
  const r = await sbx.commands.run('echo quick', { timeoutMs: 4_000 })
  assert.equal(r.stdout, 'quick\n')
  await rejectsWith(sbx.commands.run('sleep 10', { timeoutMs: 1_000 }), e2b.TimeoutError, 'sleep 10 with 1 s timeout')
  const h = await sbx.commands.run('sleep 10', { background: true, timeoutMs: 1_000 })
  await rejectsWith(h.wait(), e2b.TimeoutError, 'background wait past timeout')
})

test('background command, wait, list, connect, kill', async (t) => {
  const sbx = await newSandbox(t)
  const h = await sbx.commands.run('sleep 0.5; echo done-bg', { background: true })
  assert.ok(h.pid > 0)
  const r = await h.wait()
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'done-bg\n')

  const s1 = await sbx.commands.run('sleep 30', { background: true })
  const s2 = await sbx.commands.run('sleep 30', { background: true })
  const pids = (await sbx.commands.list()).map((p) => p.pid)
  assert.ok(pids.includes(s1.pid) && pids.includes(s2.pid), `list ${pids} lacks ${s1.pid}/${s2.pid}`)
  const listed = (await sbx.commands.list()).find((p) => p.pid === s1.pid)
  assert.equal(listed.cmd, '/bin/bash')
  assert.deepEqual(listed.args, ['-l', '-c', 'sleep 30'])

  const again = await sbx.commands.connect(s1.pid)
  assert.equal(again.pid, s1.pid)

  assert.equal(await sbx.commands.kill(s1.pid), true)
  assert.equal(await s2.kill(), true)
  await assert.rejects(sbx.commands.run(`kill -0 ${s1.pid}`), e2b.CommandExitError)
  assert.equal(await sbx.commands.kill(999999), false)
  await rejectsWith(sbx.commands.connect(999999), e2b.NotFoundError, 'connect to missing pid')
  const after = (await sbx.commands.list()).map((p) => p.pid)
  assert.ok(!after.includes(s1.pid) && !after.includes(s2.pid))
})

test('stdin: sendStdin, bytes, handle, closeStdin', async (t) => {
  const sbx = await newSandbox(t)
  let seen = ''
  const cat = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => { seen += d } })
  await sbx.commands.sendStdin(cat.pid, 'hello ')
  await cat.sendStdin(new TextEncoder().encode('special !@#$%^&*()\nworld'))
  await eventually(() => seen.includes('world'), { what: 'stdin echoed by cat' })
  await cat.closeStdin()
  const r = await cat.wait()
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'hello special !@#$%^&*()\nworld')

  const empty = await sbx.commands.run('cat', { background: true, stdin: true })
  await empty.sendStdin('')
  await sbx.commands.closeStdin(empty.pid)
  const er = await empty.wait()
  assert.equal(er.stdout, '')
})

test('broken UTF-8 output decodes with replacement character', async (t) => {
  const sbx = await newSandbox(t)
  const r = await sbx.commands.run(`printf 'a%.0s' $(seq 8191); printf '\\xe2'`)
  assert.equal(r.exitCode, 0)
  assert.equal(r.stdout, 'a'.repeat(8191) + '\uFFFD')
})

test('killing the sandbox while a command is running throws an actionable error', async (t) => {
  const sbx = await newSandbox(t)
  const cmd = await sbx.commands.run('sleep 60', { background: true })
  await sbx.kill()
  const err = await cmd.wait().then(() => null, (e) => e)
  assert.ok(err instanceof e2b.SandboxError, `expected SandboxError, got ${err && err.constructor.name}: ${err && err.message}`)
  assert.match(err.message, /sandbox was killed or reached its end of life/)
})

test('command envs override sandbox envs; sandbox envs persist', async (t) => {
  const sbx = await newSandbox(t, { envs: { LAYER: 'sandbox', ONLY_SBX: 'yes' } })
  assert.equal((await sbx.commands.run('echo $LAYER $ONLY_SBX')).stdout, 'sandbox yes\n')
  assert.equal((await sbx.commands.run('echo $LAYER', { envs: { LAYER: 'command' } })).stdout, 'command\n')
  assert.equal((await sbx.commands.run('echo $LAYER', { user: 'root' })).stdout, 'sandbox\n')
})
