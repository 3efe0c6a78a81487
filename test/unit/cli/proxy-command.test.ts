// `sbx proxy`'s pure parts: --listen, which addresses need --allow-remote, the rules it serves (and
// those it refuses to serve), and the log line, which names host and port only.
import { describe, expect, it } from 'vitest';
import { formatLogLine, isLoopbackListen, logRecordOf, parseListen } from '../../../src/cli/proxy-command.js';
import { SbxError } from '../../../src/errors.js';
import { proxyRuleArgs, proxyRulesOf } from '../../../src/network/proxy-rules.js';

const NO_FLAGS = { allowDomains: [], denyDomains: [], allowPrivate: [] };

describe('--listen', () => {
  it('takes an IP literal and a port, v6 in brackets', () => {
    expect(parseListen('127.0.0.1:3128')).toEqual({ host: '127.0.0.1', port: 3128 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen('0.0.0.0:8080')).toEqual({ host: '0.0.0.0', port: 8080 });
  });

  it.each(['localhost:3128', '127.1:3128', '3128', '127.0.0.1', '127.0.0.1:65536', '::1:3128', '[::1]'])(
    'refuses %s (a name, a non-canonical address, no port)',
    (text) => {
      expect(() => parseListen(text)).toThrow(SbxError);
    },
  );

  it('needs --allow-remote for anything but loopback', () => {
    expect(['127.0.0.1', '127.0.0.2', '::1'].map(isLoopbackListen)).toEqual([true, true, true]);
    expect(['0.0.0.0', '::', '10.0.0.1', '::ffff:127.0.0.1'].map(isLoopbackListen)).toEqual([
      false,
      false,
      false,
      true,
    ]);
  });
});

describe('the rules served', () => {
  it("are the profile's lists with the flags after them, compiled as sbx run compiles them", () => {
    const rules = proxyRulesOf({ allow: ['a.test'], deny: ['b.a.test'], allow_private: ['10.0.0.5'] }, 'p', {
      allowDomains: ['*.c.test:443'],
      denyDomains: ['d.c.test'],
      allowPrivate: ['10.0.0.6:5432'],
    });
    expect(rules.allow.map((p) => p.text)).toEqual(['a.test', '*.c.test:443']);
    expect(rules.deny.map((p) => p.text)).toEqual(['b.a.test', 'd.c.test']);
    expect(rules.allowPrivate.map((p) => p.text)).toEqual(['10.0.0.5', '10.0.0.6:5432']);
    const args = proxyRuleArgs(rules);
    const again = proxyRulesOf(undefined, undefined, {
      allowDomains: args.filter((_, i) => args[i - 1] === '--allow-domain'),
      denyDomains: args.filter((_, i) => args[i - 1] === '--deny-domain'),
      allowPrivate: args.filter((_, i) => args[i - 1] === '--allow-private'),
    });
    expect(again).toEqual(rules);
  });

  it('turn network: none into an allow-list with --allow-domain, as sbx run does', () => {
    expect(proxyRulesOf('none', 'default', { ...NO_FLAGS, allowDomains: ['x.test'] }).allow).toHaveLength(1);
  });

  it.each([
    ['none', 'default'],
    ['host', 'network'],
    [{ deny: ['x.test'] }, 'p'],
    [undefined, undefined],
  ] as const)('are refused when nothing is allowed or everything is: %j', (network, name) => {
    const refusal = (() => {
      try {
        proxyRulesOf(network, name, NO_FLAGS);
      } catch (e) {
        return e as SbxError;
      }
    })();
    expect(refusal?.code).toBe('PROXY_NO_ALLOW_LIST');
    expect(refusal?.exitCode).toBe(2);
  });

  it('refuse a malformed pattern from a flag as the profile would (PROFILE_INVALID)', () => {
    expect(() => proxyRulesOf(undefined, undefined, { ...NO_FLAGS, allowDomains: ['a.*.test'] })).toThrow(
      /network\.allow/,
    );
  });
});

describe('the log', () => {
  const refused = logRecordOf({
    kind: 'refused',
    via: 'connect',
    violation: {
      phase: 'runtime',
      kind: 'network',
      rule: 'network.allow',
      detail: 'x.test:443 is not in network.allow',
      host: 'x.test',
      port: 443,
    },
  });

  it('is one JSON object a line with --json-log, time first', () => {
    const line = formatLogLine(refused, true, new Date('2026-01-02T03:04:05Z'));
    expect(line.endsWith('\n') && line.split('\n')).toHaveLength(2);
    expect(JSON.parse(line)).toEqual({
      time: '2026-01-02T03:04:05.000Z',
      event: 'refused',
      via: 'connect',
      host: 'x.test',
      port: 443,
      rule: 'network.allow',
      detail: 'x.test:443 is not in network.allow',
    });
  });

  it('is key=value text otherwise, strings quoted so a host cannot forge a field', () => {
    expect(formatLogLine(refused, false, new Date())).toBe(
      'sbx proxy: refused via="connect" host="x.test" port=443 rule="network.allow" detail="x.test:443 is not in network.allow"\n',
    );
  });
});
