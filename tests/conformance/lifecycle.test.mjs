// Sandbox lifecycle through the official SDK: create (metadata, envs), list
// by metadata, getInfo, setTimeout, connect, kill (runner-semantics §5.4 C).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox, e2b, newSandbox, listIds, rejectsWith, RUN_ID, sleep } from './lib.mjs'

test('create reports running sandbox with envd version', async (t) => {
  const sbx = await newSandbox(t)
  assert.match(sbx.sandboxId, /^[a-z0-9]+$/)
  assert.equal(await sbx.isRunning(), true)
  const info = await sbx.getInfo()
  assert.match(info.envdVersion, /^\d+\.\d+\.\d+$/)
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
  await assert.rejects(Sandbox.create('no-such-template-xyz', { metadata: { abxConformance: RUN_ID } }), e2b.SandboxError)
})

test('pause, then connect resumes with files and processes intact', async (t) => {
  const sbx = await newSandbox(t)
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
  assert.equal(await again.files.read('secure.txt'), 'via first handle')
  assert.equal((await again.commands.run('echo ok')).stdout, 'ok\n')
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
