// The resolver a sandbox with its own network namespace sees under transparent capture (docs/DESIGN.md
// "Transparent capture"): /etc/resolv.conf names an address in sbx's pool, over TCP only, and /etc/hosts
// keeps only the loopback names, so every other name is asked of sbx (whose proxy answers it through
// the network judge's capture). Pure. The nameserver is the pool's resolver address (address-pool.ts):
// the judge captures a TCP connect to any address off `lo` and the proxy serves DNS on every captured
// port 53, so the address only has to be off `lo` and never a name's.
import { RESOLVER_ADDRESS } from './address-pool.js';

/**
 * `options use-vc`: glibc (res_send) and Go's resolver then send every query over TCP, which the judge
 * captures; a UDP query would find no route (the namespace has only `lo`).
 */
export function resolvConfContent(): string {
  return `# sbx: names are answered by sbx's egress proxy (transparent capture), over TCP\nnameserver ${RESOLVER_ADDRESS}\noptions use-vc\n`;
}

/** Only the loopback names and the sandbox's own hostname: every other name goes to sbx's DNS. */
export function hostsContent(hostname: string): string {
  return `127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n127.0.1.1 ${hostname}\n`;
}

/** glibc reads RES_OPTIONS over resolv.conf's options: the landlock backend's command uses the host's /etc. */
export const RES_OPTIONS_USE_VC = { RES_OPTIONS: 'use-vc' } as const;
