// Ports and URLs: getHost + an HTTP server in the sandbox, the data-plane
// proxy's 502s, signed download/upload URLs (as E2B's own SDK tests),
// network.allowPublicTraffic=false — on the e2b and the fc profile.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  e2b, Sandbox, newSandbox, dataFetch, hostGet, eventually, SANDBOX_URL, SDK_VERSION, versionAtLeast, FC,
  assertProxyError, apiFetch
} from './lib.mjs'

test('getHost + fetch an HTTP server started in the sandbox', async (t) => {
  const sbx = await newSandbox(t, {}, 'code-interpreter-v1')   // python3's http.server
  await sbx.files.write('www/index.html', 'hello from sandbox')
  const server = await sbx.commands.run('python3 -m http.server 8001', { background: true, cwd: '/home/user/www', timeoutMs: 0 })
  try {
    const host = sbx.getHost(8001)
    assert.equal(host, `8001-${sbx.sandboxId}.${sbx.sandboxDomain}`)
    // Routed by headers through E2B_SANDBOX_URL (what the SDK does) ...
    const res = await eventually(async () => {
      const r = await dataFetch(sbx, 8001, '/index.html')
      return r.status === 200 ? r : null
    }, { timeoutMs: 10_000, what: 'http.server on 8001' })
    assert.equal(await res.text(), 'hello from sandbox')
    // ... and by the Host name getHost returned.
    if (/localhost(:\d+)?$/.test(host)) {
      // Host names are case-insensitive: URL parsers (and so every HTTP
      // client) lower-case them, whatever case the sandbox id has.
      const byHost = await hostGet(host, '/index.html')
      assert.equal(byHost.status, 200, `by Host ${new URL(`http://${host}`).host} (getHost gave ${host})`)
      assert.equal(byHost.body, 'hello from sandbox')
    } else {
      t.diagnostic(`host ${host} is not under localhost: host-name routing not checked`)
    }
  } finally {
    await server.kill()
  }
})

// E2B's proxy answers JSON {message, sandboxId, port, code}; FC's gateway a
// plain HTML 502 page (status kept, no JSON fields).
test('closed port and killed sandbox answer 502 (E2B: JSON, FC: gateway page)', async (t) => {
  const sbx = await newSandbox(t)
  const closed = await dataFetch(sbx, 8009, '/')
  await assertProxyError(closed, 502, (body) => {
    assert.equal(body.code, 502)
    assert.equal(body.sandboxId, sbx.sandboxId)
    assert.equal(body.port, 8009)
    assert.equal(body.message, 'The sandbox is running but port is not open')
  })
  await sbx.kill()
  const gone = await dataFetch(sbx, 49983, '/health')
  await assertProxyError(gone, 502, { message: 'The sandbox was not found', sandboxId: sbx.sandboxId, code: 502 })
})

// The SDK builds signed URLs on E2B_SANDBOX_URL, which routes by headers, so
// these requests carry only the routing headers — never X-Access-Token: the
// signature alone must authorise them.
function signedFetch (sbx, url, init = {}) {
  assert.ok(url.startsWith(SANDBOX_URL), 'signed URL is built on E2B_SANDBOX_URL')
  assert.match(url, /signature=v1_/)
  return fetch(url, { ...init, headers: { ...(init.headers || {}), 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
}

// FC does not honour the signature: on a secure sandbox a file URL wants
// X-Access-Token like any envd call (401 without it), signed or not.
async function signedUrlsOnFc (sbx) {
  const withToken = { 'X-Access-Token': sbx.envdAccessToken }
  const dl = await sbx.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 })
  assert.match(dl, /signature=v1_/, 'the SDK still signs (client-side)')
  const bare = await signedFetch(sbx, dl)
  assert.equal(bare.status, 401, 'signature alone is not enough on FC')
  await bare.arrayBuffer()
  const noExp = await signedFetch(sbx, await sbx.downloadUrl('hello.txt'))
  assert.equal(noExp.status, 401)
  await noExp.arrayBuffer()
  const ok = await signedFetch(sbx, dl, { headers: withToken })
  assert.equal(ok.status, 200)
  assert.equal(await ok.text(), 'hello world')
  const form = new FormData()
  form.append('file', 'file content')
  const upUrl = await sbx.uploadUrl('up.txt', { useSignatureExpiration: 10_000 })
  const up = await signedFetch(sbx, upUrl, { method: 'POST', body: form })
  assert.equal(up.status, 401)
  await up.arrayBuffer()
  assert.equal(await sbx.files.exists('up.txt'), false, 'the refused upload wrote nothing')
  const form2 = new FormData()
  form2.append('file', 'file content')
  const upTok = await signedFetch(sbx, upUrl, { method: 'POST', body: form2, headers: withToken })
  assert.equal(upTok.status, 200)
  assert.deepEqual(await upTok.json(), [{ name: 'up.txt', path: '/home/user/up.txt', type: 'file' }])
  assert.equal(await sbx.files.read('up.txt'), 'file content')
}

test('signed download and upload URLs on a secure sandbox', async (t) => {
  const sbx = await newSandbox(t, { secure: true })
  await sbx.files.write('hello.txt', 'hello world')
  if (FC) return signedUrlsOnFc(sbx)

  const ok = await signedFetch(sbx, await sbx.downloadUrl('hello.txt', { useSignatureExpiration: 10_000 }))
  assert.equal(ok.status, 200)
  assert.equal(await ok.text(), 'hello world')

  const noExp = await signedFetch(sbx, await sbx.downloadUrl('hello.txt'))
  assert.equal(noExp.status, 200)

  const expired = await signedFetch(sbx, await sbx.downloadUrl('hello.txt', { useSignatureExpiration: -10_000 }))
  assert.equal(expired.status, 401)
  assert.deepEqual(await expired.json(), { code: 401, message: 'signature is already expired' })

  const unsigned = await fetch(new URL('/files?path=hello.txt', SANDBOX_URL),
    { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
  assert.equal(unsigned.status, 401)

  const tampered = (await sbx.downloadUrl('hello.txt')).replace('path=hello.txt', 'path=other.txt')
  assert.equal((await signedFetch(sbx, tampered)).status, 401)

  const form = new FormData()
  form.append('file', 'file content')
  const up = await signedFetch(sbx, await sbx.uploadUrl('up.txt', { useSignatureExpiration: 10_000 }), { method: 'POST', body: form })
  assert.equal(up.status, 200)
  assert.deepEqual(await up.json(), [{ name: 'up.txt', path: '/home/user/up.txt', type: 'file' }])
  assert.equal(await sbx.files.read('up.txt'), 'file content')

  const rootForm = new FormData()
  rootForm.append('file', 'root content')
  const upRoot = await signedFetch(sbx, await sbx.uploadUrl('up.txt', { user: 'root', useSignatureExpiration: 10_000 }), { method: 'POST', body: rootForm })
  assert.equal(upRoot.status, 200)
  assert.deepEqual(await upRoot.json(), [{ name: 'up.txt', path: '/root/up.txt', type: 'file' }])

  const rootDl = await signedFetch(sbx, await sbx.downloadUrl('up.txt', { user: 'root', useSignatureExpiration: 10_000 }))
  assert.equal(await rootDl.text(), 'root content')

  const badForm = new FormData()
  badForm.append('file', 'x')
  const upExpired = await signedFetch(sbx, await sbx.uploadUrl('up.txt', { useSignatureExpiration: -100_000 }), { method: 'POST', body: badForm })
  assert.equal(upExpired.status, 401)
  assert.deepEqual(await upExpired.json(), { code: 401, message: 'signature is already expired' })
})

test('non-secure sandbox: unsigned file URLs work, no access token', async (t) => {
  const sbx = await newSandbox(t, { secure: false })
  if (versionAtLeast(SDK_VERSION, '2.51.0')) {
    // SDK >= 2.51 creates through POST /v2/sandboxes, where every sandbox is
    // secure and the `secure` option is ignored.
    assert.ok(sbx.envdAccessToken, 'v2-created sandboxes always carry an access token')
    t.skip(`e2b ${SDK_VERSION} ignores secure:false`)
    return
  }
  await sbx.files.write('open.txt', 'open')
  const url = await sbx.downloadUrl('open.txt')
  assert.doesNotMatch(url, /signature=/)
  const res = await fetch(url, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
  assert.equal(res.status, 200)
  assert.equal(await res.text(), 'open')
})

// network.maskRequestHost (E2B's own SDK test): the Host header the
// sandbox's server sees, ${PORT} the port; FC ignores the option.
test('maskRequestHost: the Host the sandbox server sees (FC: ignored)', async (t) => {
  const sbx = await newSandbox(t, { network: { maskRequestHost: 'custom-host.example.com:${PORT}' } },
    'code-interpreter-v1')
  const echo = 'import http.server\n' +
    'class H(http.server.BaseHTTPRequestHandler):\n' +
    '    def do_GET(self):\n' +
    '        b = (self.headers.get("Host") or "").encode()\n' +
    '        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)\n' +
    '    def log_message(self, *a): pass\n' +
    'http.server.HTTPServer(("", 8003), H).serve_forever()\n'
  await sbx.files.write('host_echo.py', echo)
  const server = await sbx.commands.run('python3 host_echo.py', { background: true, timeoutMs: 0 })
  try {
    const res = await eventually(async () => {
      const r = await dataFetch(sbx, 8003, '/')
      return r.status === 200 ? r : null
    }, { what: 'the Host echo on 8003' })
    const host = await res.text()
    if (FC) assert.doesNotMatch(host, /custom-host/)
    else assert.equal(host, 'custom-host.example.com:8003')
  } finally {
    await server.kill()
  }
})

// network.allowPublicTraffic=false (both clouds): user ports want header
// e2b-traffic-access-token (403 without); the token comes from create and
// connect only, never from getInfo/list. envd is exempt on E2B (it has its
// own X-Access-Token); FC's gate covers envd too, where a valid
// X-Access-Token passes — so a non-secure such sandbox is unusable on FC.
test('allowPublicTraffic=false: traffic token on user ports, envd per profile', async (t) => {
  const sbx = await newSandbox(t, { secure: true, network: { allowPublicTraffic: false } }, 'code-interpreter-v1')
  assert.ok(sbx.trafficAccessToken, 'create returns a traffic access token')
  const info = await sbx.getInfo()
  assert.equal(info.network.allowPublicTraffic, false)
  const raw = await apiFetch(`/sandboxes/${sbx.sandboxId}`)
  assert.equal(raw.json.trafficAccessToken, undefined, 'not in sandbox info')
  const again = await Sandbox.connect(sbx.sandboxId)
  assert.equal(again.trafficAccessToken, sbx.trafficAccessToken, 'connect returns it again')
  await sbx.files.write('www/t.txt', 'gated')
  const server = await sbx.commands.run('python3 -m http.server 8002', { background: true, cwd: '/home/user/www', timeoutMs: 0 })
  try {
    const withToken = { 'e2b-traffic-access-token': sbx.trafficAccessToken }
    const ok = await eventually(async () => {
      const r = await dataFetch(sbx, 8002, '/t.txt', { headers: withToken })
      return r.status === 200 ? r : null
    }, { what: 'http.server on 8002 with the traffic token' })
    assert.equal(await ok.text(), 'gated')
    const none = await dataFetch(sbx, 8002, '/t.txt')
    assert.equal(none.status, 403)
    if (FC) assert.match(await none.text(), /403 Forbidden/)
    else assert.equal((await none.json()).code, 403)
    const wrong = await dataFetch(sbx, 8002, '/t.txt', { headers: { 'e2b-traffic-access-token': 'x'.repeat(64) } })
    assert.equal(wrong.status, 403)
    await wrong.arrayBuffer()
  } finally {
    await server.kill()
  }

  const open = await newSandbox(t, { secure: false, network: { allowPublicTraffic: false } })
  assert.ok(open.trafficAccessToken)
  // (SDK >= 2.51 makes every sandbox secure: then send its token, as it does.)
  const token = open.envdAccessToken ? { 'X-Access-Token': open.envdAccessToken } : {}
  const list = await dataFetch(open, 49983, '/process.Process/List', {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...token }, body: '{}'
  })
  if (FC) {
    assert.equal(list.status, 403, 'FC gates envd of a non-secure sandbox')
    await list.arrayBuffer()
    await assert.rejects(open.commands.run('echo hi'), (err) => {
      assert.ok(err instanceof e2b.SandboxError && !(err instanceof e2b.CommandExitError), `got ${err.constructor.name}: ${err.message}`)
      return true
    })
  } else {
    assert.equal(list.status, 200)
    await list.arrayBuffer()
    assert.equal((await open.commands.run('echo hi')).stdout, 'hi\n')
  }
})
