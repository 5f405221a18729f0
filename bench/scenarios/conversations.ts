import type { Area } from '../lib/area.js'

/** One conversation read by id, and messages posted by a member, both on random OPEN conversations. */
export const conversations: Area = {
  name: 'conversations',
  ids: [
    { id: 'get-conversation', about: '`GET /conversations/:id`, a random one of 2,000 OPEN conversations per request' },
    { id: 'post-message', about: '`POST /conversations/:id/messages` as a member, random conversation, distinct `clientMessageId`' },
  ],
  async prepare({ sql, seed, headers, runTag }) {
    const ids = (
      await sql<{ id: string }[]>`
        SELECT id FROM conversations
        WHERE workspace_id = ${seed.largest.id} AND deleted_at IS NULL AND status = 'OPEN'
        ORDER BY random() LIMIT 2000`
    ).map((r) => r.id)
    const pickId = () => ids[Math.floor(Math.random() * ids.length)]
    let seq = 0
    return {
      scenarios: [
        {
          id: 'get-conversation',
          label: 'GET /conversations/:id',
          kind: 'read',
          method: 'GET',
          path: `/conversations/${ids[0]}`,
          headers: headers.largest,
          vary: (req) => ({ ...req, path: `/conversations/${pickId()}` }),
        },
        {
          id: 'post-message',
          label: 'POST /conversations/:id/messages',
          kind: 'write',
          method: 'POST',
          path: `/conversations/${ids[0]}/messages`,
          headers: { ...headers.largest, 'content-type': 'application/json' },
          vary: (req) => ({
            ...req,
            path: `/conversations/${pickId()}/messages`,
            body: JSON.stringify({
              // No word of the search scenarios: posted messages must not change what they find.
              body: 'Thanks for waiting, I have checked with the team and it is on its way.',
              clientMessageId: `bench-${runTag}-${++seq}`,
            }),
          }),
        },
      ],
    }
  },
}
