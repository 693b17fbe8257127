// Isolation of abx-local sandboxes (its DESIGN.md "A sandbox on disk and in
// the kernel"): hostnames, files, processes, ports, read-only host, loopback-
// only network.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { e2b, newSandbox, dataFetch, eventually } from './lib.mjs'

test('two sandboxes are isolated from each other', async (t) => {
  const [a, b] = await Promise.all([newSandbox(t), newSandbox(t)])

  const ha = (await a.commands.run('hostname')).stdout.trim()
  const hb = (await b.commands.run('hostname')).stdout.trim()
  assert.notEqual(ha, hb)

  // A boot id of its own: a random UUID, not the host's (which the runner
  // reads here, on the host), another in the other sandbox.
  const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
  const [ba, bb] = [await bootId(a), await bootId(b)]
  const host = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  assert.match(ba, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  assert.notEqual(ba, bb)
  assert.notEqual(ba, host)
  assert.notEqual(bb, host)

  await a.files.write('/home/user/only-a.txt', 'a')
  assert.equal(await b.files.exists('/home/user/only-a.txt'), false)
  await a.commands.run('echo tmp-a > /tmp/only-a')
  assert.equal(await b.files.exists('/tmp/only-a'), false)

  // A distinctive argument: bash execs a lone command, so comments vanish.
  const marker = await a.commands.run('sleep 3017.25', { background: true, timeoutMs: 0 })
  try {
    // "pid args" per process, from /proc (the base template has no ps)
    const ps = 'for p in /proc/[0-9]*; do printf \'%s %s\\n\' "${p#/proc/}" "$(tr \'\\0\' \' \' < $p/cmdline 2>/dev/null)"; done'
    const psA = (await a.commands.run(ps)).stdout
    const psB = (await b.commands.run(ps)).stdout
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
  // python3's http.server: code-interpreter-v1 has python3, base does not
  const [a, b] = await Promise.all([newSandbox(t, {}, 'code-interpreter-v1'), newSandbox(t, {}, 'code-interpreter-v1')])
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

test('the root is the sandbox\'s own: root may write it, user may not, others never see it', async (t) => {
  const sbx = await newSandbox(t)
  const other = await newSandbox(t)
  for (const path of ['/usr/abx-probe', '/etc/abx-probe']) {
    await assert.rejects(sbx.commands.run(`touch ${path}`), e2b.CommandExitError, `user wrote ${path}`)
  }
  await assert.rejects(sbx.commands.run('echo x >> /etc/passwd'), e2b.CommandExitError)
  const w = await sbx.commands.run('touch /usr/abx-probe /etc/abx-probe && echo abx-probe >> /etc/passwd && echo written',
    { user: 'root' })
  assert.equal(w.stdout, 'written\n')
  const seen = await other.commands.run('ls /usr/abx-probe /etc/abx-probe 2>/dev/null; grep -c abx-probe /etc/passwd || true',
    { user: 'root' })
  assert.equal(seen.stdout, '0\n', 'another sandbox sees none of those writes')
  // mount(2) of a tmpfs on /mnt, through perl (the base template has no mount)
  await assert.rejects(sbx.commands.run('perl -e \'require "syscall.ph"; my ($s, $t, $f) = ("none", "/mnt", "tmpfs"); ' +
    'syscall(&SYS_mount, $s, $t, $f, 0, 0) == 0 or die "mount: $!\\n"\'', { user: 'root' }), e2b.CommandExitError)
  const r = await sbx.commands.run('touch /home/user/ok /tmp/ok && echo fine')
  assert.equal(r.stdout, 'fine\n')
})

test('network is loopback only', async (t) => {
  const sbx = await newSandbox(t)
  const dev = (await sbx.commands.run('cat /proc/net/dev')).stdout
  const ifaces = dev.split('\n').slice(2).filter((l) => l.includes(':')).map((l) => l.split(':')[0].trim())
  assert.deepEqual(ifaces, ['lo'], `interfaces: ${ifaces}`)
  // Every address (what `ip -o addr` lists; the base template has no ip):
  // IPv4 local addresses from fib_trie, IPv6 ones with their interface.
  const ip = await sbx.commands.run('awk \'/host LOCAL/ { print "inet", a } { a = $2 }\' /proc/net/fib_trie; ' +
    'if [ -r /proc/net/if_inet6 ]; then awk \'{ print "inet6", $1, $6 }\' /proc/net/if_inet6; fi')
  const addrs = ip.stdout.split('\n').filter(Boolean)
  assert.ok(addrs.length > 0, 'no address listed')
  for (const line of addrs) {
    assert.match(line, /^(inet 127\.\d+\.\d+\.\d+|inet6 \S+ lo)$/, `non-loopback address: ${line}`)
  }
  const route = (await sbx.commands.run('cat /proc/net/route')).stdout.trim().split('\n')
  assert.equal(route.length, 1, `routes present:\n${route.join('\n')}`)
  const out = await sbx.commands.run("timeout 3 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80'")
    .then(() => 'connected', (err) => err.stderr)
  assert.notEqual(out, 'connected', 'outbound connection must fail')
  // The host's loopback (abx-local's own API port) is not the sandbox's.
  const apiPort = new URL(process.env.E2B_API_URL).port
  const host = await sbx.commands.run(`timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/${apiPort}'`)
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
