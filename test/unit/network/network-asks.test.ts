// What may become a question at the proxy, and what an `always` adds to the rules
// (src/network/network-asks.ts): exactly one host and port, under the deny list.
import { describe, expect, it } from 'vitest';
import { compileEgressRules, decideHost } from '../../../src/network/egress.js';
import { approvedPattern, isAskable, withApproved } from '../../../src/network/network-asks.js';

describe('network-asks: what may be asked, and what always adds', () => {
  const rules = compileEgressRules({ allow: ['allowed.test'], deny: ['*.denied.test'], allowPrivate: [] });

  it('only a name no allow entry matched is askable: never a deny hit or a malformed destination', () => {
    expect(isAskable(decideHost(rules, 'other.test', 443))).toBe(true);
    expect(isAskable(decideHost(rules, 'x.denied.test', 443))).toBe(false);
    expect(isAskable(decideHost(rules, 'bad name', 443))).toBe(false);
    expect(isAskable(decideHost(rules, 'allowed.test', 443))).toBe(false);
  });

  it('an always is exactly its host and port; the deny list still wins over it', () => {
    const widened = withApproved(rules, [
      { host: 'other.test', port: 443 },
      { host: 'x.denied.test', port: 443 },
      { host: '::1', port: 8080 },
    ]);
    expect(decideHost(widened, 'other.test', 443)).toEqual({ allowed: true, key: 'network.allow[1]' }); // the always, after the profile's entry
    expect(decideHost(widened, 'other.test', 80).allowed).toBe(false);
    expect(decideHost(widened, 'sub.other.test', 443).allowed).toBe(false);
    expect(decideHost(widened, 'x.denied.test', 443)).toMatchObject({ allowed: false, rule: 'network.deny' });
    expect(approvedPattern({ host: '::1', port: 8080 }).text).toBe('[::1]:8080');
    expect(withApproved(rules, [])).toBe(rules);
  });
});
