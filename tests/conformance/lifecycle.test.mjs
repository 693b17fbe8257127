// Sandbox lifecycle through the official SDK: create (metadata, envs), list
// by metadata, getInfo, setTimeout, connect, kill (as E2B's own SDK tests),
// pause/resume and autoResume, metrics, logs, reserved metadata, the v2
// lifecycle routes — each on the e2b and the fc profile (lib.mjs FC).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  Sandbox, e2b, newSandbox, listIds, rejectsWith, RUN_ID, sleep, FC, PROFILE, platformProfile,
  apiFetch, apiMessage, dataFetch, versionAtLeast, eventually, GVISOR
} from './lib.mjs'

// Sandbox ids are opaque: E2B's are 20 lower-case alphanumerics, FC's docs
// show `sbx-...`. A test only relies on what every URL needs: one host label.
function assertOpaqueId (id) {
  assert.equal(typeof id, 'string')
  assert.ok(id.length > 0 && id.length <= 63, `id length ${id.length}`)
  assert.doesNotMatch(id, /[./:\s]/, 'an id fits in <port>-<id>.<domain>')
}

test('the server runs the profile the suite was started for', async () => {
  const p = await platformProfile()
  assert.equal(p.profile, PROFILE)
  assert.equal(typeof p.switches, 'object')
  // The switches this suite branches on (../../abx-local/server/profile.c).
  for (const name of ['pause', 'v2-lifecycle', 'signed-urls', 'tokens-in-info', 'logs', 'metrics-full']) {
    assert.equal(p.switches[name], !FC, `switch ${name}`)
  }
  for (const name of ['envd-0.5.2', 'fc-metadata', 'traffic-gate-envd', 'gateway-errors', 'fc-messages']) {
    assert.equal(p.switches[name], FC, `switch ${name}`)
  }
  // fc: FC's envd; e2b: one with every feature SDK 2.31.0 gates on a version.
  if (FC) assert.equal(p.envdVersion, '0.5.2')
  else assert.ok(versionAtLeast(p.envdVersion, '0.6.4'), `envd ${p.envdVersion}`)
})

test('create reports running sandbox with envd version', async (t) => {
  const sbx = await newSandbox(t)
  assertOpaqueId(sbx.sandboxId)
  assert.equal(await sbx.isRunning(), true)
  const info = await sbx.getInfo()
  assert.match(info.envdVersion, /^\d+\.\d+\.\d+$/)
  // FC's envd is 0.5.2: the SDK disables what needs newer (files.test.mjs).
  assert.equal(info.envdVersion, (await platformProfile()).envdVersion)
  if (FC) assert.equal(info.envdVersion, '0.5.2')
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'base')
  assert.equal(info.state, 'running')
})

test('create with metadata and envs; list by metadata', async (t) => {
  const tag = `m${Date.now().toString(36)}`
  const sbx = await newSandbox(t, { metadata: { uniq: tag, app: 'conformance' }, envs: { ABX_GLOBAL: 'from-create' } })
  const r = await sbx.commands.run('echo $ABX_GLOBAL')
  assert.equal(r.stdout, 'from-create\n')
  const ids = await listIds({ metadata: { uniq: tag } })
  assert.deepEqual(ids, [sbx.sandboxId])
  const both = await listIds({ metadata: { uniq: tag, app: 'conformance' } })
  assert.deepEqual(both, [sbx.sandboxId])
  assert.deepEqual(await listIds({ metadata: { uniq: tag, app: 'other' } }), [])
  const info = await sbx.getInfo()
  assert.equal(info.metadata.uniq, tag)
  assert.equal(info.metadata.abxConformance, RUN_ID)
})

