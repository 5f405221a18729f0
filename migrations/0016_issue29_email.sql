CREATE TABLE "message_emails" (
	"message_id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"channel_id" uuid NOT NULL,
	"conversation_id" uuid NOT NULL,
	"direction" text NOT NULL,
	"message_id_header" text NOT NULL,
	"in_reply_to" text,
	"references" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email" jsonb;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email_imap_password" text;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email_smtp_password" text;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email_state" text;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email_error" text;--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "email_last_sync_at" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "subject" text;--> statement-breakpoint
ALTER TABLE "conversations" ADD COLUMN "email_ref" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "delivery_status" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "delivery_error" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "delivery_at" timestamp(6) with time zone;--> statement-breakpoint
ALTER TABLE "message_emails" ADD CONSTRAINT "message_emails_message_id_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."messages"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_emails" ADD CONSTRAINT "message_emails_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "message_emails" ADD CONSTRAINT "message_emails_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "message_emails_header_uq" ON "message_emails" USING btree ("channel_id","message_id_header");--> statement-breakpoint
CREATE INDEX "message_emails_conversation_idx" ON "message_emails" USING btree ("conversation_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "conv_email_ref_uq" ON "conversations" USING btree ("channel_id","email_ref") WHERE "conversations"."email_ref" IS NOT NULL;