ALTER TABLE "metric_events" ADD COLUMN "team_id" uuid;--> statement-breakpoint
ALTER TABLE "metric_rollups" ADD COLUMN "team_id" uuid DEFAULT '00000000-0000-0000-0000-000000000000' NOT NULL;--> statement-breakpoint
ALTER TABLE "metric_rollups" DROP CONSTRAINT "metric_rollups_workspace_id_dim_grain_period_start_channel_id_agent_id_kind_bucket_slot_pk";--> statement-breakpoint
ALTER TABLE "metric_rollups" ADD CONSTRAINT "metric_rollups_workspace_id_dim_grain_period_start_channel_id_agent_id_team_id_kind_bucket_slot_pk" PRIMARY KEY("workspace_id","dim","grain","period_start","channel_id","agent_id","team_id","kind","bucket","slot");--> statement-breakpoint

-- Hand-written (issue 26, docs/analytics.md "Teams"): the team dims 4..7 (the team bit on dims
-- 0..3). Hours are kept for every dim without the agent bit.
CREATE OR REPLACE FUNCTION metric_kept(grain text, dim smallint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT grain <> 'h' OR dim & 2 = 0
$$;
--> statement-breakpoint

-- As in issue16_analytics_sql, with the team dims (events of a conversation that had a team).
CREATE OR REPLACE FUNCTION metric_rebuild_rollups() RETURNS void
LANGUAGE sql AS $$
  TRUNCATE metric_rollups;
  INSERT INTO metric_rollups (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot, n, total)
  WITH fine AS (
    SELECT e.workspace_id, d.dim, g.grain, metric_period(g.grain, e.occurred_at) AS period_start, d.channel_id, d.agent_id, d.team_id, e.kind,
           CASE WHEN metric_has_histogram(e.kind) THEN metric_bucket(e.value) ELSE -1 END AS bucket,
           count(*) AS n, COALESCE(sum(e.value), 0) AS total
    FROM metric_events e
    CROSS JOIN (VALUES ('h'), ('d')) g(grain)
    CROSS JOIN LATERAL (VALUES (0::smallint, '00000000-0000-0000-0000-000000000000'::uuid, ''::text, '00000000-0000-0000-0000-000000000000'::uuid),
                               (1::smallint, e.channel_id, ''::text, '00000000-0000-0000-0000-000000000000'::uuid),
                               (2::smallint, '00000000-0000-0000-0000-000000000000'::uuid, e.agent_id, '00000000-0000-0000-0000-000000000000'::uuid),
                               (3::smallint, e.channel_id, e.agent_id, '00000000-0000-0000-0000-000000000000'::uuid),
                               (4::smallint, '00000000-0000-0000-0000-000000000000'::uuid, ''::text, e.team_id),
                               (5::smallint, e.channel_id, ''::text, e.team_id),
                               (6::smallint, '00000000-0000-0000-0000-000000000000'::uuid, e.agent_id, e.team_id),
                               (7::smallint, e.channel_id, e.agent_id, e.team_id)) d(dim, channel_id, agent_id, team_id)
    WHERE d.agent_id IS NOT NULL AND d.team_id IS NOT NULL AND metric_kept(g.grain, d.dim)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
  ), coarse AS (
    SELECT f.workspace_id, f.dim, g.grain, metric_period(g.grain, f.period_start) AS period_start, f.channel_id, f.agent_id, f.team_id, f.kind,
           f.bucket, sum(f.n) AS n, sum(f.total) AS total
    FROM fine f CROSS JOIN (VALUES ('t'), ('m')) g(grain)
    WHERE f.grain = 'd'
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
  )
  SELECT workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, 0, n, total
  FROM (SELECT * FROM fine UNION ALL SELECT * FROM coarse) r
  ORDER BY workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket;
$$;
--> statement-breakpoint

-- As in issue16_analytics_sql; the events of old conversations take their current team (their
-- team at each moment was not stored), as received messages take the current assignee.
CREATE OR REPLACE FUNCTION metric_backfill() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DROP TABLE IF EXISTS metric_backfill_conv, metric_backfill_msg;
  CREATE TEMP TABLE metric_backfill_conv ON COMMIT DROP AS
    SELECT c.id, c.workspace_id, c.channel_id, c.assigned_agent_id, c.team_id, c.status, c.created_at, c.closed_at
    FROM conversations c
    WHERE c.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM metric_events e WHERE e.conversation_id = c.id);
  CREATE TEMP TABLE metric_backfill_msg ON COMMIT DROP AS
    SELECT m.conversation_id, m.sender_type, m.sender_id, m.created_at,
           row_number() OVER (PARTITION BY m.conversation_id ORDER BY m.created_at, m.id)::int AS seq
    FROM messages m JOIN metric_backfill_conv c ON c.id = m.conversation_id
    WHERE m.sender_type IN ('GUEST', 'AGENT') AND NOT m.private;
  INSERT INTO metric_events (workspace_id, conversation_id, kind, seq, channel_id, agent_id, team_id, value, occurred_at)
  SELECT workspace_id, id, 'conversation_created', 0, channel_id, NULL::text, team_id, NULL::float8, created_at FROM metric_backfill_conv
  UNION ALL
  SELECT c.workspace_id, c.id, CASE WHEN m.sender_type = 'GUEST' THEN 'message_received' ELSE 'message_sent' END, m.seq,
         c.channel_id, CASE WHEN m.sender_type = 'GUEST' THEN c.assigned_agent_id ELSE m.sender_id END, c.team_id, NULL::float8, m.created_at
  FROM metric_backfill_msg m JOIN metric_backfill_conv c ON c.id = m.conversation_id
  UNION ALL
  (SELECT DISTINCT ON (c.id) c.workspace_id, c.id, 'first_response', 0, c.channel_id, m.sender_id, c.team_id,
          extract(epoch FROM m.created_at - c.created_at)::float8, m.created_at
   FROM metric_backfill_msg m JOIN metric_backfill_conv c ON c.id = m.conversation_id
   WHERE m.sender_type = 'AGENT'
   ORDER BY c.id, m.seq)
  UNION ALL
  SELECT workspace_id, id, 'conversation_resolved', 0, channel_id, assigned_agent_id, team_id,
         extract(epoch FROM closed_at - created_at)::float8, closed_at
  FROM metric_backfill_conv WHERE status IN ('RESOLVED', 'CLOSED') AND closed_at IS NOT NULL
  ON CONFLICT DO NOTHING;
  UPDATE conversations c SET
    public_messages = s.n,
    last_public_sender = s.last_sender,
    awaiting_reply = NOT s.replied
  FROM (SELECT conversation_id, count(*)::int AS n, bool_or(sender_type = 'AGENT') AS replied,
               (array_agg(sender_type ORDER BY seq DESC))[1] AS last_sender
        FROM metric_backfill_msg GROUP BY conversation_id) s
  WHERE c.id = s.conversation_id;
  DROP TABLE metric_backfill_conv, metric_backfill_msg;
END
$$;
--> statement-breakpoint

-- Unread counters per team and channel ('team-channel:<teamId>:<channelId>'), so byChannel can
-- leave out the private teams a caller may not see (src/conversations/counters.ts). Existing
-- conversations of a team are counted once here, in slot 0; writers keep it from now on.
INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages)
SELECT workspace_id, 'team-channel:' || team_id || ':' || channel_id, 0, count(*)::int, sum(unread_count)::int
FROM conversations
WHERE deleted_at IS NULL AND status = 'OPEN' AND unread_count > 0 AND team_id IS NOT NULL
GROUP BY workspace_id, team_id, channel_id
ON CONFLICT (workspace_id, scope, slot) DO UPDATE
  SET conversations = unread_counters.conversations + excluded.conversations, messages = unread_counters.messages + excluded.messages;