test('list paginates with limit', async (t) => {
  const tag = `p${Date.now().toString(36)}`
  const a = await newSandbox(t, { metadata: { page: tag } })
  const b = await newSandbox(t, { metadata: { page: tag } })
  const paginator = Sandbox.list({ query: { metadata: { page: tag } }, limit: 1 })
  const first = await paginator.nextItems()
  assert.equal(first.length, 1)
  assert.equal(paginator.hasNext, true)
  const second = await paginator.nextItems()
  assert.equal(second.length, 1)
  assert.deepEqual([first[0].sandboxId, second[0].sandboxId].sort(), [a.sandboxId, b.sandboxId].sort())
  // newest first
  assert.equal(first[0].sandboxId, b.sandboxId)
})

test('get info (instance and static)', async (t) => {
  const sbx = await newSandbox(t)
  const info = await Sandbox.getInfo(sbx.sandboxId)
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.ok(info.startedAt instanceof Date)
  assert.ok(info.endAt instanceof Date)
  assert.ok(info.endAt > info.startedAt)
  assert.ok(info.cpuCount > 0)
  assert.ok(info.memoryMB > 0)
})

test('set timeout shortens and extends end time', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.setTimeout(5_000)
  const short = await sbx.getInfo()
  assert.ok(short.endAt.getTime() - Date.now() <= 6_000, 'end time moved to about 5 s from now')
  await sbx.setTimeout(60_000)
  const long = await sbx.getInfo()
  assert.ok(long.endAt > short.endAt)
  await sleep(6_000)
  assert.equal(await sbx.isRunning(), true, 'extended sandbox still running after the short timeout')
})

test('shortened timeout kills the sandbox', async (t) => {
  const sbx = await newSandbox(t)
  await Sandbox.setTimeout(sbx.sandboxId, 3_000)
  await sleep(6_000)
  assert.equal(await sbx.isRunning(), false)
  const ids = await listIds({ metadata: { abxConformance: RUN_ID } })
  assert.ok(!ids.includes(sbx.sandboxId), 'expired sandbox must leave the running list')
})

test('connect to running sandbox, does not shorten timeout', async (t) => {
  const sbx = await newSandbox(t, { timeoutMs: 300_000 })
  const before = await sbx.getInfo()
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10_000 })
  assert.equal(again.sandboxId, sbx.sandboxId)
  assert.equal(await again.isRunning(), true)
  const after = await sbx.getInfo()
  assert.ok(after.endAt.getTime() >= before.endAt.getTime(), 'connect must not shorten the timeout')
  const r = await again.commands.run('echo connected')
  assert.equal(r.stdout, 'connected\n')
})

test('connect extends timeout of running sandbox', async (t) => {
  const sbx = await newSandbox(t, { timeoutMs: 20_000 })
  const before = await sbx.getInfo()
  await Sandbox.connect(sbx.sandboxId, { timeoutMs: 200_000 })
  const after = await sbx.getInfo()
  assert.ok(after.endAt > before.endAt)
})

test('kill: instance, static, non-existing', async (t) => {
  const sbx = await newSandbox(t)
  const other = await newSandbox(t)
  assert.equal(await sbx.kill(), true)
  assert.equal(await Sandbox.kill(other.sandboxId), true)
  const ids = await listIds({ metadata: { abxConformance: RUN_ID } })
  assert.ok(!ids.includes(sbx.sandboxId))
  assert.ok(!ids.includes(other.sandboxId))
  assert.equal(await Sandbox.kill(sbx.sandboxId), false)
  assert.equal(await Sandbox.kill('nonexistingsandbox0'), false)
  await rejectsWith(Sandbox.getInfo(sbx.sandboxId), e2b.SandboxNotFoundError, 'getInfo of killed sandbox')
  await rejectsWith(Sandbox.connect(sbx.sandboxId), e2b.SandboxNotFoundError, 'connect to killed sandbox')
  assert.equal(await sbx.isRunning(), false)
})

test('secure sandbox exposes access token and rejects unauthenticated envd calls', async (t) => {
  const sbx = await newSandbox(t, { secure: true })
  const r = await sbx.commands.run('echo Hello World!')
  assert.equal(r.stdout, 'Hello World!\n')
  const res = await fetch(new URL('/process.Process/List', process.env.E2B_SANDBOX_URL), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' },
    body: '{}'
  })
  assert.equal(res.status, 401)
  const body = await res.json()
  assert.equal(body.code, 401)
})

