-- Hand-written (issue 31, docs/search.md "Periods"): a chunk's document also holds its lexemes tagged
-- with the 30-day period of its newest message (`c70ac61b/692:refund`), so a search reads the
-- posting list of the recent periods first instead of every match in the workspace's history.

-- The period of a time: 30-day (2,592,000 s) periods since the epoch. IMMUTABLE: the epoch of a
-- timestamptz does not depend on the time zone.
CREATE FUNCTION search_period(at timestamptz) RETURNS int
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT floor(extract(epoch FROM at) / 2592000)::int $$;
--> statement-breakpoint

-- Where a period starts.
CREATE FUNCTION search_period_start(period int) RETURNS timestamptz
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT to_timestamp(period::float8 * 2592000) $$;
--> statement-breakpoint

-- A chunk's document: its distinct lexemes tagged with the workspace, the same lexemes tagged with
-- the workspace and the period of `at` (the chunk's last_message_at), the bare tag and the tag with
-- the period (what an all-negative query looks up). A lexeme over 2,000 bytes is left out (a tagged
-- one must stay under tsvector's 2,047-byte limit).
CREATE FUNCTION search_doc(ws uuid, lexemes text[], at timestamptz) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT array_to_tsvector(
             ARRAY(SELECT DISTINCT tag || ':' || x FROM unnest(lexemes) x WHERE octet_length(x) <= 2000)
             || ARRAY(SELECT DISTINCT tag || '/' || search_period(at) || ':' || x FROM unnest(lexemes) x WHERE octet_length(x) <= 2000)
             || tag || (tag || '/' || search_period(at)))
    FROM search_tag(ws) tag
  $$;
--> statement-breakpoint

-- The lexemes a document was built from (its workspace-tagged entries, the tag removed).
CREATE FUNCTION search_doc_lexemes(ws uuid, doc tsvector) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT ARRAY(SELECT substr(l, 10) FROM unnest(tsvector_to_array(doc)) l WHERE left(l, 9) = search_tag(ws) || ':')
  $$;
--> statement-breakpoint

-- search_query with every lexeme tagged with the workspace and `period` instead: the chunks of that
-- period that may match (all of them, the tag with the period, for a text of negations only). NULL
-- when the text has no lexeme.
CREATE FUNCTION search_query_in(ws uuid, q text, period int) RETURNS tsquery
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
    SELECT CASE
      WHEN numnode(t) = 0 THEN NULL
      WHEN querytree(t) = 'T' THEN quote_literal(search_tag(ws) || '/' || period)::tsquery
      ELSE regexp_replace(regexp_replace(querytree(t), '<[0-9]*->|<[0-9]+>', '&', 'g'),
                          '''((?:[^'']|'''')*)''', '''' || search_tag(ws) || '/' || period || ':\1''', 'g')::tsquery
    END
    FROM websearch_to_tsquery('simple', q) t
  $$;
--> statement-breakpoint

-- As before (0007), but a chunk whose new messages are of another period than its newest one is
-- rebuilt for the later of the two, so its period entries always name the period it is in now (in
-- the same period the two documents carry the same period entries and are merged as before).
CREATE OR REPLACE FUNCTION search_chunks_add() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
  BEGIN
    WITH nr AS (
      SELECT n.conversation_id, n.workspace_id, n.created_at, n.search,
             row_number() OVER (PARTITION BY n.conversation_id ORDER BY n.created_at, n.id) - 1 AS k
      FROM new_rows n
    ),
    base AS (
      SELECT c.conversation_id, coalesce(l.seq * 32 + l.messages, 0) AS o
      FROM (SELECT DISTINCT conversation_id FROM nr) c
      LEFT JOIN LATERAL (
        SELECT s.seq, s.messages FROM search_chunks s
        WHERE s.conversation_id = c.conversation_id ORDER BY s.seq DESC LIMIT 1
      ) l ON true
    ),
    placed AS (
      SELECT nr.*, ((b.o + nr.k) / 32)::int AS seq FROM nr JOIN base b USING (conversation_id)
    ),
    chunks AS (
      SELECT conversation_id, seq, workspace_id, count(*)::int AS messages, max(created_at) AS last_at
      FROM placed GROUP BY conversation_id, seq, workspace_id
    ),
    docs AS (
      SELECT p.conversation_id, p.seq, array_agg(DISTINCT l) AS lexemes
      FROM placed p, unnest(tsvector_to_array(p.search)) l
      GROUP BY p.conversation_id, p.seq
    )
    INSERT INTO search_chunks AS s (conversation_id, seq, workspace_id, messages, last_message_at, doc)
    SELECT c.conversation_id, c.seq, c.workspace_id, c.messages, c.last_at, search_doc(c.workspace_id, coalesce(d.lexemes, '{}'), c.last_at)
    FROM chunks c LEFT JOIN docs d USING (conversation_id, seq)
    ORDER BY c.conversation_id, c.seq
    ON CONFLICT (conversation_id, seq) DO UPDATE
      SET messages = s.messages + EXCLUDED.messages,
          last_message_at = greatest(s.last_message_at, EXCLUDED.last_message_at),
          doc = CASE WHEN search_period(s.last_message_at) = search_period(EXCLUDED.last_message_at) THEN s.doc || EXCLUDED.doc
                     ELSE search_doc(s.workspace_id,
                                     search_doc_lexemes(s.workspace_id, s.doc) || search_doc_lexemes(s.workspace_id, EXCLUDED.doc),
                                     greatest(s.last_message_at, EXCLUDED.last_message_at)) END;
    RETURN NULL;
  END
  $$;
--> statement-breakpoint

DROP FUNCTION search_doc(uuid, text[]);
--> statement-breakpoint

-- Backfill: every chunk rebuilt with its period entries. The GIN index is rebuilt once afterwards
-- (updating it row by row would write every entry twice).
DROP INDEX search_chunks_doc_idx;
--> statement-breakpoint
UPDATE search_chunks SET doc = search_doc(workspace_id, search_doc_lexemes(workspace_id, doc), last_message_at);
--> statement-breakpoint
CREATE INDEX search_chunks_doc_idx ON search_chunks USING gin (doc) WITH (gin_pending_list_limit = 256);
