CREATE TABLE "labels" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" text NOT NULL,
	"color" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "views" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"scope" text NOT NULL,
	"owner_id" text NOT NULL,
	"name" text NOT NULL,
	"filters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"sort_by" text NOT NULL,
	"sort_order" text NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "label_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "priority" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "priority_rank" smallint GENERATED ALWAYS AS (CASE priority WHEN 'urgent' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 0 END) STORED NOT NULL;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "snoozed_until" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "labels" ADD CONSTRAINT "labels_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "views" ADD CONSTRAINT "views_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "labels_workspace_name_uq" ON "labels" USING btree ("workspace_id",lower("name"));--> statement-breakpoint
CREATE INDEX "views_workspace_idx" ON "views" USING btree ("workspace_id","scope","owner_id","created_at","id");--> statement-breakpoint
CREATE INDEX "conv_status_last_msg_idx" ON "conversations" USING btree ("workspace_id","status","pinned","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_active_last_msg_idx" ON "conversations" USING btree ("workspace_id","pinned","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" IN ('OPEN', 'PENDING', 'SNOOZED');--> statement-breakpoint
CREATE INDEX "conv_open_priority_idx" ON "conversations" USING btree ("workspace_id","pinned","priority_rank","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';--> statement-breakpoint
CREATE INDEX "conv_labels_idx" ON "conversations" USING gin ("label_ids") WHERE "conversations"."deleted_at" IS NULL;--> statement-breakpoint
CREATE INDEX "conv_snoozed_until_idx" ON "conversations" USING btree ("snoozed_until") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'SNOOZED' AND "conversations"."snoozed_until" IS NOT NULL;