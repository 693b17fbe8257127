// Templates inside real sandboxes: python-hello's agent-sandbox-server on
// port 8080 (abx-local/templates/python-hello/CONTRACT.md) and the alias of
// code-interpreter-v1.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, newSandbox, dataFetch } from './lib.mjs'

async function call (sbx, method, path, body, port = 8080) {
  const res = await dataFetch(sbx, port, path, {
    method,
    headers: typeof body === 'object' ? { 'Content-Type': 'application/json' } : {},
    body: typeof body === 'object' ? JSON.stringify(body) : body
  })
  const text = await res.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, json, text }
}

// Template.exists (GET /templates/aliases/{alias}): E2B's base is an alias
// there, a template's id is a name here; an alias; and a name nobody has.
test('Template.exists: a template, an alias, not a missing name', async () => {
  assert.equal(await e2b.Template.exists('base'), true)
  assert.equal(await e2b.Template.exists('code-interpreter'), true)
  assert.equal(await e2b.Template.exists('no-such-template-abx'), false)
})

test('python-hello: agent-sandbox-server answers in the sandbox', async (t) => {
  const secret = 'e2b_' + 'feedc0de'.repeat(5)
  const sbx = await newSandbox(t, { envs: { MY_SERVICE_TOKEN: secret, PLAIN_VALUE: 'shown' } }, 'python-hello')
  assert.deepEqual((await call(sbx, 'GET', '/health')).json, { status: 'ok' })
  assert.equal((await call(sbx, 'GET', '/hello?name=abx')).json.message, 'Hello, abx!')

  const info = (await call(sbx, 'GET', '/system/info')).json
  assert.equal(info.sandboxId, sbx.sandboxId)
  assert.equal(info.templateId, 'python-hello')
  assert.equal(info.user, 'user')
  assert.equal(info.port, 8080)

  // A create's envs reach what envd starts, not the template's start
  // command (E2B runs it as the template is built): the server has none of
  // them; a second one started through envd has them, masked.
  assert.equal((await call(sbx, 'GET', '/env?name=PLAIN_VALUE')).status, 404)
  assert.equal((await sbx.commands.run('printenv PLAIN_VALUE')).stdout, 'shown\n')
  const second = await sbx.commands.run(
    'exec python3 -B /opt/abx/app/server.py --host 0.0.0.0 --port 8092',
    { background: true, envs: { MY_SERVICE_TOKEN: secret, PLAIN_VALUE: 'shown' } })
  let env
  for (let i = 0; i < 200 && env?.status !== 200; i++) {
    env = await call(sbx, 'GET', '/env', undefined, 8092).catch(() => undefined)
    if (env?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.equal(env.status, 200)
  assert.equal(env.json.env.PLAIN_VALUE, 'shown')
  assert.equal(env.json.env.MY_SERVICE_TOKEN, '***')
  assert.ok(!env.text.includes(secret), '/env must not return a secret verbatim')
  await second.kill()

  const cmd = await call(sbx, 'POST', '/commands', { cmd: 'whoami; hostname' })
  assert.equal(cmd.json.exitCode, 0)
  assert.equal(cmd.json.stdout, `user\n${(await sbx.commands.run('hostname')).stdout}`)

  // The template's home/ is copied into /home/user, owned by user.
  assert.match(await sbx.files.read('README.txt'), /agent-sandbox-server on port 8080/)
  assert.equal((await sbx.files.getInfo('README.txt')).owner, 'user')

  await sbx.files.write('from-sdk.txt', 'written by the SDK')
  const file = await call(sbx, 'GET', '/files/home/user/from-sdk.txt')
  assert.equal(file.text, 'written by the SDK')
  const put = await call(sbx, 'PUT', '/files/home/user/from-server.txt', 'raw bytes')
  assert.equal(put.status, 201)
  assert.equal(await sbx.files.read('from-server.txt'), 'raw bytes')

  const ports = (await call(sbx, 'GET', '/ports')).json.ports.map((p) => p.port)
  assert.ok(ports.includes(8080) && ports.includes(49983), `ports ${ports}`)
  const bad = await call(sbx, 'POST', '/commands', { cmd: 42 })
  assert.equal(bad.status, 400)
  assert.equal(bad.json.error.code, 'invalid_request')
  // The start command is not a user process: Process/List does not show it.
  assert.ok(!(await sbx.commands.list()).some((p) => p.args.join(' ').includes('server.py')))
})

test('code-interpreter alias and base template have what they promise', async (t) => {
  const ci = await newSandbox(t, {}, 'code-interpreter')
  assert.equal((await ci.getInfo()).templateId, 'code-interpreter-v1')
  assert.equal((await dataFetch(ci, 49999, '/health')).status, 200)
  const base = await newSandbox(t)
  assert.equal((await dataFetch(base, 49999, '/health')).status, 502)
})