test('unknown template is rejected', async () => {
  // The SDK words control-plane errors "<status>: <body.message>"; FC puts
  // its code name in front of the message.
  await assert.rejects(Sandbox.create('no-such-template-xyz', { metadata: { abxConformance: RUN_ID } }), (err) => {
    assert.ok(err instanceof e2b.SandboxError, `got ${err.constructor.name}: ${err.message}`)
    assert.equal(err.message, `404: ${apiMessage('ResourceNotFound', "template 'no-such-template-xyz' not found")}`)
    return true
  })
})

// FC: pause/resume is allow-listed (not on the Eco plan); the SDK surfaces
// the platform's 403 and the sandbox keeps running untouched.
test('pause, then connect resumes with files and processes intact', async (t) => {
  const sbx = await newSandbox(t)
  if (FC) {
    await sbx.files.write('keep.txt', 'kept')
    const bg = await sbx.commands.run('sleep 120', { background: true, timeoutMs: 0 })
    const refused = (err) => {
      assert.ok(err instanceof e2b.SandboxError, `got ${err.constructor.name}: ${err.message}`)
      assert.match(err.message, /^403: Forbidden: pause is available to allow-listed accounts only/)
      return true
    }
    await assert.rejects(sbx.pause(), refused)
    await assert.rejects(Sandbox.pause(sbx.sandboxId), refused)
    assert.equal(await sbx.isRunning(), true)
    assert.equal((await sbx.getInfo()).state, 'running')
    assert.ok(!(await listIds({ metadata: { abxConformance: RUN_ID }, state: ['paused'] })).includes(sbx.sandboxId))
    // The deprecated resume route (no SDK 2.x call) is refused alike.
    const resume = await apiFetch(`/sandboxes/${sbx.sandboxId}/resume`, { method: 'POST', body: {} })
    assert.equal(resume.status, 403)
    assert.match(resume.json.message, /^Forbidden: resume is available to allow-listed accounts only/)
    const back = await Sandbox.connect(sbx.sandboxId)
    assert.equal(await back.files.read('keep.txt'), 'kept')
    assert.ok((await back.commands.list()).some((p) => p.pid === bg.pid), 'process untouched by the refused pause')
    return
  }
  await sbx.files.write('keep.txt', 'kept')
  const bg = await sbx.commands.run('sleep 120', { background: true, timeoutMs: 0 })
  assert.equal(await sbx.pause(), true)
  assert.equal(await sbx.isRunning(), false)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const paused = await listIds({ metadata: { abxConformance: RUN_ID }, state: ['paused'] })
  assert.ok(paused.includes(sbx.sandboxId))
  assert.equal(await Sandbox.pause(sbx.sandboxId), false, 'pausing a paused sandbox returns false')
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal(await back.isRunning(), true)
  assert.equal((await back.getInfo()).state, 'running')
  assert.equal(await back.files.read('keep.txt'), 'kept')
  assert.ok((await back.commands.list()).some((p) => p.pid === bg.pid), 'process survives pause')
})

test('connect to a secure sandbox re-obtains access', async (t) => {
  const sbx = await newSandbox(t, { secure: true })
  assert.ok(sbx.envdAccessToken, 'secure sandbox has an envd access token')
  await sbx.files.write('secure.txt', 'via first handle')
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.ok(again.envdAccessToken, 'connect returns the access token')
  assert.equal(again.envdAccessToken, sbx.envdAccessToken)
  assert.equal(await again.files.read('secure.txt'), 'via first handle')
  assert.equal((await again.commands.run('echo ok')).stdout, 'ok\n')
  // GET /sandboxes/{id} (SDK 2.31.0's getInfo does not map the field): E2B
  // repeats the envd access token there, FC gives it on create/connect only.
  const raw = await apiFetch(`/sandboxes/${sbx.sandboxId}`)
  assert.equal(raw.status, 200)
  if (FC) assert.equal(raw.json.envdAccessToken, undefined, 'FC: no envdAccessToken in sandbox info')
  else assert.equal(raw.json.envdAccessToken, sbx.envdAccessToken)
  assert.equal(raw.json.trafficAccessToken, undefined)
})

