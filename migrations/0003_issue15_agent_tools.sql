CREATE TABLE "canned_responses" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"owner_id" text NOT NULL,
	"shortcut" text NOT NULL,
	"title" text DEFAULT '' NOT NULL,
	"body" text NOT NULL,
	"channel_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"usage_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"haystack" text GENERATED ALWAYS AS (lower(title || chr(10) || body)) STORED
);
--> statement-breakpoint
CREATE TABLE "mention_counters" (
	"workspace_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"unread" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "mention_counters_workspace_id_user_id_pk" PRIMARY KEY("workspace_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "mentions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"conversation_id" uuid NOT NULL,
	"message_id" uuid NOT NULL,
	"by_user_id" text NOT NULL,
	"by_name" text NOT NULL,
	"excerpt" text NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"read_at" timestamp(6) with time zone,
	"mailed_at" timestamp(6) with time zone
);
--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "private" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "canned_responses" ADD CONSTRAINT "canned_responses_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mention_counters" ADD CONSTRAINT "mention_counters_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mentions" ADD CONSTRAINT "mentions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mentions" ADD CONSTRAINT "mentions_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mentions" ADD CONSTRAINT "mentions_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "canned_workspace_shortcut_uq" ON "canned_responses" USING btree ("workspace_id","shortcut") WHERE "canned_responses"."scope" = 'workspace';--> statement-breakpoint
CREATE UNIQUE INDEX "canned_personal_shortcut_uq" ON "canned_responses" USING btree ("workspace_id","owner_id","shortcut") WHERE "canned_responses"."scope" = 'personal';--> statement-breakpoint
CREATE INDEX "canned_list_idx" ON "canned_responses" USING btree ("workspace_id","shortcut","id");--> statement-breakpoint
CREATE INDEX "canned_usage_idx" ON "canned_responses" USING btree ("workspace_id","usage_count" DESC NULLS LAST,"created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "mentions_member_idx" ON "mentions" USING btree ("workspace_id","user_id","created_at","id");--> statement-breakpoint
CREATE INDEX "mentions_member_unread_idx" ON "mentions" USING btree ("workspace_id","user_id","created_at","id") WHERE "mentions"."read_at" IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "mentions_message_user_uq" ON "mentions" USING btree ("message_id","user_id");--> statement-breakpoint
CREATE INDEX "mentions_conversation_idx" ON "mentions" USING btree ("conversation_id");