// The landlock backend's network judge, as sbx reads it: its denial lines become violations (and
// nothing else does), and the proxy variables it passes are the bwrap bridge's, exactly.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { landlockNetworkViolations } from '../../../../src/backend/landlock/status.js';
import { proxyEnv } from '../../../../src/backend/shared/proxy-env.js';
import { REPO_ROOT } from '../../../helpers/paths.js';

describe('landlockNetworkViolations', () => {
  it('reads each denial line of the status descriptor, between the pid and the exit code', () => {
    const status = [
      '{ "child-pid": 12 }',
      '{ "denied": { "call": "connect", "what": "direct connection", "address": "10.0.0.1", "port": 443 } }',
      '{ "denied": { "call": "connect", "what": "connect on an IPv6 socket", "address": "::1", "port": 80 } }',
      '{ "denied": { "call": "listen", "what": "listen: the sandbox takes no connections" } }',
      '{ "exit-code": 0 }',
      '',
    ].join('\n');
    expect(landlockNetworkViolations(status)).toEqual([
      {
        phase: 'runtime',
        kind: 'network',
        rule: 'network.direct',
        detail: "connect to 10.0.0.1:443 refused: direct connection (only sbx's proxy is reachable)",
        host: '10.0.0.1',
        port: 443,
      },
      expect.objectContaining({
        detail: expect.stringContaining('connect to [::1]:80 refused'),
        host: '::1',
        port: 80,
      }),
      expect.objectContaining({ detail: expect.stringMatching(/^listen refused: listen: /) }),
    ]);
  });

  it('counts what the judge dropped past its cap, and ignores lines of any other shape', () => {
    const status =
      '{ "child-pid": 1 }\n{ "denied": { "call": 3 } }\nnot json\n{ "denied-dropped": 7 }\n{ "exit-code": 1 }\n';
    expect(landlockNetworkViolations(status)).toEqual([
      expect.objectContaining({ rule: 'network.direct', detail: '7 more network calls refused (not listed)' }),
    ]);
  });

  it('finds nothing in a run without a judge', () => {
    expect(landlockNetworkViolations('{ "child-pid": 1 }\n{ "exit-code": 0 }\n')).toEqual([]);
  });
});

describe('proxyEnv', () => {
  it("is the bwrap bridge's list, variable for variable", () => {
    const bridge = createRequire(import.meta.url)(join(REPO_ROOT, 'src/network/host/bridge.cjs')) as {
      proxyEnv(http: number, socks: number): Record<string, string>;
    };
    expect(proxyEnv('127.0.0.1', 8080, 1080)).toEqual(bridge.proxyEnv(8080, 1080));
  });
});
