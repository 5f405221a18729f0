import type { Area } from '../lib/area.js'
import { analytics } from './analytics.js'
import { attachments } from './attachments.js'
import { billing } from './billing.js'
import { canned } from './canned.js'
import { ceilings } from './ceilings.js'
import { conversations } from './conversations.js'
import { email } from './email.js'
import { health } from './health.js'
import { lists } from './lists.js'
import { routing } from './routing.js'
import { search } from './search.js'
import { sla } from './sla.js'
import { support } from './support.js'
import { triage } from './triage.js'
import { unread } from './unread.js'

/** Every area the benchmark measures, in run order: a new area adds its file and one entry here. */
export const areas: readonly Area[] = [health, ceilings, lists, unread, search, canned, conversations, billing, attachments, support, analytics, routing, sla, email, triage]
