CREATE TABLE "email_mailboxes" (
	"channel_id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"holder" text,
	"lease_expires_at" timestamp(6) with time zone,
	"uid_validity" bigint,
	"last_uid" bigint,
	"updated_at" timestamp(6) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "email_mailboxes" ADD CONSTRAINT "email_mailboxes_channel_id_channels_id_fk" FOREIGN KEY ("channel_id") REFERENCES "public"."channels"("id") ON DELETE cascade ON UPDATE no action;