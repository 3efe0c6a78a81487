// Where the proxy meets a credential out of place: the refusal it records (a `credential` violation
// naming the variable and the destination, never the value) and the stream that watches a body for
// one on its way through. network/credential-scan.ts decides; this records and stops.
import { Transform } from 'node:stream';
import type { Violation } from '../../policy/violation.js';
import { bodyScanner, type Carried, type LiveCredential, type Tracer } from '../credential-scan.js';
import { hostsKey, isListedFor } from '../credentials.js';
import type { ProxyContext, Via } from './proxy-context.js';

/** The rule a finding breaks: the credential sent to a host not listed for it, or to a listed one without TLS. */
function ruleOf(
  carried: Carried,
  host: string,
  port: number,
  plaintext: boolean,
): 'credential.host' | 'credential.plaintext' {
  return plaintext && isListedFor(carried.credential, host, port) ? 'credential.plaintext' : 'credential.host';
}

/** Records the refusal of a request to `host:port` that carried a credential in `where` (`the path`, `a header`, ...). */
export function refuseCarried(
  ctx: ProxyContext,
  via: Via,
  target: { host: string; port: number; plaintext: boolean },
  carried: Carried,
  where: string,
): Violation {
  const { credential: c, what } = carried;
  const { host, port, plaintext } = target;
  const rule = ruleOf(carried, host, port, plaintext);
  const subject = what === 'placeholder' ? `${c.name}'s placeholder` : `the value of ${c.name}`;
  const detail =
    rule === 'credential.plaintext'
      ? `${subject} in ${where} of a plain-HTTP request to ${host}:${port}: it is sent only over HTTPS`
      : `${subject} in ${where} of a request to ${host}:${port}: it is sent only to ${c.hosts.map((h) => h.text).join(', ')}`;
  return ctx.refuseCredential(via, host, port, rule, detail, hostsKey(c.name));
}

/** What is out of place in a request to `host:port`: every credential over plain HTTP, else those not listed there. */
export function outOfPlace(host: string, port: number, plaintext: boolean): (c: LiveCredential) => boolean {
  return (c) => plaintext || !isListedFor(c, host, port);
}

/**
 * A body passed on chunk by chunk, each searched first (with the bytes before it a trace could
 * straddle); a chunk that completes a trace is never passed on: `found` is told and the stream fails.
 */
export function scanningStream(
  tracer: Tracer,
  accept: (c: LiveCredential) => boolean,
  found: (carried: Carried) => void,
): Transform {
  const scan = bodyScanner(tracer, accept);
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const carried = scan(chunk);
      if (!carried) return callback(null, chunk);
      found(carried);
      callback(new Error('a credential out of place'));
    },
  });
}
