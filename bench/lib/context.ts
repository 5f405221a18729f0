import pino from 'pino'
import type { Caller, MemberCaller } from '../../src/auth/callers.js'
import type { Config } from '../../src/config.js'
import { createCursorCodec } from '../../src/cursor.js'
import { contextFor, type Ctx, type Deps } from '../../src/context.js'
import type { Pool } from '../../src/db/client.js'
import { primaryReads } from '../../src/db/replica.js'

/**
 * A context for calling domain code from a script that has only a pool and a configuration (the
 * EXPLAIN and plan scripts, the harness test): the rest of Deps throws when touched, so a script
 * never silently runs without something the code needs. The API builds full Deps (src/deps.ts).
 */
export function scriptContext(sql: Pool, config: Config, caller: Caller): Ctx {
  const absent = (name: string) =>
    new Proxy(
      {},
      {
        get: () => {
          throw new Error(`${name} is not available to a script context (bench/lib/context.ts)`)
        },
      },
    ) as never
  const deps: Deps = {
    config,
    log: pino({ level: 'silent' }),
    sql,
    searchSql: sql,
    reads: primaryReads(sql, sql),
    shared: absent('shared'),
    events: absent('events'),
    presence: absent('presence'),
    jobs: absent('jobs'),
    mailer: absent('mailer'),
    memberTokens: absent('memberTokens'),
    visitorTokens: absent('visitorTokens'),
    memberDirectory: absent('memberDirectory'),
    channelSessions: absent('channelSessions'),
    rateWindows: absent('rateWindows'),
    cursor: createCursorCodec(config),
    providerB: null,
    storage: absent('storage'),
    thumbnails: absent('thumbnails'),
    routing: absent('routing'),
    mailReaders: absent('mailReaders'),
  }
  return contextFor(deps, caller)
}

/** An owner of `workspaceId`, as a script acts. */
export const benchOwner = (workspaceId: string): MemberCaller => ({
  kind: 'member',
  workspaceId,
  userId: 'bench|owner',
  role: 'owner',
  name: 'Bench Owner',
  email: '',
})
