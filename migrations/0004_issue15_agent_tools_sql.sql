-- Canned responses, what drizzle cannot express (issue 15).
-- Shortcuts are [a-z0-9_-]: byte order ("C") makes a prefix an index range whatever the
-- database's collation, for the picker's first group and the list's order.
ALTER TABLE "canned_responses" ALTER COLUMN "shortcut" TYPE text COLLATE "C";--> statement-breakpoint
-- serves: the picker's rare substring matches of 3+ characters (pg_trgm). Trigrams only, without
-- workspace_id: a (workspace_id, ... gin_trgm_ops) index also matches the tenant filter alone, and
-- the planner then reads every row of the workspace through it for a 1-2 character query instead
-- of walking canned_usage_idx in the page's order. A frequent substring is served by that walk.
CREATE INDEX "canned_shortcut_trgm_idx" ON "canned_responses" USING gin ("shortcut" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "canned_haystack_trgm_idx" ON "canned_responses" USING gin ("haystack" gin_trgm_ops);
