CREATE TABLE "conversation_status_log" (
	"conversation_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"at" timestamp(6) with time zone NOT NULL,
	"status" text NOT NULL,
	CONSTRAINT "conversation_status_log_conversation_id_at_status_pk" PRIMARY KEY("conversation_id","at","status")
);
--> statement-breakpoint
CREATE TABLE "sla_breaches" (
	"conversation_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"target" text NOT NULL,
	"cycle" integer NOT NULL,
	"policy_id" uuid NOT NULL,
	"due_at" timestamp(6) with time zone NOT NULL,
	"breached_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "sla_breaches_conversation_id_policy_id_target_cycle_pk" PRIMARY KEY("conversation_id","policy_id","target","cycle")
);
--> statement-breakpoint
CREATE TABLE "sla_policies" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" text NOT NULL,
	"first_response_minutes" integer,
	"next_response_minutes" integer,
	"resolution_minutes" integer,
	"business_hours" jsonb,
	"channel_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"team_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL,
	"priorities" text[] DEFAULT '{}'::text[] NOT NULL,
	"position" integer NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sla_targets" (
	"conversation_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"target" text NOT NULL,
	"cycle" integer NOT NULL,
	"policy_id" uuid NOT NULL,
	"started_at" timestamp(6) with time zone NOT NULL,
	"due_at" timestamp(6) with time zone,
	"breached" boolean DEFAULT false NOT NULL,
	CONSTRAINT "sla_targets_conversation_id_target_cycle_pk" PRIMARY KEY("conversation_id","target","cycle")
);
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "sla_policy_id" uuid;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "sla_manual" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "sla_due_at" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "conversation_status_log" ADD CONSTRAINT "conversation_status_log_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sla_breaches" ADD CONSTRAINT "sla_breaches_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sla_policies" ADD CONSTRAINT "sla_policies_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sla_targets" ADD CONSTRAINT "sla_targets_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sla_policies_workspace_idx" ON "sla_policies" USING btree ("workspace_id","position","created_at","id");--> statement-breakpoint
CREATE INDEX "sla_targets_due_idx" ON "sla_targets" USING btree ("due_at") WHERE "sla_targets"."due_at" IS NOT NULL AND NOT "sla_targets"."breached";--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_sla_policy_id_sla_policies_id_fk" FOREIGN KEY ("sla_policy_id") REFERENCES "public"."sla_policies"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conv_open_sla_due_idx" ON "conversations" USING btree ("workspace_id","pinned",COALESCE("sla_due_at", 'infinity'::timestamptz),"id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_sla_policy_idx" ON "conversations" USING btree ("sla_policy_id") WHERE "conversations"."sla_policy_id" IS NOT NULL;