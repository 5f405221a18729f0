CREATE TABLE "assignment_history" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"action" text NOT NULL,
	"agent_id" text,
	"previous_agent_id" text,
	"by_user_id" text,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "channels" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text DEFAULT 'web' NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"allowed_origins" text[] DEFAULT '{}'::text[] NOT NULL,
	"require_channel_token" boolean DEFAULT false NOT NULL,
	"channel_token" text NOT NULL,
	"identity_secret" text NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"channel_id" uuid NOT NULL,
	"guest_id" uuid NOT NULL,
	"status" text DEFAULT 'OPEN' NOT NULL,
	"pinned" boolean DEFAULT false NOT NULL,
	"assigned_agent_id" text,
	"unread_count" integer DEFAULT 0 NOT NULL,
	"agent_last_seen_at" timestamp(6) with time zone,
	"visitor_last_seen_at" timestamp(6) with time zone,
	"last_message_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"last_message_preview" text,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp(6) with time zone,
	"deleted_at" timestamp(6) with time zone
);
--> statement-breakpoint
CREATE TABLE "guests" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"channel_id" uuid NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"verified" boolean DEFAULT false NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "members" (
	"workspace_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"name" text NOT NULL,
	"email" text DEFAULT '' NOT NULL,
	"role" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"avatar_url" text,
	"joined_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "members_workspace_id_user_id_pk" PRIMARY KEY("workspace_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"sender_type" text NOT NULL,
	"sender_id" text,
	"sender_name" text NOT NULL,
	"body" text NOT NULL,
	"client_message_id" text,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"search" "tsvector" GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED
);
--> statement-breakpoint
CREATE TABLE "payments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"kind" text NOT NULL,
	"amount" bigint NOT NULL,
	"currency" text NOT NULL,
	"provider_object_id" text NOT NULL,
	"event_id" text NOT NULL,
	"occurred_at" timestamp(6) with time zone NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"status" text DEFAULT 'none' NOT NULL,
	"provider" text,
	"plan" text,
	"provider_subscription_id" text,
	"current_period_end" timestamp(6) with time zone,
	"last_event_at" timestamp(6) with time zone,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "transcript_requests" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"email" text NOT NULL,
	"requested_by" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"sent_at" timestamp(6) with time zone
);
--> statement-breakpoint
CREATE TABLE "unread_counters" (
	"workspace_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"slot" smallint NOT NULL,
	"conversations" integer DEFAULT 0 NOT NULL,
	"messages" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "unread_counters_workspace_id_scope_slot_pk" PRIMARY KEY("workspace_id","scope","slot")
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"provider" text NOT NULL,
	"event_id" text NOT NULL,
	"type" text NOT NULL,
	"workspace_id" uuid,
	"outcome" text NOT NULL,
	"occurred_at" timestamp(6) with time zone,
	"received_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"payload" jsonb NOT NULL,
	CONSTRAINT "webhook_events_provider_event_id_pk" PRIMARY KEY("provider","event_id")
);
--> statement-breakpoint
CREATE TABLE "workspaces" (
	"id" uuid PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "assignment_history" ADD CONSTRAINT "assignment_history_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "channels" ADD CONSTRAINT "channels_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_guest_id_guests_id_fk" FOREIGN KEY ("guest_id") REFERENCES "public"."guests"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "guests" ADD CONSTRAINT "guests_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "guests" ADD CONSTRAINT "guests_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "members" ADD CONSTRAINT "members_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payments" ADD CONSTRAINT "payments_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "transcript_requests" ADD CONSTRAINT "transcript_requests_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "assignment_history_conv_idx" ON "assignment_history" USING btree ("conversation_id","created_at","id");--> statement-breakpoint
CREATE INDEX "channels_workspace_idx" ON "channels" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "channels_token_uq" ON "channels" USING btree ("channel_token");--> statement-breakpoint
CREATE INDEX "conv_open_last_msg_idx" ON "conversations" USING btree ("workspace_id","pinned","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_open_created_idx" ON "conversations" USING btree ("workspace_id","pinned","created_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_open_updated_idx" ON "conversations" USING btree ("workspace_id","pinned","updated_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_mine_last_msg_idx" ON "conversations" USING btree ("workspace_id","assigned_agent_id","pinned","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_mine_created_idx" ON "conversations" USING btree ("workspace_id","assigned_agent_id","pinned","created_at","id") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_mine_updated_idx" ON "conversations" USING btree ("workspace_id","assigned_agent_id","pinned","updated_at","id") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_closed_closed_idx" ON "conversations" USING btree ("workspace_id","closed_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" IN ('RESOLVED', 'CLOSED');--> statement-breakpoint
CREATE INDEX "conv_closed_last_msg_idx" ON "conversations" USING btree ("workspace_id","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" IN ('RESOLVED', 'CLOSED');--> statement-breakpoint
CREATE INDEX "conv_guest_idx" ON "conversations" USING btree ("guest_id","created_at","id") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_open_unread_idx" ON "conversations" USING btree ("workspace_id","assigned_agent_id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE UNIQUE INDEX "guests_verified_email_uq" ON "guests" USING btree ("channel_id",lower("email")) WHERE "guests"."verified";--> statement-breakpoint
CREATE INDEX "guests_name_trgm_idx" ON "guests" USING gin ("name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "guests_email_trgm_idx" ON "guests" USING gin ("email" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "members_user_idx" ON "members" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("conversation_id","created_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_client_id_uq" ON "messages" USING btree ("conversation_id","sender_type","client_message_id") WHERE "messages"."client_message_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_search_idx" ON "messages" USING gin ("workspace_id","search");--> statement-breakpoint
CREATE UNIQUE INDEX "payments_object_uq" ON "payments" USING btree ("provider","kind","provider_object_id");--> statement-breakpoint
CREATE INDEX "payments_workspace_idx" ON "payments" USING btree ("workspace_id","occurred_at","id");--> statement-breakpoint
CREATE INDEX "transcript_requests_conv_idx" ON "transcript_requests" USING btree ("conversation_id","created_at");