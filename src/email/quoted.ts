import EmailReplyParser from 'email-reply-parser'

/**
 * Outlook's reply header (`From: ... / Sent: ...`, or `Date:`), optionally under its rule of
 * underscores, with or without bold markers from an HTML conversion. email-reply-parser only
 * knows it when the From line carries an address in brackets, and takes the rule for a signature.
 */
const OUTLOOK_HEADER = /^[ \t]*(?:_{8,}[ \t]*\r?\n[ \t]*)?\*?(?:From|Von|De|Van|Da)\*?:\*?[ \t].+\r?\n[ \t]*\*?(?:Sent|Date|Gesendet|Envoyé|Verzonden|Inviato|Enviado)\*?:\*?[ \t]/im

/**
 * The newest text of a reply: the quoted history below it removed (API.md section 19), the rest
 * kept as written, signatures included. email-reply-parser splits the text into fragments
 * (quoted, signature, hidden) and recognises the quote headers of the common clients in ten
 * languages ("On ... wrote:", "> " lines, "-----Original Message-----"); the cut is at the first
 * fragment from which everything is quoted or hidden, so an answer written between quoted lines
 * (inline replies) keeps its quotes for context, and a signature above the history stays. Outlook's
 * `From:/Sent:` block is cut first by our own rule (OUTLOOK_HEADER). A mail that is nothing but
 * quotes (a bare forward) keeps its whole text rather than becoming empty.
 */
export function stripQuoted(text: string): string {
  const normalised = text.replace(/\r\n/g, '\n')
  const outlook = OUTLOOK_HEADER.exec(normalised)
  const head = outlook ? normalised.slice(0, outlook.index) : normalised
  const fragments = new EmailReplyParser().read(head).getFragments()
  let cut = fragments.length
  for (let i = fragments.length - 1; i >= 0; i--) {
    const f = fragments[i]!
    if (f.isQuoted() || (f.isHidden() && !f.isSignature()) || f.getContent().trim() === '') cut = i
    else break
  }
  // Only a quoted block ends the text: trailing signature-only fragments are kept (they are the
  // writer's own words), but blank hidden ones are dropped with the history.
  const kept = fragments
    .slice(0, cut)
    .map((f) => f.getContent())
    .join('\n')
    .trim()
  return kept.length > 0 ? kept : normalised.trim()
}
