CREATE TABLE "attachments" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"message_id" uuid,
	"uploader_type" text NOT NULL,
	"uploader_id" text NOT NULL,
	"filename" text NOT NULL,
	"content_type" text NOT NULL,
	"size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"width" integer,
	"height" integer,
	"storage_key" text NOT NULL,
	"thumb_key" text,
	"private" boolean DEFAULT false NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL,
	"attached_at" timestamp(6) with time zone,
	"purge_at" timestamp(6) with time zone
);
--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "attachments" ADD CONSTRAINT "attachments_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "attachments_files_idx" ON "attachments" USING btree ("conversation_id","attached_at","id") WHERE "attachments"."message_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "attachments_message_idx" ON "attachments" USING btree ("message_id") WHERE "attachments"."message_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "attachments_pending_idx" ON "attachments" USING btree ("created_at") WHERE "attachments"."message_id" IS NULL;--> statement-breakpoint
CREATE INDEX "attachments_purge_idx" ON "attachments" USING btree ("purge_at") WHERE "attachments"."purge_at" IS NOT NULL;