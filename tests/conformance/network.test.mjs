// Ports and URLs: getHost + an HTTP server in the sandbox, the data-plane
// proxy's 502s, signed download/upload URLs (runner-semantics §5.4 A/B).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newSandbox, dataFetch, hostGet, eventually, SANDBOX_URL, SDK_VERSION, versionAtLeast } from './lib.mjs'

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
      const byHost = await hostGet(host, '/index.html')
      assert.equal(byHost.status, 200)
      assert.equal(byHost.body, 'hello from sandbox')
    } else {
      t.diagnostic(`host ${host} is not under localhost: host-name routing not checked`)
    }
  } finally {
    await server.kill()
  }
})

test('closed port and killed sandbox answer 502 JSON', async (t) => {
  const sbx = await newSandbox(t)
  const closed = await dataFetch(sbx, 8009, '/')
  assert.equal(closed.status, 502)
  const body = await closed.json()
  assert.equal(body.code, 502)
  assert.equal(body.sandboxId, sbx.sandboxId)
  await sbx.kill()
  const gone = await dataFetch(sbx, 49983, '/health')
  assert.equal(gone.status, 502)
  assert.deepEqual(await gone.json(), { message: 'The sandbox was not found', sandboxId: sbx.sandboxId, code: 502 })
})

// The SDK builds signed URLs on E2B_SANDBOX_URL, which routes by headers, so
// these requests carry only the routing headers — never X-Access-Token: the
// signature alone must authorise them.
function signedFetch (sbx, url, init = {}) {
  assert.ok(url.startsWith(SANDBOX_URL), 'signed URL is built on E2B_SANDBOX_URL')
  assert.match(url, /signature=v1_/)
  return fetch(url, { ...init, headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } })
}

test('signed download and upload URLs on a secure sandbox', async (t) => {
  const sbx = await newSandbox(t, { secure: true })
  await sbx.files.write('hello.txt', 'hello world')

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
