// Isolation of abx-local sandboxes (its DESIGN.md "A sandbox on disk and in
// the kernel"): hostnames, files, processes, ports, read-only host, loopback-
// only network.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, newSandbox, dataFetch, eventually } from './lib.mjs'

test('two sandboxes are isolated from each other', async (t) => {
  const [a, b] = await Promise.all([newSandbox(t), newSandbox(t)])

  const ha = (await a.commands.run('hostname')).stdout.trim()
  const hb = (await b.commands.run('hostname')).stdout.trim()
  assert.notEqual(ha, hb)

  await a.files.write('/home/user/only-a.txt', 'a')
  assert.equal(await b.files.exists('/home/user/only-a.txt'), false)
  await a.commands.run('echo tmp-a > /tmp/only-a')
  assert.equal(await b.files.exists('/tmp/only-a'), false)

  // A distinctive argument: bash execs a lone command, so comments vanish.
  const marker = await a.commands.run('sleep 3017.25', { background: true, timeoutMs: 0 })
  try {
    const psA = (await a.commands.run('ps -eo pid,args')).stdout
    const psB = (await b.commands.run('ps -eo pid,args')).stdout
    assert.match(psA, /sleep 3017\.25/)
    assert.doesNotMatch(psB, /sleep 3017\.25/)
    // A sandbox sees only its own PID namespace: few processes, no host ones.
    assert.ok(psB.trim().split('\n').length < 30, `too many processes visible:\n${psB}`)
    assert.doesNotMatch(psB, /abx-local serve/)
  } finally {
    await marker.kill()
  }
})

test('both sandboxes can listen on 8000 independently', async (t) => {
  const [a, b] = await Promise.all([newSandbox(t), newSandbox(t)])
  await a.files.write('w/id.txt', 'I am A')
  await b.files.write('w/id.txt', 'I am B')
  const sa = await a.commands.run('python3 -m http.server 8000', { background: true, cwd: '/home/user/w', timeoutMs: 0 })
  const sb = await b.commands.run('python3 -m http.server 8000', { background: true, cwd: '/home/user/w', timeoutMs: 0 })
  try {
    for (const [sbx, want] of [[a, 'I am A'], [b, 'I am B']]) {
      const body = await eventually(async () => {
        const r = await dataFetch(sbx, 8000, '/id.txt')
        return r.status === 200 ? r.text() : null
      }, { what: `http.server in ${sbx.sandboxId}` })
      assert.equal(body, want)
    }
  } finally {
    await Promise.allSettled([sa.kill(), sb.kill()])
  }
})

test('host system is read-only, even for root', async (t) => {
  const sbx = await newSandbox(t)
  for (const user of ['user', 'root']) {
    for (const path of ['/usr/abx-probe', '/etc/abx-probe']) {
      await assert.rejects(sbx.commands.run(`touch ${path}`, { user }), e2b.CommandExitError, `${user} wrote ${path}`)
    }
  }
  await assert.rejects(sbx.commands.run('echo x >> /etc/passwd', { user: 'root' }), e2b.CommandExitError)
  await assert.rejects(sbx.commands.run('mount -t tmpfs none /mnt', { user: 'root' }), e2b.CommandExitError)
  const r = await sbx.commands.run('touch /home/user/ok /tmp/ok && echo fine')
  assert.equal(r.stdout, 'fine\n')
})

test('network is loopback only', async (t) => {
  const sbx = await newSandbox(t)
  const dev = (await sbx.commands.run('cat /proc/net/dev')).stdout
  const ifaces = dev.split('\n').slice(2).filter((l) => l.includes(':')).map((l) => l.split(':')[0].trim())
  assert.deepEqual(ifaces, ['lo'], `interfaces: ${ifaces}`)
  const ip = await sbx.commands.run('command -v ip >/dev/null && ip -o addr || true')
  for (const line of ip.stdout.split('\n').filter(Boolean)) {
    assert.match(line, /^\d+: lo\s/, `non-loopback address: ${line}`)
  }
  const route = (await sbx.commands.run('cat /proc/net/route')).stdout.trim().split('\n')
  assert.equal(route.length, 1, `routes present:\n${route.join('\n')}`)
  const out = await sbx.commands.run(
    'python3 -c "import socket; s=socket.socket(); s.settimeout(3); s.connect((\'1.1.1.1\', 80))"')
    .then(() => 'connected', (err) => err.stderr)
  assert.notEqual(out, 'connected', 'outbound connection must fail')
  // The host's loopback (abx-local's own API port) is not the sandbox's.
  const apiPort = new URL(process.env.E2B_API_URL).port
  const host = await sbx.commands.run(
    `python3 -c "import socket; s=socket.socket(); s.settimeout(3); s.connect(('127.0.0.1', ${apiPort}))"`)
    .then(() => 'connected', () => 'refused')
  assert.equal(host, 'refused', 'the host control plane must not be reachable from a sandbox')
})

test('the platform state dir is hidden from sandboxes', async (t) => {
  const state = process.env.ABX_CONFORMANCE_STATE_DIR
  if (!state) return t.skip('ABX_CONFORMANCE_STATE_DIR not set (run through run.sh)')
  const a = await newSandbox(t)
  const b = await newSandbox(t)
  const r = await a.commands.run(`ls -A ${state} 2>/dev/null; ls -A ${state}/sandboxes 2>/dev/null; true`, { user: 'root' })
  assert.equal(r.stdout, '', `state dir visible in sandbox: ${r.stdout}`)
  // A process of B carries E2B_SANDBOX_ID=<B> in its environment.
  const bg = await b.commands.run('sleep 60', { background: true })
  assert.match((await b.commands.run(`cat /proc/${bg.pid}/environ | tr '\\0' '\\n' | grep -c ${b.sandboxId}`)).stdout, /^[1-9]/)
  const other = await a.commands.run(`cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c ${b.sandboxId} || true`, { user: 'root' })
  assert.equal(other.stdout.trim(), '0', 'no process of sandbox B is visible from A')
  await bg.kill()
})
