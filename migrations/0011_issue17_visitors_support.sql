CREATE TABLE "csat_ratings" (
	"conversation_id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"channel_id" uuid NOT NULL,
	"guest_id" uuid NOT NULL,
	"rating" smallint NOT NULL,
	"comment" text,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "csat_rating_range" CHECK ("csat_ratings"."rating" BETWEEN 1 AND 5)
);
--> statement-breakpoint
ALTER TABLE "guests" ALTER COLUMN "email" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "widget" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "guests" ADD COLUMN "attributes" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "guests" ADD COLUMN "last_seen_at" timestamp(6) with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "csat_ratings" ADD CONSTRAINT "csat_ratings_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "csat_workspace_updated_idx" ON "csat_ratings" USING btree ("workspace_id","updated_at");--> statement-breakpoint
CREATE INDEX "guests_workspace_seen_idx" ON "guests" USING btree ("workspace_id","last_seen_at","id");--> statement-breakpoint
CREATE INDEX "guests_channel_seen_idx" ON "guests" USING btree ("channel_id","last_seen_at","id");