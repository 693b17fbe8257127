// Template code-interpreter-v1: the code-interpreter protocol on port 49999
// (docs/protocol.md "Code interpreter") reached through E2B_SANDBOX_URL
// with E2b-Sandbox-Id / E2b-Sandbox-Port: 49999, as the code-interpreter
// SDK does.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newSandbox, dataFetch } from './lib.mjs'

async function runCode (sbx, body) {
  const res = await dataFetch(sbx, 49999, '/execute', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Access-Token': sbx.envdAccessToken || '' },
    body: JSON.stringify(body)
  })
  const text = await res.text()
  if (res.status !== 200) return { status: res.status, text }
  const lines = text.split('\n')
  assert.equal(lines.pop(), '', 'NDJSON ends with a newline')
  const events = lines.map((l) => JSON.parse(l))
  assert.equal(lines[lines.length - 1], '{"type": "end_of_execution"}')
  const ex = { status: 200, events, results: [], stdout: '', stderr: '', error: null, count: null }
  for (const e of events) {
    if (e.type === 'stdout') ex.stdout += e.text
    else if (e.type === 'stderr') ex.stderr += e.text
    else if (e.type === 'result') ex.results.push(e)
    else if (e.type === 'error') ex.error = e
    else if (e.type === 'number_of_executions') ex.count = e.execution_count
  }
  ex.text = (ex.results.find((r) => r.is_main_result) || {}).text
  return ex
}

async function ci (sbx, method, path, body) {
  const res = await dataFetch(sbx, 49999, path, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await res.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, text, json }
}

test('code interpreter: health, results, stdout, state, errors, contexts', async (t) => {
  const sbx = await newSandbox(t, {}, 'code-interpreter-v1')
  const health = await ci(sbx, 'GET', '/health')
  assert.equal(health.status, 200)

  const ex = await runCode(sbx, { code: "x = 21\nprint('hello')\nx * 2" })
  assert.equal(ex.stdout, 'hello\n')
  assert.equal(ex.text, '42')
  assert.equal(ex.error, null)
  assert.equal(typeof ex.count, 'number')

  assert.equal((await runCode(sbx, { code: 'x + 1' })).text, '22', 'state kept across calls')

  const err = await runCode(sbx, { code: 'raise ValueError("bad value")' })
  assert.equal(err.error.name, 'ValueError')
  assert.equal(err.error.value, 'bad value')
  assert.match(err.error.traceback, /ValueError/)

  const env = await runCode(sbx, { code: "import os\nos.environ['CI_V']", env_vars: { CI_V: 'yes' } })
  assert.equal(env.text, "'yes'")
  const inSbx = await runCode(sbx, { code: "import os, getpass\n(os.getcwd(), getpass.getuser(), os.environ.get('E2B_SANDBOX_ID'))" })
  assert.equal(inSbx.text, `('/home/user', 'user', '${sbx.sandboxId}')`)

  const ctx = await ci(sbx, 'POST', '/contexts', { language: 'python', cwd: '/tmp' })
  assert.equal(ctx.status, 200)
  assert.equal(ctx.json.language, 'python')
  assert.equal(ctx.json.cwd, '/tmp')
  const list = await ci(sbx, 'GET', '/contexts')
  assert.ok(list.json.some((c) => c.id === ctx.json.id))
  assert.equal((await runCode(sbx, { code: "'x' in globals()", context_id: ctx.json.id })).text, 'False')
  assert.equal((await runCode(sbx, { code: 'import os\nos.getcwd()', context_id: ctx.json.id })).text, "'/tmp'")
  assert.equal((await ci(sbx, 'POST', `/contexts/${ctx.json.id}/restart`)).status, 200)
  assert.equal((await ci(sbx, 'DELETE', `/contexts/${ctx.json.id}`)).status, 200)
  const missing = await runCode(sbx, { code: '1', context_id: ctx.json.id })
  assert.equal(missing.status, 404)
  const both = await runCode(sbx, { code: '1', context_id: 'a', language: 'python' })
  assert.equal(both.status, 400)
})

test('code interpreter streams output as it is produced', async (t) => {
  const sbx = await newSandbox(t, {}, 'code-interpreter-v1')
  const res = await dataFetch(sbx, 49999, '/execute', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')" })
  })
  assert.equal(res.status, 200)
  const t0 = Date.now()
  const seen = []
  let buf = ''
  const decoder = new TextDecoder()
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true })
    let nl
    while ((nl = buf.indexOf('\n')) >= 0) {
      const ev = JSON.parse(buf.slice(0, nl))
      buf = buf.slice(nl + 1)
      seen.push({ ev, at: Date.now() - t0 })
    }
  }
  const first = seen.find((s) => s.ev.type === 'stdout' && s.ev.text.includes('first'))
  const end = seen.find((s) => s.ev.type === 'end_of_execution')
  assert.ok(first && end, `events: ${JSON.stringify(seen.map((s) => s.ev.type))}`)
  assert.ok(end.at - first.at >= 1000, `stdout was not streamed: first at ${first.at} ms, end at ${end.at} ms`)
})
