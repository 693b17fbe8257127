// files through the official SDK (as E2B's own SDK tests of the
// filesystem). On the fc profile envd reports 0.5.2 and the SDK takes its
// own fallbacks: multipart uploads only (no octet-stream, no gzip below 0.5.7), file metadata and
// watch includeEntry/allowNetworkMounts refused client-side (TemplateError).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { e2b, newSandbox, rejectsWith, eventually, dataFetch, FC } from './lib.mjs'

const { FileType, FilesystemEventType } = e2b

test('write and read text, overwrite, parents created', async (t) => {
  const sbx = await newSandbox(t)
  const info = await sbx.files.write('test_write.txt', 'This is a test file.')
  assert.equal(info.name, 'test_write.txt')
  assert.equal(info.path, '/home/user/test_write.txt')
  assert.equal(info.type, FileType.FILE)
  assert.equal(await sbx.files.exists('test_write.txt'), true)
  assert.equal(await sbx.files.read('test_write.txt'), 'This is a test file.')
  await sbx.files.write('test_write.txt', 'second')
  assert.equal(await sbx.files.read('/home/user/test_write.txt'), 'second')
  await sbx.files.write('deep/er/dir/f.txt', 'nested')
  assert.equal(await sbx.files.read('deep/er/dir/f.txt'), 'nested')
  const owner = await sbx.commands.run('stat -c %U:%G /home/user/deep/er/dir/f.txt /home/user/deep')
  assert.equal(owner.stdout, 'user:user\nuser:user\n')
  await sbx.commands.run('touch empty.txt')
  assert.equal(await sbx.files.read('empty.txt'), '')
  assert.equal((await sbx.files.read('empty.txt', { format: 'bytes' })).length, 0)
  assert.equal((await sbx.files.read('empty.txt', { format: 'blob' })).size, 0)
  const stream = await sbx.files.read('empty.txt', { format: 'stream' })
  let n = 0
  for await (const chunk of stream) n += chunk.length
  assert.equal(n, 0)
})

test('write and read binary', async (t) => {
  const sbx = await newSandbox(t)
  const data = new Uint8Array(70_000)
  for (let i = 0; i < data.length; i++) data[i] = (i * 7 + 3) % 256
  await sbx.files.write('bin.dat', data.buffer)
  const back = await sbx.files.read('bin.dat', { format: 'bytes' })
  assert.equal(back.length, data.length)
  assert.deepEqual(Buffer.from(back), Buffer.from(data))
  const blob = await sbx.files.read('bin.dat', { format: 'blob' })
  assert.equal(blob.size, data.length)
  const sum = await sbx.commands.run('sha256sum bin.dat | cut -d" " -f1')
  const { createHash } = await import('node:crypto')
  assert.equal(sum.stdout.trim(), createHash('sha256').update(data).digest('hex'))
})

// The SDK asks for octet-stream (a stream body, useOctetStream, gzip) only
// from envd >= 0.5.7: on FC every one of these writes goes as multipart and
// still lands.
test('octet-stream and gzip uploads, gzip download', async (t) => {
  const sbx = await newSandbox(t)
  const big = 'x'.repeat(300_000) + 'end'
  const stream = new ReadableStream({ start (c) { c.enqueue(new TextEncoder().encode(big)); c.close() } })
  await sbx.files.write('stream.txt', stream)
  assert.equal(await sbx.files.read('stream.txt'), big)
  await sbx.files.write('oct.txt', 'octet', { useOctetStream: true })
  assert.equal(await sbx.files.read('oct.txt'), 'octet')
  await sbx.files.write('gz.txt', 'gzipped content', { gzip: true })
  assert.equal(await sbx.files.read('gz.txt'), 'gzipped content')
  assert.equal(await sbx.files.read('gz.txt', { gzip: true }), 'gzipped content')
  const bytes = await sbx.files.read('gz.txt', { format: 'bytes', gzip: true })
  assert.equal(new TextDecoder().decode(bytes), 'gzipped content')
})

test('read missing file and directory', async (t) => {
  const sbx = await newSandbox(t)
  await rejectsWith(sbx.files.read('nope.txt'), e2b.FileNotFoundError, 'read missing')
  await rejectsWith(sbx.files.read('/home/user'), e2b.InvalidArgumentError, 'read a directory')
})

