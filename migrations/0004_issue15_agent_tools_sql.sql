-- Canned responses, what drizzle cannot express (issue 15).
-- Shortcuts are [a-z0-9_-]: byte order ("C") makes a prefix an index range whatever the
-- database's collation, for the picker's first group and the list's order.
ALTER TABLE "canned_responses" ALTER COLUMN "shortcut" TYPE text COLLATE "C";--> statement-breakpoint
-- serves: the picker's substring matches of 3+ characters (pg_trgm; btree_gin lets the tenant
-- filter ride in the same index, as messages_search_idx does).
CREATE INDEX "canned_shortcut_trgm_idx" ON "canned_responses" USING gin ("workspace_id", "shortcut" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "canned_title_trgm_idx" ON "canned_responses" USING gin ("workspace_id", "title" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "canned_body_trgm_idx" ON "canned_responses" USING gin ("workspace_id", "body" gin_trgm_ops);
