// The addresses sbx's DNS answers inside the sandbox (docs/DESIGN.md, "Transparent capture"). Pure.
//
// An allowed name gets one address of 198.18.0.0/15 (RFC 2544's benchmarking range: never a real
// destination, so a connect to one is always a connect to a name sbx answered); a captured connect to
// that address is then a connect to the name, decided and dialled by the proxy as a CONNECT to
// name:port would be. The mapping lives as long as one proxy (one run): addresses are handed out in
// order, one per name, and never reused, so an address names at most one name for the whole run.
import { canonicalIp } from './egress.js';

/** The resolver's own address: the `nameserver` of the sandbox's resolv.conf. Never given to a name. */
export const RESOLVER_ADDRESS = '198.18.0.1';

/** 198.18.0.0/15 as a 32-bit number and its size; .0.0 (the network) and .0.1 (the resolver) are kept back. */
const POOL_BASE = 198 * 2 ** 24 + 18 * 2 ** 16; // not `198 << 24`: JS shifts are signed 32-bit
const POOL_SPAN = 1 << 17;
const FIRST_OFFSET = 2;

/** Names one run may resolve; past it DNS answers SERVFAIL (a looping client must not exhaust memory). */
export const DEFAULT_POOL_LIMIT = 65_000;

export interface AddressPool {
  /** The name's address, handed out on first use; undefined once the pool is full. `name` is in normal form. */
  assign(name: string): string | undefined;
  /** The name an address was handed to, or undefined. Takes IPv4 text or its IPv4-mapped IPv6 form. */
  nameOf(address: string): string | undefined;
  /** Whether the address lies in 198.18.0.0/15 at all (handed out or not). */
  contains(address: string): boolean;
  readonly size: number;
}

/** The address as a 32-bit number when it is IPv4 (or IPv4-mapped IPv6) text, else undefined. */
function ipv4Number(address: string): number | undefined {
  const canonical = canonicalIp(address);
  if (canonical === undefined) return undefined;
  const v4 = canonical.startsWith('::ffff:') ? canonical.slice('::ffff:'.length) : canonical;
  const parts = v4.split('.');
  if (parts.length !== 4) return undefined;
  return parts.reduce((n, p) => n * 256 + Number(p), 0);
}

function addressText(n: number): string {
  return [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff].join('.');
}

export function createAddressPool(limit = DEFAULT_POOL_LIMIT): AddressPool {
  const bounded = Math.max(0, Math.min(limit, POOL_SPAN - FIRST_OFFSET));
  const byName = new Map<string, number>();
  const names: string[] = [];
  const offsetOf = (address: string): number | undefined => {
    const n = ipv4Number(address);
    if (n === undefined) return undefined;
    const offset = n - POOL_BASE;
    return offset >= 0 && offset < POOL_SPAN ? offset : undefined;
  };
  return {
    assign(name) {
      let index = byName.get(name);
      if (index === undefined) {
        if (names.length >= bounded) return undefined;
        index = names.length;
        names.push(name);
        byName.set(name, index);
      }
      return addressText(POOL_BASE + FIRST_OFFSET + index);
    },
    nameOf(address) {
      const offset = offsetOf(address);
      return offset === undefined || offset < FIRST_OFFSET ? undefined : names[offset - FIRST_OFFSET];
    },
    contains: (address) => offsetOf(address) !== undefined,
    get size() {
      return names.length;
    },
  };
}
