-- Search chunks (docs/search.md): the functions that tag lexemes with their workspace, the
-- statement-level trigger that keeps search_chunks from every INSERT into messages, and the
-- backfill of the messages already stored. Chunk size 32 is written in the trigger and the
-- backfill below (and in src/db/schema.ts's comment).

-- A short, stable tag per workspace. Two workspaces sharing a tag (2^-32) only share posting
-- lists: every query also filters on workspace_id.
CREATE FUNCTION search_tag(ws uuid) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT left(md5(ws::text), 8) $$;
--> statement-breakpoint

-- A chunk's document: its distinct lexemes tagged with the workspace, plus the bare tag (what an
-- all-negative query such as "-word" looks up: every chunk of the workspace). No positions: the
-- chunk is a candidate, messages.search decides. A lexeme over 2,000 bytes is left out (the
-- tagged one must stay under tsvector's 2,047-byte limit).
CREATE FUNCTION search_doc(ws uuid, lexemes text[]) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT array_to_tsvector(ARRAY(SELECT tag || ':' || x FROM unnest(lexemes) x WHERE octet_length(x) <= 2000) || tag)
    FROM search_tag(ws) tag
  $$;
--> statement-breakpoint

-- The chunk-level query of a search text: websearch_to_tsquery's indexable part (querytree drops
-- negations, which only messages can judge), phrases relaxed to AND (a chunk has no positions),
-- every lexeme tagged. NULL when the text has no lexeme (matches nothing); the bare tag when it
-- has only negations. IMMUTABLE: with the text bound, the planner folds it to a constant and
-- estimates its frequency in this workspace from the column statistics.
CREATE FUNCTION search_query(ws uuid, q text) RETURNS tsquery
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
    SELECT CASE
      WHEN numnode(t) = 0 THEN NULL
      WHEN querytree(t) = 'T' THEN quote_literal(search_tag(ws))::tsquery
      ELSE regexp_replace(regexp_replace(querytree(t), '<[0-9]*->|<[0-9]+>', '&', 'g'),
                          '''((?:[^'']|'''')*)''', '''' || search_tag(ws) || ':\1''', 'g')::tsquery
    END
    FROM websearch_to_tsquery('simple', q) t
  $$;
--> statement-breakpoint

-- New messages join their conversation's newest chunk until it holds 32, then start the next.
-- One set-based statement per INSERT/COPY statement (transition table), so a bulk load costs
-- one pass. Two concurrent inserts into one conversation meet at ON CONFLICT (the second waits
-- for the first's row lock), so a chunk may end a little over 32: harmless.
CREATE FUNCTION search_chunks_add() RETURNS trigger
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
    SELECT c.conversation_id, c.seq, c.workspace_id, c.messages, c.last_at, search_doc(c.workspace_id, coalesce(d.lexemes, '{}'))
    FROM chunks c LEFT JOIN docs d USING (conversation_id, seq)
    ORDER BY c.conversation_id, c.seq
    ON CONFLICT (conversation_id, seq) DO UPDATE
      SET messages = s.messages + EXCLUDED.messages,
          last_message_at = greatest(s.last_message_at, EXCLUDED.last_message_at),
          doc = s.doc || EXCLUDED.doc;
    RETURN NULL;
  END
  $$;
--> statement-breakpoint

-- Every new message rewrites its chunk, so its lexemes enter GIN's pending list, which each search
-- reads in full until it is merged: keep it small (256 kB instead of 4 MB) so a search never scans
-- megabytes of pending entries between two autovacuums; an insert that fills it merges it.
ALTER INDEX search_chunks_doc_idx SET (gin_pending_list_limit = 256);
--> statement-breakpoint

CREATE TRIGGER search_chunks_add AFTER INSERT ON messages
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION search_chunks_add();
--> statement-breakpoint

-- Backfill: the same chunks for the messages already stored.
INSERT INTO search_chunks (conversation_id, seq, workspace_id, messages, last_message_at, doc)
WITH placed AS (
  SELECT m.conversation_id, m.workspace_id, m.created_at, m.search,
         ((row_number() OVER (PARTITION BY m.conversation_id ORDER BY m.created_at, m.id) - 1) / 32)::int AS seq
  FROM messages m
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
SELECT c.conversation_id, c.seq, c.workspace_id, c.messages, c.last_at, search_doc(c.workspace_id, coalesce(d.lexemes, '{}'))
FROM chunks c LEFT JOIN docs d USING (conversation_id, seq);
