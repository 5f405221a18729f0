import type { IncomingMessage } from 'node:http'
import { BlockList, isIPv4, isIPv6 } from 'node:net'
import { trustProxy } from './config.js'

/**
 * The key a client address counts under in every limit keyed by address (API.md section 2): the
 * whole IPv4 address, or the /64 prefix of an IPv6 address, since one host or home network holds
 * a whole /64 and could otherwise take 2^64 budgets. An IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, what a dual-stack socket reports) is its IPv4 address. Anything that is
 * not an address is its own key.
 */
export function clientAddressKey(ip: string): string {
  if (isIPv4(ip)) return ip
  const bare = ip.split('%')[0] // a zone (fe80::1%eth0) names a local interface, not a host
  if (!isIPv6(bare)) return ip
  const groups = ipv6Groups(bare)
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.')
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted IPv4 split in two). */
function ipv6Groups(ip: string): number[] {
  let text = ip.toLowerCase()
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number)
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)))
  const left = parse(head)
  if (tail === undefined) return left
  const right = parse(tail)
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/**
 * The client address of a raw HTTP request (the gateway's handshake) by the rule Fastify applies
 * to the API's requests (`request.ip`, proxy-addr): the peer; with TRUST_PROXY, walking
 * X-Forwarded-For from the right while the hop that added an entry is trusted, the first address
 * no trusted proxy vouches for.
 */
export function clientAddressOf(trustProxySetting: string): (req: IncomingMessage) => string {
  const trust = trustProxy(trustProxySetting)
  const peer = (req: IncomingMessage) => req.socket.remoteAddress ?? ''
  if (trust === false) return peer
  const trusted = trust === true ? () => true : trustedList(trust)
  return (req) => {
    let address = peer(req)
    const header = req.headers['x-forwarded-for']
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .reverse()
    for (const hop of hops) {
      if (!trusted(address)) break
      address = hop
    }
    return address
  }
}

/** TRUST_PROXY's list (addresses, CIDRs, `addr/netmask`) as a membership test. */
function trustedList(list: string): (address: string) => boolean {
  const blocks = new BlockList()
  for (const entry of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [address, range] = entry.split('/')
    const type = isIPv4(address) ? 'ipv4' : 'ipv6'
    if (range === undefined) blocks.addAddress(address, type)
    else if (range.includes('.')) blocks.addSubnet(address, netmaskBits(range), type)
    else blocks.addSubnet(address, Number(range), type)
  }
  return (address) => {
    const key = clientAddressKey(address)
    if (isIPv4(key)) return blocks.check(key, 'ipv4') // IPv4-mapped peers match IPv4 entries
    return isIPv6(address.split('%')[0]) && blocks.check(address.split('%')[0], 'ipv6')
  }
}

const netmaskBits = (mask: string) =>
  mask.split('.').reduce((bits, octet) => bits + Number(octet).toString(2).replace(/0/g, '').length, 0)
