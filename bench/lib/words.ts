import { Rng } from './rng.js'

/**
 * Message text for the seeded database: words drawn from a Zipf-like distribution (frequency
 * ~ 1/(rank + 2.7)), so a handful of words are in a large share of messages and a long tail of
 * words is rare, as in real support chats. That is what makes full-text search interesting: a
 * common word matches hundreds of thousands of rows, a rare one a few.
 *
 * The head is real support-chat vocabulary in rough frequency order; the tail is synthetic words
 * (product codes, names, typos) made from syllables.
 */
const HEAD = `
the i to you a my is and it for can on in with this we your be have me
order not that please help but are thanks do hi of at account just so
get how there what will know if up payment an was our hello would
been from need like by still when card again let now out see
refund shipping delivery invoice email password login app checkout cart
subscription plan billing price discount code coupon package tracking address
update problem issue error working work page website phone number receive received
today tomorrow yesterday week days time minutes hours soon later already
yes no ok okay sure great perfect sorry thank much very really
send sent check checked looking look sorry wait waiting back return returned
cancel cancelled change changed charge charged twice item items product size color
email customer support team agent manager ticket case reference status
could should also any some all one two three more other new old same
first last next right wrong sure fine happy issue help questions question
store online mobile android iphone browser chrome safari download install
reset link click button screen message chat reply answer call contact
confirm confirmation verify verified secure security card bank transfer paypal
free trial upgrade downgrade annual monthly renewal renew expired expire
stock available unavailable order number warehouse courier label shipped arrived
missing damaged broken replacement exchange warranty repair quality
login locked unlock blocked access permission settings profile notification notifications
export import file report data sync integration api key token webhook
`
  .split(/\s+/)
  .filter(Boolean)

const SYLLABLES = 'ka lo mi ra ve tu so ne pa di ko ru zel bran tor vik lem sa no fi gar hul pex dro qui nax bel'.split(' ')

/** A token that occurs in only a few dozen messages: the rare-word search scenario looks it up. */
export const RARE_TOKEN = 'quokkaflux'

/** A head word that appears in a couple of percent of messages: the common-word search. */
export const COMMON_WORD = 'refund'

/** One of the most frequent words (rank ~20, several percent of messages). */
export const FREQUENT_WORD = 'order'

export interface Vocabulary {
  words: string[]
  /** Cumulative probabilities, same length as words. */
  cdf: Float64Array
}

export function buildVocabulary(tailSize = 6000, seed = 7): Vocabulary {
  const rng = new Rng(seed)
  const seen = new Set<string>()
  const words: string[] = []
  for (const w of HEAD) if (!seen.has(w)) (seen.add(w), words.push(w))
  while (words.length < HEAD.length + tailSize) {
    const n = rng.int(2, 4)
    let w = ''
    for (let i = 0; i < n; i++) w += rng.pick(SYLLABLES)
    if (rng.chance(0.1)) w += rng.int(1, 99)
    if (!seen.has(w) && w !== RARE_TOKEN) (seen.add(w), words.push(w))
  }
  const weights = words.map((_, r) => 1 / (r + 2.7))
  const total = weights.reduce((a, b) => a + b, 0)
  const cdf = new Float64Array(words.length)
  let acc = 0
  for (let i = 0; i < words.length; i++) cdf[i] = acc += weights[i] / total
  cdf[words.length - 1] = 1
  return { words, cdf }
}

export function sampleWord(v: Vocabulary, rng: Rng): string {
  const x = rng.next()
  let lo = 0
  let hi = v.cdf.length - 1
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (v.cdf[mid] < x) lo = mid + 1
    else hi = mid
  }
  return v.words[lo]
}

const OPENERS_GUEST = ['Hi,', 'Hello,', 'Hey,', 'Good morning,', '', '', '', '']
const OPENERS_AGENT = ['Hi there,', 'Thanks for reaching out,', 'Sure,', 'Sorry about that,', '', '', '']

/** One message body: 4..24 words, sentence-cased, with an opener sometimes. */
export function messageBody(v: Vocabulary, rng: Rng, guest: boolean, extra?: string): string {
  const n = 4 + Math.floor(rng.next() * rng.next() * 21)
  const parts: string[] = []
  const opener = rng.pick(guest ? OPENERS_GUEST : OPENERS_AGENT)
  if (opener) parts.push(opener)
  for (let i = 0; i < n; i++) parts.push(sampleWord(v, rng))
  if (extra) parts.splice(1 + Math.floor(rng.next() * (parts.length - 1)), 0, extra)
  let s = parts.join(' ')
  s = s.charAt(0).toUpperCase() + s.slice(1)
  return s + (rng.chance(0.3) ? '?' : '.')
}

export const FIRST_NAMES = `Olivia Liam Emma Noah Amelia Oliver Ava Elijah Sophia Lucas Mia Levi Isabella Mateo
Charlotte Ethan Harper James Luna Asher Evelyn Leo Gianna Aiden Ella Jack Aria Benjamin Sofia Henry
Camila Sebastian Chloe Daniel Scarlett Hudson Layla Samuel Nora Jacob Lily Grace Michael Zoe Wyatt
Hana Yuki Ravi Priya Aisha Omar Fatima Mohammed Chen Wei Mei Lars Ingrid Sven Freya Diego Lucia Pablo
Marta Jonas Lea Felix Anna Emil Klara Tomas Eva Andrei Ioana Kofi Ama Tunde Zainab Kenji Sakura`
  .split(/\s+/)
  .filter(Boolean)

export const LAST_NAMES = `Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez Lopez
Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris Sanchez
Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores Green
Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Muller Schmidt Schneider Fischer Weber
Meyer Wagner Becker Schulz Hoffmann Rossi Russo Ferrari Esposito Bianchi Romano Colombo Tanaka Suzuki
Sato Watanabe Kim Park Choi Singh Kumar Sharma Patel Okafor Mensah Silva Santos Oliveira Costa`
  .split(/\s+/)
  .filter(Boolean)

export const MAIL_DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'proton.me', 'icloud.com', 'example.com', 'acme.io']