test('list returns full SandboxInfo for running sandboxes', async (t) => {
  const tag = `i${Date.now().toString(36)}`
  const sbx = await newSandbox(t, { metadata: { info: tag } })
  const paginator = Sandbox.list({ query: { metadata: { info: tag }, state: ['running'] } })
  const items = await paginator.nextItems()
  assert.equal(items.length, 1)
  const it = items[0]
  assert.equal(it.sandboxId, sbx.sandboxId)
  assert.equal(it.templateId, 'base')
  assert.equal(it.state, 'running')
  assert.equal(it.metadata.info, tag)
  assert.ok(it.startedAt instanceof Date && it.endAt instanceof Date)
  assert.ok(it.cpuCount > 0 && it.memoryMB > 0)
  assert.match(it.envdVersion, /^\d+\.\d+\.\d+$/)
  assert.equal(paginator.hasNext, false)
  assert.deepEqual(await listIds({ metadata: { info: tag }, state: ['paused'] }), [])
})

// Regression (found by E2B's own SDK tests): lifecycle {onTimeout: 'pause',
// autoResume: true} is kept, reported by getInfo, and a data-plane request
// to the paused sandbox wakes it. FC: autoPause needs pause → 403 on create.
test('lifecycle autoResume: reported by getInfo, a request wakes the paused sandbox', async (t) => {
  const plain = await newSandbox(t)
  assert.deepEqual((await plain.getInfo()).lifecycle, { onTimeout: 'kill', autoResume: false })
  const lifecycle = { onTimeout: 'pause', autoResume: true }
  if (FC) {
    await assert.rejects(newSandbox(t, { lifecycle }), (err) => {
      assert.ok(err instanceof e2b.SandboxError, `got ${err.constructor.name}: ${err.message}`)
      assert.match(err.message, /^403: Forbidden: autoPause needs pause, which is available to allow-listed accounts only/)
      return true
    })
    return
  }
  const sbx = await newSandbox(t, { lifecycle })
  assert.deepEqual((await sbx.getInfo()).lifecycle, lifecycle)
  await sbx.files.write('woken.txt', 'still here')
  assert.equal(await sbx.pause(), true)
  assert.equal((await sbx.getInfo()).state, 'paused')
  // The same handle, no connect(): the request itself resumes the sandbox.
  assert.equal(await sbx.files.read('woken.txt'), 'still here')
  assert.equal((await sbx.getInfo()).state, 'running')
  assert.equal((await sbx.commands.run('echo awake')).stdout, 'awake\n')
  // Without autoResume a paused sandbox stays paused: the proxy says so.
  assert.equal(await plain.pause(), true)
  const r = await dataFetch(plain, 49983, '/health')
  assert.equal(r.status, 502)
  const body = await r.json()
  assert.equal(body.code, 502)
  assert.equal(body.sandboxId, plain.sandboxId)
  assert.equal((await plain.getInfo()).state, 'paused')
})

