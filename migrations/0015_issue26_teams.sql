CREATE TABLE "queue_exits" (
	"workspace_id" uuid NOT NULL,
	"team_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"wait_seconds" double precision NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "team_members" (
	"team_id" uuid NOT NULL,
	"workspace_id" uuid NOT NULL,
	"user_id" text NOT NULL,
	"capacity" integer,
	"last_assigned_at" timestamp(6) with time zone,
	"joined_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "team_members_team_id_user_id_pk" PRIMARY KEY("team_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "teams" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"assignment" text DEFAULT 'manual' NOT NULL,
	"capacity" integer,
	"private" boolean DEFAULT false NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "assignment_history" ADD COLUMN "reason" text;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "default_team_id" uuid;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "team_id" uuid;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "queued_at" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "queue_exits" ADD CONSTRAINT "queue_exits_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "queue_exits" ADD CONSTRAINT "queue_exits_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "teams" ADD CONSTRAINT "teams_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "queue_exits_team_idx" ON "queue_exits" USING btree ("team_id","created_at");--> statement-breakpoint
CREATE INDEX "team_members_user_idx" ON "team_members" USING btree ("workspace_id","user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "teams_name_uq" ON "teams" USING btree ("workspace_id",lower("name"));--> statement-breakpoint
ALTER TABLE "channels" ADD CONSTRAINT "channels_default_team_id_teams_id_fk" FOREIGN KEY ("default_team_id") REFERENCES "public"."teams"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_team_id_teams_id_fk" FOREIGN KEY ("team_id") REFERENCES "public"."teams"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conv_team_queue_idx" ON "conversations" USING btree ("team_id","queued_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."queued_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "conv_team_idx" ON "conversations" USING btree ("team_id") WHERE "conversations"."team_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "conv_open_team_last_msg_idx" ON "conversations" USING btree ("workspace_id","team_id","pinned","last_message_at","id") WHERE "conversations"."deleted_at" IS NULL AND "conversations"."status" = 'OPEN';