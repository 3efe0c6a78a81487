// The host's /etc/hosts as the capture path reads it (docs/DESIGN.md, "Transparent capture"). Pure.
// Under landlock the command resolves names with the host's own /etc/hosts and connects to the
// address it found; the proxy maps such an address back to a name only when the file gives it exactly
// one name the rules allow (network/host/capture.ts), so an address shared by several names never
// picks one of them.
import { canonicalIp, normaliseHost } from './egress.js';

/** Read at most this much of the file: a hosts file is a few KiB; a huge one is not worth holding. */
export const MAX_HOSTS_FILE_BYTES = 1024 * 1024;

/**
 * Canonical address → the names the file gives it (normal form, in file order, each once). Comments
 * (`#` to the end of the line), malformed addresses and invalid names are skipped, as getaddrinfo does.
 */
export function parseHostsFile(text: string): Map<string, string[]> {
  // Sets, not arrays: ad-blocking hosts files give 0.0.0.0 tens of thousands of names.
  const found = new Map<string, Set<string>>();
  for (const line of text.slice(0, MAX_HOSTS_FILE_BYTES).split('\n')) {
    const fields = (line.split('#')[0] as string).trim().split(/[ \t]+/);
    const address = canonicalIp(fields[0] as string);
    if (address === undefined) continue;
    const names = found.get(address) ?? new Set<string>();
    for (const field of fields.slice(1)) {
      const name = normaliseHost(field);
      if (name !== undefined && canonicalIp(name) === undefined) names.add(name);
    }
    if (names.size > 0) found.set(address, names);
  }
  return new Map([...found].map(([address, names]) => [address, [...names]]));
}