// E2B's filesystem-only pause (keepMemory: false, and autoPauseMemory for
// an auto-pause): the processes end, the files stay, and the next connect
// boots the sandbox again, with a new boot id. FC: gated like pause.
// gVisor: abx-local keeps memory there (docs/capabilities.md).
test('pause without memory: files kept, processes gone, a new boot', async (t) => {
  const bootId = async (s) => (await s.commands.run('cat /proc/sys/kernel/random/boot_id')).stdout.trim()
  const sbx = await newSandbox(t)
  if (FC) {
    await assert.rejects(sbx.pause({ keepMemory: false }), (err) => {
      assert.match(err.message, /^403: Forbidden: pause is available to allow-listed accounts only/)
      return true
    })
    return
  }
  await sbx.files.write('keep.txt', 'kept')
  const boot = await bootId(sbx)
  const bg = await sbx.commands.run('sleep 120', { background: true, timeoutMs: 0 })
  assert.equal(await sbx.pause({ keepMemory: false }), true)
  assert.equal((await sbx.getInfo()).state, 'paused')
  const back = await Sandbox.connect(sbx.sandboxId)
  assert.equal((await back.getInfo()).state, 'running')
  assert.equal(await back.files.read('keep.txt'), 'kept')
  const alive = (await back.commands.list()).some((p) => p.pid === bg.pid)
  if (GVISOR) {
    assert.ok(alive, 'gVisor: memory kept, the process lives on')
    assert.equal(await bootId(back), boot)
    return
  }
  assert.ok(!alive, 'the process ended with the pause')
  assert.notEqual(await bootId(back), boot, 'a new boot id')
  assert.equal((await back.commands.run('cat keep.txt')).stdout, 'kept')

  // An auto-pause without memory: traffic does not wake it (E2B's SDK
  // refuses autoResume with it: "must be resumed explicitly"), connect does.
  const lifecycle = { onTimeout: { action: 'pause', keepMemory: false } }
  const auto = await newSandbox(t, { lifecycle, timeoutMs: 4_000 })
  await auto.files.write('woken.txt', 'still here')
  const autoBoot = await bootId(auto)
  await eventually(async () => (await auto.getInfo()).state === 'paused',
    { timeoutMs: 30_000, what: 'the auto-pause' })
  assert.equal((await dataFetch(auto, 49983, '/health')).status, 502, 'traffic does not wake it')
  const woken = await Sandbox.connect(auto.sandboxId, { timeoutMs: 60_000 })
  assert.equal(await woken.files.read('woken.txt'), 'still here')
  assert.notEqual(await bootId(woken), autoBoot, 'connect booted it again')
})

// FC samples a minute apart and reports CPU and memory only (disk fields 0);
// E2B samples every few seconds with disk usage. A range in the past is []
// on both (regression: start/end were ignored).
test('getMetrics: samples, disk fields, start/end range', async (t) => {
  const sbx = await newSandbox(t)
  const first = await sbx.getMetrics()
  assert.ok(first.length >= 1, 'a fresh sandbox has a sample')
  for (const m of first) {
    assert.ok(m.timestamp instanceof Date && !Number.isNaN(m.timestamp.getTime()))
    assert.ok(m.cpuCount > 0)
    assert.ok(m.cpuUsedPct >= 0 && m.cpuUsedPct <= 100)
    assert.ok(m.memUsed > 0 && m.memTotal >= m.memUsed, `mem ${m.memUsed}/${m.memTotal}`)
    if (FC) {
      assert.equal(m.diskUsed, 0)
      assert.equal(m.diskTotal, 0)
    } else {
      assert.ok(m.diskTotal > 0 && m.diskUsed >= 0 && m.diskUsed <= m.diskTotal, `disk ${m.diskUsed}/${m.diskTotal}`)
    }
  }
  await sleep(2_500)
  const later = await sbx.getMetrics()
  if (FC) {
    assert.equal(later.length, first.length, 'FC: one sample a minute')
  } else {
    assert.ok(later.length > first.length, `E2B samples more often than every 2.5 s (${first.length} then ${later.length})`)
  }
  for (let i = 1; i < later.length; i++) assert.ok(later[i].timestamp >= later[i - 1].timestamp, 'oldest first')
  const hourAgo = Date.now() - 3_600_000
  assert.deepEqual(await sbx.getMetrics({ start: new Date(hourAgo), end: new Date(hourAgo + 60_000) }), [])
  const now = await sbx.getMetrics({ start: new Date(Date.now() - 120_000), end: new Date(Date.now() + 60_000) })
  assert.ok(now.length >= 1, 'a range around now has the samples')
  await rejectsWith(Sandbox.getMetrics('nonexistingsandbox0'), e2b.SandboxNotFoundError, 'metrics of a missing sandbox')
})

