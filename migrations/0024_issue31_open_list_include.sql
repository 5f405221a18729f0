-- Hand-written (issue 31, docs/lists.md "Labels from the index"): the open list's index carries
-- the three columns a filtered walk of it tests or returns (label_ids, team_id, priority_rank), so
-- `?labelIds=` reads its keys with an index-only scan instead of a heap page per skipped row.
-- Same name, key and predicate (drizzle's schema cannot say INCLUDE; the key is what it checks).
-- Built under a new name first: the build holds a SHARE lock (writes wait, reads go on); the
-- drop and the rename that need ACCESS EXCLUSIVE come after it and take no time.
CREATE INDEX "conv_open_last_msg_incl_idx" ON "conversations" USING btree ("workspace_id","pinned","last_message_at","id") INCLUDE ("label_ids","team_id","priority_rank") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';
--> statement-breakpoint
DROP INDEX "conv_open_last_msg_idx";
--> statement-breakpoint
ALTER INDEX "conv_open_last_msg_incl_idx" RENAME TO "conv_open_last_msg_idx";
