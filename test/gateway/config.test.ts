import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { presenceTimings } from '../../src/gateway/timings.js'
import { testEnv } from '../helper.js'

t.test('presence timings: heartbeat a fifth of the TTL (at most 10 s), entries live TTL - 2 heartbeats', async (t) => {
  t.same(presenceTimings(loadConfig(testEnv())), { heartbeatMs: 6000, entryTtlMs: 18_000 })
  t.same(presenceTimings(loadConfig(testEnv({ PRESENCE_TTL_S: '3' }))), { heartbeatMs: 600, entryTtlMs: 1800 })
  t.same(presenceTimings(loadConfig(testEnv({ PRESENCE_TTL_S: '120' }))), { heartbeatMs: 10_000, entryTtlMs: 100_000 })
  t.same(presenceTimings(loadConfig(testEnv({ PRESENCE_TTL_S: '30', PRESENCE_HEARTBEAT_MS: '7500' }))), { heartbeatMs: 7500, entryTtlMs: 15_000 })
  t.throws(() => loadConfig(testEnv({ PRESENCE_TTL_S: '30', PRESENCE_HEARTBEAT_MS: '8000' })), {
    message: 'Invalid configuration: PRESENCE_HEARTBEAT_MS must be at most a quarter of PRESENCE_TTL_S',
  })
})

t.test('a bad variable stops the gateway with one line naming it', async (t) => {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/gateway/server.ts'], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { PATH: process.env.PATH, ...testEnv({ GATEWAY_PORT: 'abc' }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()))
  const code = await new Promise((resolve) => proc.once('exit', resolve))
  t.equal(code, 1)
  t.equal(out.trim(), 'Invalid configuration: GATEWAY_PORT must be integer')
})