test('write many files (absolute paths outside home too)', async (t) => {
  const sbx = await newSandbox(t)
  assert.deepEqual(await sbx.files.write([]), [])
  const files = []
  for (let i = 0; i < 10; i++) files.push({ path: `multi/file_${i}.txt`, data: `content ${i}` })
  files.push({ path: '/tmp/abs/one.txt', data: 'abs' })
  const infos = await sbx.files.write(files)
  assert.equal(infos.length, files.length)
  for (let i = 0; i < 10; i++) {
    assert.equal(infos[i].path, `/home/user/multi/file_${i}.txt`)
    assert.equal(await sbx.files.read(`multi/file_${i}.txt`), `content ${i}`)
  }
  assert.equal(await sbx.files.read('/tmp/abs/one.txt'), 'abs')
})

test('list with depth', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.files.makeDir('ld/a/aa')
  await sbx.files.makeDir('ld/b')
  await sbx.files.write('ld/file.txt', 'x')
  await sbx.files.write('ld/a/f1.txt', 'x')
  await sbx.files.write('ld/a/aa/f2.txt', 'x')
  await sbx.files.write('ld/b/f3.txt', 'x')
  const one = await sbx.files.list('ld')
  assert.deepEqual(one.map((e) => e.name).sort(), ['a', 'b', 'file.txt'])
  const a = one.find((e) => e.name === 'a')
  assert.equal(a.type, FileType.DIR)
  assert.equal(a.path, '/home/user/ld/a')
  assert.equal(one.find((e) => e.name === 'file.txt').type, FileType.FILE)
  const fileEntry = one.find((e) => e.name === 'file.txt')
  assert.equal(fileEntry.path, '/home/user/ld/file.txt')
  assert.equal(fileEntry.mode, 0o644)
  assert.equal(fileEntry.permissions, '-rw-r--r--')
  assert.equal(fileEntry.owner, 'user')
  assert.equal(fileEntry.group, 'user')
  assert.equal(fileEntry.size, 1)
  assert.equal(a.mode, 0o755)
  assert.equal(a.permissions, 'drwxr-xr-x')
  const two = await sbx.files.list('ld', { depth: 2 })
  assert.deepEqual(two.map((e) => e.path).sort(), [
    '/home/user/ld/a', '/home/user/ld/a/aa', '/home/user/ld/a/f1.txt',
    '/home/user/ld/b', '/home/user/ld/b/f3.txt', '/home/user/ld/file.txt'
  ])
  const three = await sbx.files.list('ld', { depth: 3 })
  assert.equal(three.length, 7)
  await rejectsWith(sbx.files.list('ld', { depth: -1 }), e2b.InvalidArgumentError, 'depth -1')
  await rejectsWith(sbx.files.list('no-such-dir'), e2b.FileNotFoundError, 'list missing dir')
})

test('stat (getInfo) of file, directory, symlink, missing', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.files.write('info.txt', 'test')
  const f = await sbx.files.getInfo('info.txt')
  assert.equal(f.name, 'info.txt')
  assert.equal(f.type, FileType.FILE)
  assert.equal(f.path, '/home/user/info.txt')
  assert.equal(f.size, 4)
  assert.equal(f.mode, 0o644)
  assert.equal(f.permissions, '-rw-r--r--')
  assert.equal(f.owner, 'user')
  assert.equal(f.group, 'user')
  assert.ok(f.modifiedTime instanceof Date && Math.abs(f.modifiedTime - Date.now()) < 120_000)
  assert.equal(f.symlinkTarget, undefined)
  await sbx.files.makeDir('infodir')
  const d = await sbx.files.getInfo('infodir')
  assert.equal(d.type, FileType.DIR)
  assert.equal(d.mode, 0o755)
  assert.equal(d.permissions, 'drwxr-xr-x')
  await sbx.commands.run('ln -s info.txt link.txt', { cwd: '/home/user' })
  const l = await sbx.files.getInfo('link.txt')
  assert.equal(l.type, FileType.FILE)
  assert.equal(l.symlinkTarget, '/home/user/info.txt')
  await rejectsWith(sbx.files.getInfo('missing.txt'), e2b.FileNotFoundError, 'getInfo missing')
  assert.equal(await sbx.files.exists('missing.txt'), false)
})

test('makeDir twice, nested', async (t) => {
  const sbx = await newSandbox(t)
  assert.equal(await sbx.files.makeDir('newdir'), true)
  assert.equal(await sbx.files.makeDir('newdir'), false)
  assert.equal(await sbx.files.exists('newdir'), true)
  assert.equal(await sbx.files.makeDir('n1/n2/n3'), true)
  assert.equal((await sbx.files.getInfo('n1/n2/n3')).type, FileType.DIR)
})

