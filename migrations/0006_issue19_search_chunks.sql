CREATE TABLE "search_chunks" (
	"conversation_id" uuid NOT NULL,
	"seq" integer NOT NULL,
	"workspace_id" uuid NOT NULL,
	"messages" integer NOT NULL,
	"last_message_at" timestamp(6) with time zone NOT NULL,
	"doc" "tsvector" NOT NULL,
	CONSTRAINT "search_chunks_conversation_id_seq_pk" PRIMARY KEY("conversation_id","seq")
);
--> statement-breakpoint
DROP INDEX "messages_search_idx";--> statement-breakpoint
ALTER TABLE "search_chunks" ADD CONSTRAINT "search_chunks_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "search_chunks_doc_idx" ON "search_chunks" USING gin ("doc");--> statement-breakpoint
CREATE INDEX "search_chunks_recent_idx" ON "search_chunks" USING btree ("workspace_id","last_message_at","conversation_id","seq");