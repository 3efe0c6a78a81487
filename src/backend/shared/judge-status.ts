// What the network judge's status says (native/sbx-landlock-net.c report()): its denials, one JSON line
// each, as violations. Pure. Under landlock they come on sbx-landlock's status descriptor, beyond the
// command's pid and exit code; under bwrap on a descriptor of their own (backend/shared/bridge.ts). The
// lines come from the monitor, which the command never controls (it holds neither the descriptor nor
// the monitor's memory), and carry only the judge's own phrases and the numbers it formatted; each is
// still parsed as data, never trusted for more than its fields' shapes.
import { UDP_NOT_CARRIED } from '../../network/net-counters.js';
import type { Violation } from '../../policy/violation.js';

/** The rule of a connection that did not go through sbx's proxy (its key: the profile's `network`). */
export const DIRECT_RULE = 'network.direct';

interface Denial {
  call: string;
  what: string;
  address?: string;
  port?: number;
  /** A captured connect that sbx's proxy did not take (the proxy reports its own refusals itself). */
  captured: boolean;
}

function denialOf(line: string): Denial | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  const d = (parsed as { denied?: unknown } | null)?.denied as Record<string, unknown> | undefined;
  if (typeof d !== 'object' || d === null || typeof d.call !== 'string' || typeof d.what !== 'string') return undefined;
  const where =
    typeof d.address === 'string' && Number.isInteger(d.port) ? { address: d.address, port: d.port as number } : {};
  return { call: d.call, what: d.what, ...where, captured: d.captured === true };
}

/** The judge's denials in the order it made them, and one for those it counted but did not write. */
export function judgeViolations(statusText: string): Violation[] {
  const violations: Violation[] = [];
  for (const line of statusText.split('\n')) {
    const d = denialOf(line);
    if (!d) continue;
    const to = d.address === undefined ? '' : ` to ${d.address.includes(':') ? `[${d.address}]` : d.address}:${d.port}`;
    violations.push({
      phase: 'runtime',
      kind: 'network',
      rule: DIRECT_RULE,
      detail: `${d.call}${to} refused: ${d.what}${d.captured || d.what === UDP_NOT_CARRIED ? '' : " (only sbx's proxy is reachable)"}`,
      ...(d.address === undefined ? {} : { host: d.address, port: d.port! }),
    });
  }
  const dropped = /"denied-dropped"\s*:\s*(\d+)/.exec(statusText);
  if (dropped) {
    const detail = `${dropped[1]} more network calls refused (not listed)`;
    violations.push({ phase: 'runtime', kind: 'network', rule: DIRECT_RULE, detail });
  }
  return violations;
}
