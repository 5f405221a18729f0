CREATE TABLE "metric_events" (
	"workspace_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"seq" integer NOT NULL,
	"channel_id" uuid NOT NULL,
	"agent_id" text,
	"value" double precision,
	"occurred_at" timestamp(6) with time zone NOT NULL,
	CONSTRAINT "metric_events_conversation_id_kind_seq_pk" PRIMARY KEY("conversation_id","kind","seq")
);
--> statement-breakpoint
CREATE TABLE "metric_rollups" (
	"workspace_id" uuid NOT NULL,
	"dim" smallint NOT NULL,
	"grain" text NOT NULL,
	"period_start" timestamp(6) with time zone NOT NULL,
	"channel_id" uuid NOT NULL,
	"agent_id" text NOT NULL,
	"kind" text NOT NULL,
	"bucket" smallint NOT NULL,
	"slot" smallint NOT NULL,
	"n" bigint DEFAULT 0 NOT NULL,
	"total" double precision DEFAULT 0 NOT NULL,
	CONSTRAINT "metric_rollups_workspace_id_dim_grain_period_start_channel_id_agent_id_kind_bucket_slot_pk" PRIMARY KEY("workspace_id","dim","grain","period_start","channel_id","agent_id","kind","bucket","slot")
);
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "cycle" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "cycle_started_at" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "awaiting_reply" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "last_public_sender" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "public_messages" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "metric_events" ADD CONSTRAINT "metric_events_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "metric_events_ws_kind_time_idx" ON "metric_events" USING btree ("workspace_id","kind","occurred_at","channel_id","agent_id","value");--> statement-breakpoint
CREATE INDEX "conv_open_live_idx" ON "conversations" USING btree ("workspace_id","channel_id","assigned_agent_id","awaiting_reply","last_public_sender") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_created_idx" ON "conversations" USING btree ("workspace_id","created_at","id") WHERE "conversations"."deleted_at" IS NULL;