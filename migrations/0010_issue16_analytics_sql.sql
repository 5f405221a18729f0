-- Analytics (issue 16): what drizzle cannot express. docs/analytics.md explains the model.

-- The histogram bucket of a duration in seconds: 0 holds [0, 1 s), bucket k >= 1 holds
-- [1.05^(k-1), 1.05^k) seconds, the last one everything beyond (about 1.3 years). The same
-- constants are in src/analytics/histogram.ts.
CREATE OR REPLACE FUNCTION metric_bucket(v double precision) RETURNS smallint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN v IS NULL THEN -1
              WHEN v < 1 THEN 0
              ELSE least(359, 1 + floor(ln(v) / ln(1.05)))::smallint END
$$;
--> statement-breakpoint

-- The start of the rollup period of `at`, in UTC: an hour, a day, a third of a month (from the
-- 1st, 11th or 21st; the last third runs to the month's end) or a month.
CREATE OR REPLACE FUNCTION metric_period(grain text, at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (CASE grain
    WHEN 'h' THEN date_trunc('hour', at AT TIME ZONE 'UTC')
    WHEN 'd' THEN date_trunc('day', at AT TIME ZONE 'UTC')
    WHEN 't' THEN date_trunc('month', at AT TIME ZONE 'UTC')
                  + make_interval(days => least((extract(day FROM at AT TIME ZONE 'UTC')::int - 1) / 10, 2) * 10)
    WHEN 'm' THEN date_trunc('month', at AT TIME ZONE 'UTC') END) AT TIME ZONE 'UTC'
$$;
--> statement-breakpoint

-- The (grain, dim) pairs kept: every grain for the workspace (0) and per channel (1); no hours
-- per agent (2) or per agent and channel (3).
CREATE OR REPLACE FUNCTION metric_kept(grain text, dim smallint) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT grain <> 'h' OR dim < 2
$$;
--> statement-breakpoint

-- The kinds that carry a duration and so a histogram.
CREATE OR REPLACE FUNCTION metric_has_histogram(kind text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT kind IN ('first_response', 'conversation_resolved')
$$;
--> statement-breakpoint

-- Rebuilds every rollup row from metric_events (slot 0), set-based: used after a bulk load (the
-- benchmark's seed, the backfill below) and by tests to check the rollups the transactions keep.
-- Hours and days come from the events, thirds and months from the days; rows are written in key
-- order, so the primary key grows by appending.
CREATE OR REPLACE FUNCTION metric_rebuild_rollups() RETURNS void
LANGUAGE sql AS $$
  TRUNCATE metric_rollups;
  INSERT INTO metric_rollups (workspace_id, dim, grain, period_start, channel_id, agent_id, kind, bucket, slot, n, total)
  WITH fine AS (
    SELECT e.workspace_id, d.dim, g.grain, metric_period(g.grain, e.occurred_at) AS period_start, d.channel_id, d.agent_id, e.kind,
           CASE WHEN metric_has_histogram(e.kind) THEN metric_bucket(e.value) ELSE -1 END AS bucket,
           count(*) AS n, COALESCE(sum(e.value), 0) AS total
    FROM metric_events e
    CROSS JOIN (VALUES ('h'), ('d')) g(grain)
    CROSS JOIN LATERAL (VALUES (0::smallint, '00000000-0000-0000-0000-000000000000'::uuid, ''::text),
                               (1::smallint, e.channel_id, ''::text),
                               (2::smallint, '00000000-0000-0000-0000-000000000000'::uuid, e.agent_id),
                               (3::smallint, e.channel_id, e.agent_id)) d(dim, channel_id, agent_id)
    WHERE d.agent_id IS NOT NULL AND metric_kept(g.grain, d.dim)
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
  ), coarse AS (
    SELECT f.workspace_id, f.dim, g.grain, metric_period(g.grain, f.period_start) AS period_start, f.channel_id, f.agent_id, f.kind,
           f.bucket, sum(f.n) AS n, sum(f.total) AS total
    FROM fine f CROSS JOIN (VALUES ('t'), ('m')) g(grain)
    WHERE f.grain = 'd'
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
  )
  SELECT workspace_id, dim, grain, period_start, channel_id, agent_id, kind, bucket, 0, n, total
  FROM (SELECT * FROM fine UNION ALL SELECT * FROM coarse) r
  ORDER BY workspace_id, dim, grain, period_start, channel_id, agent_id, kind, bucket;
$$;
--> statement-breakpoint

-- Events for conversations that have none (rows written before analytics existed, bulk loads),
-- derived from the stored messages: the creation, every public message (notes and system
-- messages never), the first public agent
-- message as the first response, and a resolved conversation's close. Reopens are not stored
-- anywhere before this table, so old conversations count as one open period; messages received
-- are attributed to the current assignee. Then the analytics columns of the conversation.
CREATE OR REPLACE FUNCTION metric_backfill() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  DROP TABLE IF EXISTS metric_backfill_conv, metric_backfill_msg;
  CREATE TEMP TABLE metric_backfill_conv ON COMMIT DROP AS
    SELECT c.id, c.workspace_id, c.channel_id, c.assigned_agent_id, c.status, c.created_at, c.closed_at
    FROM conversations c
    WHERE c.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM metric_events e WHERE e.conversation_id = c.id);
  CREATE TEMP TABLE metric_backfill_msg ON COMMIT DROP AS
    SELECT m.conversation_id, m.sender_type, m.sender_id, m.created_at,
           row_number() OVER (PARTITION BY m.conversation_id ORDER BY m.created_at, m.id)::int AS seq
    FROM messages m JOIN metric_backfill_conv c ON c.id = m.conversation_id
    WHERE m.sender_type IN ('GUEST', 'AGENT') AND NOT m.private;
  INSERT INTO metric_events (workspace_id, conversation_id, kind, seq, channel_id, agent_id, value, occurred_at)
  SELECT workspace_id, id, 'conversation_created', 0, channel_id, NULL::text, NULL::float8, created_at FROM metric_backfill_conv
  UNION ALL
  SELECT c.workspace_id, c.id, CASE WHEN m.sender_type = 'GUEST' THEN 'message_received' ELSE 'message_sent' END, m.seq,
         c.channel_id, CASE WHEN m.sender_type = 'GUEST' THEN c.assigned_agent_id ELSE m.sender_id END, NULL::float8, m.created_at
  FROM metric_backfill_msg m JOIN metric_backfill_conv c ON c.id = m.conversation_id
  UNION ALL
  (SELECT DISTINCT ON (c.id) c.workspace_id, c.id, 'first_response', 0, c.channel_id, m.sender_id,
          extract(epoch FROM m.created_at - c.created_at)::float8, m.created_at
   FROM metric_backfill_msg m JOIN metric_backfill_conv c ON c.id = m.conversation_id
   WHERE m.sender_type = 'AGENT'
   ORDER BY c.id, m.seq)
  UNION ALL
  SELECT workspace_id, id, 'conversation_resolved', 0, channel_id, assigned_agent_id,
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

SELECT metric_backfill();
--> statement-breakpoint
SELECT metric_rebuild_rollups();