// GET /sandboxes/{id}/logs (no SDK 2.31.0 call): E2B has the sandbox's log
// lines, FC answers empty lists.
test('sandbox logs: entries on E2B, empty on FC', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.commands.run('echo logged')
  const r = await apiFetch(`/sandboxes/${sbx.sandboxId}/logs`)
  assert.equal(r.status, 200)
  assert.ok(Array.isArray(r.json.logs) && Array.isArray(r.json.logEntries))
  if (FC) {
    assert.deepEqual(r.json, { logs: [], logEntries: [] })
  } else {
    assert.ok(r.json.logs.length > 0, 'E2B shows log lines')
    assert.equal(r.json.logs.length, r.json.logEntries.length)
    for (const l of r.json.logs) assert.ok(typeof l.line === 'string' && !Number.isNaN(Date.parse(l.timestamp)))
  }
})

// FC reserves metadata keys starting "fc." (VPC, OSS mount, RAM role; abx-
// local gives those three no effect): any other fc. key is refused with 400
// naming it. On E2B "fc." means nothing and round-trips.
test('metadata keys starting fc. are reserved on FC only', async (t) => {
  const custom = { 'fc.custom': 'x' }
  if (FC) {
    await assert.rejects(newSandbox(t, { metadata: custom }), (err) => {
      assert.ok(err instanceof e2b.SandboxError, `got ${err.constructor.name}: ${err.message}`)
      assert.match(err.message, /^400: InvalidParameter: metadata key 'fc\.custom' is reserved/)
      return true
    })
    const sbx = await newSandbox(t, { metadata: { 'fc.sandbox.auth.role': '{}', plain: 'kept' } })
    const info = await sbx.getInfo()
    assert.equal(info.metadata['fc.sandbox.auth.role'], '{}')
    assert.equal(info.metadata.plain, 'kept')
    return
  }
  const sbx = await newSandbox(t, { metadata: custom })
  assert.equal((await sbx.getInfo()).metadata['fc.custom'], 'x')
})

// SDK 2.31.0 creates with POST /sandboxes, connects with POST
// /sandboxes/{id}/connect and lists with GET /v2/sandboxes. Newer SDKs
// (>= 2.51) create and connect on /v2, which FC does not serve (405).
test('v2 create/connect routes: served on E2B, 405 on FC', async (t) => {
  const tag = `v${Date.now().toString(36)}`
  const created = await apiFetch('/v2/sandboxes', {
    method: 'POST',
    body: { templateID: 'base', timeout: 60, metadata: { abxConformance: RUN_ID, v2: tag } }
  })
  if (created.json && created.json.sandboxID) {
    t.after(() => apiFetch(`/sandboxes/${created.json.sandboxID}`, { method: 'DELETE' }))
  }
  const base = await newSandbox(t)
  const connect = await apiFetch(`/v2/sandboxes/${base.sandboxId}/connect`, { method: 'POST', body: { timeout: 60 } })
  if (FC) {
    assert.equal(created.status, 405)
    assert.equal(created.headers.get('allow'), 'GET')
    assert.equal(connect.status, 405)
  } else {
    assert.equal(created.status, 201, created.text.slice(0, 200))
    assertOpaqueId(created.json.sandboxID)
    assert.ok(created.json.envdAccessToken, 'v2 sandboxes are secure')
    assert.deepEqual(await listIds({ metadata: { v2: tag } }), [created.json.sandboxID])
    assert.equal(connect.status, 200, connect.text.slice(0, 200))
    assert.equal(connect.json.sandboxID, base.sandboxId)
  }
  // Listing is GET /v2/sandboxes on both (Sandbox.list above uses it).
  const list = await apiFetch(`/v2/sandboxes?metadata=${encodeURIComponent(`abxConformance=${RUN_ID}`)}`)
  assert.equal(list.status, 200)
  assert.ok(list.json.some((s) => s.sandboxID === base.sandboxId))
})
