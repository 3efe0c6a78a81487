// The landlock backend's network judge: what sbx configures it with (the ports it connects, the calls it
// receives, the fix when it cannot work here), how sbx reads it back (its denial lines become violations,
// and nothing else does), and the proxy variables it passes, which are the bwrap bridge's, exactly.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { egressOf, judgeFix, landlockJudgedCalls } from '../../../../src/backend/landlock/network-judge.js';
import { judgeViolations } from '../../../../src/backend/shared/judge-status.js';
import { proxyEnv } from '../../../../src/backend/shared/proxy-env.js';
import { FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import { REPO_ROOT } from '../../../helpers/paths.js';

describe('egressOf and landlockJudgedCalls', () => {
  const allowList = { request: { allowDomains: ['example.com'] } };

  it("an allow list: the proxy's two ports, then the host ports, the capture port, and the network variables", async () => {
    const { policy } = await runPipeline('default', 'alice', {
      ...allowList,
      profile: { network: { host_ports: [5432] } },
    });
    const session = { ...FIXTURE_SESSION, egressPorts: { http: 41001, socks: 41002 } };
    const egress = egressOf(policy, session);
    expect(egress.ports).toEqual([41001, 41002, 5432]);
    // Every other TCP connect is captured into the HTTP port; glibc asks its nameserver over TCP, which is captured too.
    expect(egress.capture).toBe(41001);
    expect(egress.env).toEqual({ ...proxyEnv('127.0.0.1', 41001, 41002), RES_OPTIONS: 'use-vc' });
    expect(landlockJudgedCalls(policy)).toEqual(['connect', 'listen', 'socket']);
  });

  it('a planned session has placeholders for the proxy; host ports alone need no proxy', async () => {
    const planned = await runPipeline('default', 'alice', allowList);
    expect(egressOf(planned.policy, FIXTURE_SESSION).ports).toEqual(['<proxy-http-port>', '<proxy-socks-port>']);
    const ports = await runPipeline('default', 'alice', { profile: { network: { host_ports: [5432] } } });
    expect(egressOf(ports.policy, FIXTURE_SESSION)).toEqual({ ports: [5432], env: {} });
  });

  it('no allow-list network: nothing to connect, and no judge', async () => {
    const { policy } = await runPipeline('default', 'alice');
    expect(egressOf(policy, FIXTURE_SESSION)).toEqual({ ports: [], env: {} });
    expect(landlockJudgedCalls(policy)).toEqual([]);
  });
});

describe('judgeFix', () => {
  it("names CAP_SYS_PTRACE only where Docker's profile gated pidfd_getfd; else another network", () => {
    expect(judgeFix('pidfd_getfd: Operation not permitted')).toMatch(/^start the container with --cap-add SYS_PTRACE/);
    expect(judgeFix('seccomp user notification: Function not implemented')).toBe('use --network none or host');
  });
});

describe('judgeViolations', () => {
  it('reads each denial line of the status descriptor, between the pid and the exit code', () => {
    const status = [
      '{ "child-pid": 12 }',
      '{ "denied": { "call": "connect", "what": "direct connection", "address": "10.0.0.1", "port": 443 } }',
      '{ "denied": { "call": "connect", "what": "connect on an IPv6 socket", "address": "::1", "port": 80 } }',
      '{ "denied": { "call": "listen", "what": "listen: the sandbox takes no connections" } }',
      '{ "exit-code": 0 }',
      '',
    ].join('\n');
    expect(judgeViolations(status)).toEqual([
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
    expect(judgeViolations(status)).toEqual([
      expect.objectContaining({ rule: 'network.direct', detail: '7 more network calls refused (not listed)' }),
    ]);
  });

  it('finds nothing in a run without a judge', () => {
    expect(judgeViolations('{ "child-pid": 1 }\n{ "exit-code": 0 }\n')).toEqual([]);
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
