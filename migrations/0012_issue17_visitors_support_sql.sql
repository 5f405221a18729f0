-- Custom SQL migration file, put your code below! --
-- Guests stored before e-mail became optional carried '' for "no address": null now means that.
UPDATE guests SET email = NULL WHERE email = '';--> statement-breakpoint
-- The best lastSeenAt known for existing guests: their last bootstrap (updated_at).
UPDATE guests SET last_seen_at = updated_at;
