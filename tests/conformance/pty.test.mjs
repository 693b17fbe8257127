// PTY through the official SDK (as E2B's own SDK tests): create with envs,
// send input, resize, kill.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newSandbox } from './lib.mjs'

const enc = new TextEncoder()

test('create PTY, send input, exit code 0', async (t) => {
  const sbx = await newSandbox(t)
  let output = ''
  const dec = new TextDecoder()
  const term = await sbx.pty.create({ cols: 80, rows: 24, envs: { ABC: '123' }, onData: (d) => { output += dec.decode(d) } })
  assert.ok(term.pid > 0)
  await sbx.pty.sendInput(term.pid, enc.encode('echo $ABC\nexit\n'))
  await term.wait()
  assert.equal(term.exitCode, 0)
  assert.match(output, /123/)
})

test('resize PTY', async (t) => {
  const sbx = await newSandbox(t)
  let output = ''
  const dec = new TextDecoder()
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { output += dec.decode(d) } })
  await sbx.pty.resize(term.pid, { cols: 100, rows: 24 })
  await sbx.pty.sendInput(term.pid, enc.encode('tput cols\nexit\n'))
  await term.wait()
  assert.equal(term.exitCode, 0)
  assert.match(output, /\b100\b/)
})

test('kill PTY', async (t) => {
  const sbx = await newSandbox(t)
  const term = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} })
  assert.equal(await sbx.pty.kill(term.pid), true)
  await assert.rejects(sbx.commands.run(`kill -0 ${term.pid}`))
  assert.equal(await sbx.pty.kill(999999), false)
})
