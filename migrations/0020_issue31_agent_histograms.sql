ALTER TABLE "metric_rollups" ADD COLUMN "hist" jsonb;--> statement-breakpoint

-- Hand-written (issue 31, docs/analytics.md "Per-agent histograms"): in the dims with the agent
-- bit (2, 3, 6, 7) a duration kind is one rollup row (bucket -1) with its bucket counts in
-- `hist`, where it was one row per bucket, so /analytics/agents reads a row per agent, period
-- and kind whatever the volume.
CREATE OR REPLACE FUNCTION metric_hist_row(dim smallint, kind text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT dim & 2 <> 0 AND metric_has_histogram(kind)
$$;
--> statement-breakpoint

-- The sum of two histograms (bucket -> samples), zero entries left out so a row that lost samples
-- (a deleted conversation) equals a rebuild; null is the empty histogram of the other side. Walks
-- the delta `b` only (a live write's: one bucket), not the row's `a`: half the time of summing
-- both sides' entries (measured on 5,000 month rows: 109 vs 238 us a call).
CREATE OR REPLACE FUNCTION metric_hist_add(a jsonb, b jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE (
    SELECT (a || jsonb_object_agg(k, COALESCE((a ->> k)::bigint, 0) + v::bigint))
           - COALESCE(array_agg(k) FILTER (WHERE COALESCE((a ->> k)::bigint, 0) + v::bigint = 0), '{}'::text[])
    FROM jsonb_each_text(b) e(k, v)) END
$$;
--> statement-breakpoint

-- As in issue26_team_analytics, the buckets of a duration in the agent dims folded into `hist`.
CREATE OR REPLACE FUNCTION metric_rebuild_rollups() RETURNS void
LANGUAGE sql AS $$
  TRUNCATE metric_rollups;
  INSERT INTO metric_rollups (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot, n, total, hist)
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
  SELECT workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind,
         CASE WHEN metric_hist_row(dim, kind) THEN -1 ELSE bucket END, 0, sum(n), sum(total),
         CASE WHEN metric_hist_row(dim, kind) THEN jsonb_object_agg(bucket, n) END
  FROM (SELECT * FROM fine UNION ALL SELECT * FROM coarse) r
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
  ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
$$;
--> statement-breakpoint

-- Existing rollups: the bucket rows of the agent dims become one row per slot with `hist`
-- (metric_backfill() writes events only; the rollups of the events it derives come from
-- metric_rebuild_rollups(), above). Run VACUUM ANALYZE metric_rollups after it on a large
-- database: the deleted rows sit in the index ranges the agent reads scan until then.
INSERT INTO metric_rollups AS r (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot, n, total, hist)
SELECT workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, -1, slot, sum(n), sum(total),
       COALESCE(jsonb_object_agg(bucket, n) FILTER (WHERE n <> 0), '{}'::jsonb)
FROM metric_rollups
WHERE metric_hist_row(dim, kind) AND bucket >= 0
GROUP BY workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, slot
ORDER BY workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, slot
ON CONFLICT (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot)
DO UPDATE SET n = r.n + excluded.n, total = r.total + excluded.total, hist = metric_hist_add(r.hist, excluded.hist);
--> statement-breakpoint
DELETE FROM metric_rollups WHERE metric_hist_row(dim, kind) AND bucket >= 0;
