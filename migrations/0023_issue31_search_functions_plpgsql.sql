-- Hand-written (issue 31, docs/search.md "Planning the candidate statements"): the functions a
-- candidate statement folds at plan time, in PL/pgSQL, same bodies and results.
--
-- Each candidate statement is unprepared so that the planner sees the search's tsquery as a
-- constant: it evaluates search_query(ws, q), search_query_in(...), search_period(...) and
-- search_period_start(...) while planning, for bound values. As LANGUAGE sql functions with
-- constant arguments they are executed, not inlined, and a SQL function parses and plans its body
-- on every such call (its plan lives only as long as the call site's FmgrInfo), nested ones
-- (search_tag inside search_query) again: 0.17 ms of folding in a period statement's 0.46 ms of
-- planning at 1M. PL/pgSQL keeps a function's compiled body and its expressions' plans for the
-- session, so the same folds take ~0.03 ms. search_tag stays SQL: inside these bodies its call is
-- inlined once, in the cached plan. The two query functions share their body (search_query_tagged).
CREATE OR REPLACE FUNCTION search_period(at timestamptz) RETURNS int
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ BEGIN RETURN floor(extract(epoch FROM at) / 2592000)::int; END $$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION search_period_start(period int) RETURNS timestamptz
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ BEGIN RETURN to_timestamp(period::float8 * 2592000); END $$;
--> statement-breakpoint

-- The tsquery of a search text with every lexeme prefixed by `tag:` (the tag alone for a text of
-- negations only), NULL when the text has no lexeme: search_query's and search_query_in's body.
CREATE FUNCTION search_query_tagged(q text, tag text) RETURNS tsquery
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
  DECLARE t tsquery := websearch_to_tsquery('simple', q);
  BEGIN
    RETURN CASE
      WHEN numnode(t) = 0 THEN NULL
      WHEN querytree(t) = 'T' THEN quote_literal(tag)::tsquery
      ELSE regexp_replace(regexp_replace(querytree(t), '<[0-9]*->|<[0-9]+>', '&', 'g'),
                          '''((?:[^'']|'''')*)''', '''' || tag || ':\1''', 'g')::tsquery
    END;
  END $$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION search_query(ws uuid, q text) RETURNS tsquery
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ BEGIN RETURN search_query_tagged(q, search_tag(ws)); END $$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION search_query_in(ws uuid, q text, period int) RETURNS tsquery
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ BEGIN RETURN search_query_tagged(q, search_tag(ws) || '/' || period); END $$;
