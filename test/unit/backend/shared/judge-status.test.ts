// The network judge's status read back (src/backend/shared/judge-status.ts): captured connects and UDP.
// Its other lines are covered with the landlock judge (test/unit/backend/landlock/network-judge.test.ts).
import { describe, expect, it } from 'vitest';
import { judgeViolations } from '../../../../src/backend/shared/judge-status.js';

describe('judgeViolations', () => {
  it('a captured connect the proxy did not take is reported without the proxy-only suffix; UDP says TCP', () => {
    const status = [
      '{ "denied": { "call": "connect", "what": "sbx\'s proxy did not answer the captured connection", "address": "10.0.0.1", "port": 443, "captured": true } }',
      '{ "denied": { "call": "socket", "what": "UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP" } }',
      '',
    ].join('\n');
    expect(judgeViolations(status).map((v) => v.detail)).toEqual([
      "connect to 10.0.0.1:443 refused: sbx's proxy did not answer the captured connection",
      'socket refused: UDP (DNS, QUIC) is not carried: clients fall back to TCP; sbx answers DNS over TCP',
    ]);
  });
});
