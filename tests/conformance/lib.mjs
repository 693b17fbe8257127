// Shared helpers of the conformance tests: the pinned E2B SDK, sandbox
// creation with guaranteed cleanup, and raw data-plane requests.
//
// run.sh exports E2B_API_KEY / E2B_API_URL / E2B_SANDBOX_URL (and E2B_DOMAIN)
// from `abx-local serve`, ABX_SDK_DIR = the folder whose node_modules
// holds the SDK under test, and ABX_LOCAL_PROFILE = the platform profile the
// server runs (e2b = upstream E2B, fc = Alibaba FC Agent Sandbox). Never
// print the API key or access tokens.
import { createRequire } from 'node:module'
import path from 'node:path'
import http from 'node:http'
import assert from 'node:assert/strict'

const sdkDir = process.env.ABX_SDK_DIR
if (!sdkDir) throw new Error('ABX_SDK_DIR is not set: run the suite through tests/conformance/run.sh')
const require = createRequire(path.join(sdkDir, 'package.json'))
export const e2b = require('e2b')
export const SDK_VERSION = require('e2b/package.json').version

// a >= b for dotted numeric versions ("2.31.0").
export function versionAtLeast (a, b) {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) {
    if ((pa[i] || 0) !== (pb[i] || 0)) return (pa[i] || 0) > (pb[i] || 0)
  }
  return true
}
export const { Sandbox } = e2b

export const RUN_ID = process.env.ABX_CONFORMANCE_RUN_ID || `conf-${process.pid}`
export const SANDBOX_URL = process.env.E2B_SANDBOX_URL
export const API_URL = process.env.E2B_API_URL

// The one branch point of the suite: which cloud abx-local imitates. A test
// that differs per profile asserts E2B's contract when !FC and FC's
// documented one (docs/profiles.md) when FC — never
// a skip. GET /admin/profile (platformProfile) says the same from the server.
export const PROFILE = process.env.ABX_LOCAL_PROFILE || 'e2b'
if (PROFILE !== 'e2b' && PROFILE !== 'fc') throw new Error(`ABX_LOCAL_PROFILE must be e2b or fc, not '${PROFILE}'`)
export const FC = PROFILE === 'fc'
// The sandbox runtime the server was started with (the same variable
// selects it): gVisor keeps memory on a filesystem-only pause.
export const GVISOR = process.env.ABX_LOCAL_RUNTIME === 'gvisor'

// A raw control-plane request with the API key (what the SDK sends as
// X-API-KEY). Returns {status, headers, text, json}; json is undefined when
// the body is not JSON.
export async function apiFetch (pathAndQuery, init = {}) {
  const headers = { 'X-API-KEY': process.env.E2B_API_KEY, ...(init.headers || {}) }
  if (init.body !== undefined && typeof init.body !== 'string') {
    headers['Content-Type'] = 'application/json'
    init = { ...init, body: JSON.stringify(init.body) }
  }
  const res = await fetch(new URL(pathAndQuery, API_URL), { ...init, headers })
  const text = await res.text()
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status: res.status, headers: res.headers, text, json }
}

// GET /admin/profile: {profile, envdVersion, switches: {name: bool}}.
let profileCache
export async function platformProfile () {
  if (!profileCache) {
    const r = await apiFetch('/admin/profile')
    assert.equal(r.status, 200, `GET /admin/profile: ${r.status} ${r.text.slice(0, 200)}`)
    profileCache = r.json
  }
  return profileCache
}

// Control-plane error texts: E2B's message as is, or on fc the same with
// FC's code name in front ("ResourceNotFound: template 'x' not found").
export function apiMessage (fcCode, message) {
  return FC ? `${fcCode}: ${message}` : message
}

// Creates a sandbox tagged with the run id and kills it when the test ends,
// whatever the outcome. `t` is the node:test context.
export async function newSandbox (t, opts = {}, template = 'base') {
  const metadata = { abxConformance: RUN_ID, test: t.name.slice(0, 60), ...(opts.metadata || {}) }
  const sbx = await Sandbox.create(template, { timeoutMs: 120_000, ...opts, metadata })
  t.after(async () => {
    try {
      await sbx.kill()
    } catch (err) {
      console.error(`[TEARDOWN FAILED] sandbox ${sbx.sandboxId}: ${err.message}`)
    }
  })
  return sbx
}

// A data-plane error the proxy answers itself (sandbox not found, port not
// open): E2B's JSON {message, sandboxId, code} on e2b; on fc a gateway's
// plain HTML page with the same status. `want` = the E2B body expected.
export async function assertProxyError (res, status, want) {
  assert.equal(res.status, status)
  const text = await res.text()
  if (FC) {
    assert.match(res.headers.get('content-type') || '', /^text\/html/)
    assert.match(text, new RegExp(`<html>[\\s\\S]*\\b${status}\\b`))
    assert.doesNotMatch(text, /sandboxId/, 'the gateway page carries none of E2B\'s JSON fields')
    return
  }
  assert.match(res.headers.get('content-type') || '', /^application\/json/)
  const body = JSON.parse(text)
  if (typeof want === 'function') want(body)
  else assert.deepEqual(body, want)
}

// A raw request to a port inside a sandbox through the single data-plane
// URL, routed by E2b-Sandbox-Id / E2b-Sandbox-Port (what the SDK does).
export function dataFetch (sbx, port, pathAndQuery, init = {}) {
  const url = new URL(pathAndQuery, SANDBOX_URL)
  const headers = { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': String(port), ...(init.headers || {}) }
  return fetch(url, { ...init, headers })
}

// GET http://<host><path> where host is what sbx.getHost(port) returned
// ("<port>-<id>.<domain>"): resolved to loopback, since *.localhost names
// need no DNS. Returns {status, headers, body}.
export function hostGet (host, pathAndQuery = '/', timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    const url = new URL(`http://${host}${pathAndQuery}`)
    const req = http.get(url, {
      timeout: timeoutMs,
      lookup: (hostname, options, cb) => {
        if (hostname === 'localhost' || hostname.endsWith('.localhost')) {
          if (options && options.all) return cb(null, [{ address: '127.0.0.1', family: 4 }])
          return cb(null, '127.0.0.1', 4)
        }
        return cb(new Error(`refusing to resolve non-loopback host ${hostname}`))
      }
    }, (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
  })
}

// Polls fn until it returns a truthy value or the deadline passes.
export async function eventually (fn, { timeoutMs = 10_000, intervalMs = 250, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  let lastErr
  while (Date.now() < deadline) {
    try {
      const v = await fn()
      if (v) return v
    } catch (err) {
      lastErr = err
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${lastErr.message}` : ''}`)
}

// Asserts that a promise rejects with an instance of cls.
export async function rejectsWith (promise, cls, msg) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof cls, `${msg || 'error'}: expected ${cls.name}, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`)
    return true
  })
}

export async function listIds (query) {
  const paginator = Sandbox.list({ query })
  const ids = []
  while (paginator.hasNext) {
    for (const s of await paginator.nextItems()) ids.push(s.sandboxId)
  }
  return ids
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