test('rename and remove', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.files.write('old.txt', 'moved content')
  const info = await sbx.files.rename('old.txt', 'sub/new.txt')
  assert.equal(info.path, '/home/user/sub/new.txt')
  assert.equal(await sbx.files.exists('old.txt'), false)
  assert.equal(await sbx.files.read('sub/new.txt'), 'moved content')
  await rejectsWith(sbx.files.rename('gone.txt', 'x.txt'), e2b.FileNotFoundError, 'rename missing')
  await sbx.files.remove('sub/new.txt')
  assert.equal(await sbx.files.exists('sub/new.txt'), false)
  await sbx.files.remove('sub')
  assert.equal(await sbx.files.exists('sub'), false)
  await sbx.files.remove('never-existed.txt')
})

test('user root writes to /root', async (t) => {
  const sbx = await newSandbox(t)
  const info = await sbx.files.write('r.txt', 'root file', { user: 'root' })
  assert.equal(info.path, '/root/r.txt')
  assert.equal(await sbx.files.read('/root/r.txt', { user: 'root' }), 'root file')
  const owner = await sbx.commands.run('stat -c %U /root/r.txt', { user: 'root' })
  assert.equal(owner.stdout, 'root\n')
})

test('watchDir reports create/write events, recursive too', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.files.makeDir('w/nested')
  const events = []
  const handle = await sbx.files.watchDir('w', (e) => { events.push(e) })
  try {
    await sbx.files.write('w/watched.txt', 'one')
    await sbx.files.write('w/watched.txt', 'two')
    await eventually(() => events.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'watched.txt'),
      { what: 'WRITE event for watched.txt' })
    assert.ok(events.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'watched.txt'))
    await sbx.files.remove('w/watched.txt')
    await eventually(() => events.some((e) => e.type === FilesystemEventType.REMOVE && e.name === 'watched.txt'),
      { what: 'REMOVE event' })
  } finally {
    await handle.stop()
  }
  const rec = []
  const rh = await sbx.files.watchDir('w', (e) => { rec.push(e) }, { recursive: true })
  try {
    await sbx.files.makeDir('w/added')
    await eventually(() => rec.some((e) => e.type === FilesystemEventType.CREATE && e.name === 'added'), { what: 'CREATE of subfolder' })
    await sbx.files.write('w/added/in.txt', 'x')
    await sbx.files.write('w/nested/deep.txt', 'x')
    await eventually(() => rec.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'added/in.txt'), { what: 'WRITE in new subfolder' })
    await eventually(() => rec.some((e) => e.type === FilesystemEventType.WRITE && e.name === 'nested/deep.txt'), { what: 'WRITE in nested folder' })
  } finally {
    await rh.stop()
  }
  await rejectsWith(sbx.files.watchDir('no-such-dir', () => {}), e2b.FileNotFoundError, 'watch missing dir')
  await sbx.files.write('plain.txt', 'x')
  await rejectsWith(sbx.files.watchDir('plain.txt', () => {}), e2b.SandboxError, 'watch a file')
})

test('watchDir on a secure sandbox', async (t) => {
  const sbx = await newSandbox(t, { secure: true })
  await sbx.files.makeDir('sw')
  const events = []
  const handle = await sbx.files.watchDir('sw', (e) => { events.push(e) })
  try {
    await sbx.files.write('sw/s.txt', 'secure')
    await eventually(() => events.some((e) => e.type === FilesystemEventType.WRITE && e.name === 's.txt'),
      { what: 'WRITE event on secure sandbox' })
  } finally {
    await handle.stop()
  }
})

// A raw envd request with the sandbox's token (what the SDK adds).
function envdFetch (sbx, pathAndQuery, init = {}) {
  return dataFetch(sbx, 49983, pathAndQuery, {
    ...init,
    headers: { ...(sbx.envdAccessToken ? { 'X-Access-Token': sbx.envdAccessToken } : {}), ...(init.headers || {}) }
  })
}

// What the SDK's version check stands in for: FC's envd 0.5.2 takes
// multipart uploads only and never gzips; E2B's takes octet-stream bodies
// and gzips downloads on request.
test('raw /files: octet-stream upload and gzip download per envd version', async (t) => {
  const sbx = await newSandbox(t)
  const up = await envdFetch(sbx, '/files?path=/home/user/raw.txt', {
    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'raw body'
  })
  if (FC) {
    assert.ok(up.status >= 400, `FC's envd refuses an octet-stream body (got ${up.status})`)
    await up.arrayBuffer()
    assert.equal(await sbx.files.exists('raw.txt'), false, 'nothing written')
  } else {
    assert.equal(up.status, 200)
    assert.deepEqual(await up.json(), [{ name: 'raw.txt', path: '/home/user/raw.txt', type: 'file' }])
    assert.equal(await sbx.files.read('raw.txt'), 'raw body')
  }
  await sbx.files.write('plain.txt', 'p'.repeat(4096))
  const down = await envdFetch(sbx, '/files?path=/home/user/plain.txt', { headers: { 'Accept-Encoding': 'gzip' } })
  assert.equal(down.status, 200)
  assert.equal(down.headers.get('content-encoding'), FC ? null : 'gzip')
  assert.equal(await down.text(), 'p'.repeat(4096))   // fetch inflates
})

