// The JS half of bench/sdk_compare.sh: the official E2B JS SDK (npm
// package e2b) doing the same operations as bench/sdk_compare.lua against
// the same abx-local, timed per call with performance.now().
//
// Env: ABX_SDK_DIR (a folder whose node_modules holds e2b), E2B_API_KEY,
// E2B_API_URL, E2B_SANDBOX_URL (from abx-local), BENCH_N (iterations, 20),
// BENCH_WARM (untimed warm-up iterations, 2). Prints one JSON line per
// operation: {"side":"js","op":...,"ms":[...]}. Never prints the API key.
import { createRequire } from 'node:module'
import path from 'node:path'
import { performance } from 'node:perf_hooks'

const sdkDir = process.env.ABX_SDK_DIR
if (!sdkDir) throw new Error('ABX_SDK_DIR is not set (run bench/sdk_compare.sh)')
const require = createRequire(path.join(sdkDir, 'package.json'))
const { Sandbox } = require('e2b')
const version = require('e2b/package.json').version

const N = Number(process.env.BENCH_N || 20)
const WARM = Number(process.env.BENCH_WARM || 2)
const MIB = 1 << 20

// Same bytes as the Lua side: i % 251.
const payload = new Uint8Array(MIB)
for (let i = 0; i < MIB; i++) payload[i] = i % 251

async function timed (op, fn) {
  const ms = []
  for (let i = 0; i < WARM + N; i++) {
    const t0 = performance.now()
    await fn()
    const dt = performance.now() - t0
    if (i >= WARM) ms.push(dt)
  }
  console.log(JSON.stringify({ side: 'js', op, ms }))
}

async function main () {
  console.error(`sdk_compare: e2b@${version}, ${N} iterations (+${WARM} warm-up)`)
  await timed('create_kill', async () => {
    const s = await Sandbox.create('base', { timeoutMs: 120_000 })
    await s.kill()
  })
  const sbx = await Sandbox.create('base', { timeoutMs: 600_000, metadata: { bench: 'sdk_compare' } })
  try {
    await timed('command_run', async () => {
      const r = await sbx.commands.run('echo hello')
      if (r.stdout !== 'hello\n') throw new Error('unexpected stdout')
    })
    await timed('write_read_1mib', async () => {
      await sbx.files.write('/tmp/bench-1mib.bin', payload.buffer)
      const back = await sbx.files.read('/tmp/bench-1mib.bin', { format: 'bytes' })
      if (back.length !== MIB) throw new Error(`read back ${back.length} bytes`)
    })
    await timed('list', async () => {
      await Sandbox.list().nextItems()
    })
  } finally {
    await sbx.kill()
  }
}

main().catch((err) => {
  console.error(`sdk_compare (js): ${err && err.message ? err.message : err}`)
  process.exit(1)
})
