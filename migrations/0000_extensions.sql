-- Trigram matching for guest name / e-mail search, and btree_gin so the message search index
-- can lead with workspace_id.
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS btree_gin;