// Custom file metadata (X-Metadata-* → EntryInfo.metadata) needs envd
// 0.6.2: on FC the SDK refuses before sending anything. Regression on E2B:
// overwriting a file replaces its metadata (stale keys were kept).
test('file metadata: kept, replaced on overwrite (E2B); refused by the SDK (FC)', async (t) => {
  const sbx = await newSandbox(t)
  if (FC) {
    await assert.rejects(sbx.files.write('meta.txt', 'x', { metadata: { owner: 'me' } }), (err) => {
      assert.ok(err instanceof e2b.TemplateError, `got ${err.constructor.name}: ${err.message}`)
      assert.equal(err.message, 'File metadata requires envd 0.6.2 or later.')
      return true
    })
    assert.equal(await sbx.files.exists('meta.txt'), false, 'the SDK sent nothing')
    // A client that sends the headers anyway: envd 0.5.2 ignores them.
    const form = new FormData()
    form.append('file', new Blob(['x']), 'meta.txt')
    const r = await envdFetch(sbx, '/files?path=/home/user/meta.txt', { method: 'POST', headers: { 'X-Metadata-owner': 'me' }, body: form })
    assert.equal(r.status, 200)
    await r.arrayBuffer()
    assert.equal((await sbx.files.getInfo('meta.txt')).metadata, undefined)
    return
  }
  const w = await sbx.files.write('meta.txt', 'one', { metadata: { owner: 'me', stage: 'draft' } })
  assert.deepEqual(w.metadata, { owner: 'me', stage: 'draft' })
  assert.deepEqual((await sbx.files.getInfo('meta.txt')).metadata, { owner: 'me', stage: 'draft' })
  assert.deepEqual((await sbx.files.list('.')).find((e) => e.name === 'meta.txt').metadata, { owner: 'me', stage: 'draft' })
  await sbx.files.write('meta.txt', 'two', { metadata: { stage: 'final' } })
  assert.deepEqual((await sbx.files.getInfo('meta.txt')).metadata, { stage: 'final' }, 'stale key owner is gone')
  await sbx.files.write('meta.txt', 'three')
  assert.equal((await sbx.files.getInfo('meta.txt')).metadata, undefined, 'an overwrite without metadata clears it')
  assert.equal(await sbx.files.read('meta.txt'), 'three')
})

// includeEntry (envd >= 0.6.3) and allowNetworkMounts (>= 0.6.4) on
// watchDir: FC's SDK check raises before any request; E2B honours both.
test('watchDir includeEntry and allowNetworkMounts', async (t) => {
  const sbx = await newSandbox(t)
  await sbx.files.makeDir('we')
  if (FC) {
    await rejectsWith(sbx.files.watchDir('we', () => {}, { includeEntry: true }), e2b.TemplateError, 'includeEntry on envd 0.5.2')
    await rejectsWith(sbx.files.watchDir('we', () => {}, { allowNetworkMounts: true }), e2b.TemplateError, 'allowNetworkMounts on envd 0.5.2')
    const plain = await sbx.files.watchDir('we', () => {})   // without them it watches
    await plain.stop()
    return
  }
  const events = []
  const h = await sbx.files.watchDir('we', (e) => { events.push(e) }, { includeEntry: true, allowNetworkMounts: true })
  try {
    await sbx.files.write('we/e.txt', 'entry')
    const ev = await eventually(() => events.find((e) => e.name === 'e.txt' && e.entry),
      { what: 'event with entry info' })
    assert.equal(ev.entry.name, 'e.txt')
    assert.equal(ev.entry.path, '/home/user/we/e.txt')
    assert.equal(ev.entry.type, FileType.FILE)
  } finally {
    await h.stop()
  }
})

// Regression: /proc files report size 0 but have content; read returns it.
test('read a /proc file', async (t) => {
  const sbx = await newSandbox(t)
  const status = await sbx.files.read('/proc/self/status')
  assert.match(status, /^Name:\s+\S+/m)
  assert.match(status, /^Pid:\s+\d+/m)
  const cpuinfo = await sbx.files.read('/proc/cpuinfo', { format: 'bytes' })
  assert.ok(cpuinfo.length > 0, '/proc/cpuinfo is not empty')
  assert.match(new TextDecoder().decode(cpuinfo), /processor/)
})
