// `sbx why` over a derived Policy (policy/why.ts): each answer names the rule that decides, located at
// the profile line that wrote it (file:line:col), or sbx's default where no line did.
import { describe, expect, it } from 'vitest';
import { decideCommand } from '../../../src/commands/command-rules.js';
import { locateAnswer } from '../../../src/pipeline/sources.js';
import type { Host, PathFact } from '../../../src/policy/host.js';
import { whyCommand, whyHost, whyPath, type WhyAnswer } from '../../../src/policy/why.js';
import { parseProfile } from '../../../src/profile/parse.js';
import { derivedOnFixture } from '../../helpers/hosts.js';

const FILE = '/home/alice/.config/sbx/profiles/p.yaml';
const dir = (real: string): PathFact => ({ exists: true, real, type: 'dir', uid: 1000 });

/** The profile parsed from `yaml` (with its positions), derived on the alice fixture; `host` edits the fixture. */
function fixture(yaml: string, host: (h: Host) => void = () => {}) {
  const { profile, positions } = parseProfile(yaml, FILE);
  const derived = derivedOnFixture(profile, { host });
  const facts = { ...derived, profile };
  const locate = (a: WhyAnswer) => locateAnswer(a, { positions, flags: {} });
  return { facts, locate, policy: derived.policy };
}

/** Where `text` starts in `yaml`, 1-based, as the positions record a key or an item. */
function at(yaml: string, text: string): { line: number; col: number } {
  const before = yaml.slice(0, yaml.indexOf(text));
  const lines = before.split('\n');
  return { line: lines.length, col: lines.at(-1)!.length + 1 };
}

describe('sbx why: paths', () => {
  it('a path under a sensitive root the profile lists is hidden, by that sensitive.roots entry', () => {
    const yaml = 'sensitive:\n  roots:\n    - /home/alice/.vault\n    - /home/alice/proj/keys\n';
    const { facts, locate } = fixture(yaml, (h) => {
      h.paths['/home/alice/proj/keys'] = dir('/home/alice/proj/keys');
    });
    const a = locate(whyPath(facts, 'keys/id', '/home/alice/proj/keys/id'));
    expect(a).toMatchObject({ kind: 'path', access: 'hidden', allowed: false });
    expect(a.kind === 'path' && a.source).toEqual({
      key: 'sensitive.roots[1]',
      file: FILE,
      ...at(yaml, '/home/alice/proj/keys'),
      origin: 'profile',
    });
  });

  it("a credential store behind the private HOME: absent, and sbx's built-in sensitive root says so too", () => {
    const { facts, locate } = fixture('mode: workspace-write\n');
    const a = locate(whyPath(facts, '~/.ssh/id_rsa', '/home/alice/.ssh/id_rsa'));
    expect(a).toMatchObject({ access: 'absent', allowed: false });
    expect(a.kind === 'path' && a.source).toBeUndefined();
    expect(a.kind === 'path' && a.also).toEqual([
      expect.objectContaining({ source: { key: 'sensitive.roots', origin: 'default' } }),
    ]);
  });

  it('a path in writable_roots is writable, by that entry; the workspace by default', () => {
    const yaml = 'writable_roots:\n  - /srv/cache\n  - /srv/data\n';
    const { facts, locate } = fixture(yaml, (h) => {
      h.paths['/srv/cache'] = dir('/srv/cache');
      h.paths['/srv/data'] = dir('/srv/data');
    });
    const a = locate(whyPath(facts, '/srv/data/x', '/srv/data/x'));
    expect(a).toMatchObject({ access: 'writable', allowed: true, host: '/srv/data/x' });
    expect(a.kind === 'path' && a.source).toEqual({
      key: 'writable_roots[1]',
      file: FILE,
      ...at(yaml, '/srv/data'),
      origin: 'profile',
    });
    const ws = locate(whyPath(facts, 'src', '/home/alice/proj/src'));
    expect(ws).toMatchObject({ access: 'writable', source: { key: 'workspace', origin: 'default' } });
  });

  it('read-only mode: the workspace is readable, and the mode line decides', () => {
    const yaml = 'description: x\nmode: read-only\n';
    const { facts, locate } = fixture(yaml);
    const a = locate(whyPath(facts, 'src', '/home/alice/proj/src'));
    expect(a).toMatchObject({ access: 'readable', source: { key: 'mode', file: FILE, ...at(yaml, 'mode') } });
  });

  it("a secret-looking file: sbx's built-in globs by default, else the sensitive.files entry that matches", () => {
    const yaml = 'sensitive:\n  files:\n    - "*.token"\n    - "*.keyring"\n';
    const { facts, locate } = fixture(yaml, (h) => {
      h.sensitiveFiles.masks = [
        { path: '/home/alice/proj/.env', dir: false },
        { path: '/home/alice/proj/ci.keyring', dir: false },
      ];
    });
    const env = locate(whyPath(facts, '.env', '/home/alice/proj/.env'));
    expect(env).toMatchObject({ access: 'hidden', source: { key: 'sensitive.files', origin: 'default' } });
    const keyring = locate(whyPath(facts, 'ci.keyring', '/home/alice/proj/ci.keyring'));
    expect(keyring).toMatchObject({
      access: 'hidden',
      source: { key: 'sensitive.files[1]', file: FILE, ...at(yaml, '"*.keyring"') },
    });
  });

  it('a workspace mounted elsewhere: the host path is looked up where the command sees it', () => {
    const yaml = 'workspace:\n  mountAt: /work\n';
    const { facts, locate } = fixture(yaml);
    const a = locate(whyPath(facts, 'src/a.ts', '/home/alice/proj/src/a.ts'));
    expect(a).toMatchObject({ path: '/work/src/a.ts', host: '/home/alice/proj/src/a.ts', access: 'writable' });
    expect(a.kind === 'path' && a.source).toMatchObject({ key: 'workspace', file: FILE, ...at(yaml, 'workspace') });
  });

  it("the system directories: sbx's default; a path no mount shows is absent", () => {
    const { facts, locate } = fixture('mode: workspace-write\n');
    expect(locate(whyPath(facts, '/etc/hosts', '/etc/hosts'))).toMatchObject({
      access: 'readable',
      source: { key: 'system', origin: 'default' },
    });
    expect(locate(whyPath(facts, '/srv/elsewhere', '/srv/elsewhere'))).toMatchObject({
      access: 'absent',
      allowed: false,
    });
  });
});

describe('sbx why: hosts', () => {
  const yaml = [
    'network:',
    '  allow:',
    '    - registry.npmjs.org',
    '    - "*.github.com"',
    '  deny:',
    '    - evil.github.com',
    '  allow_private:',
    '    - 10.0.0.5:5432',
    '',
  ].join('\n');

  it('a host matched by a suffix pattern: allowed by that network.allow entry', () => {
    const { policy, locate } = fixture(yaml);
    const a = locate(whyHost(policy, 'api.github.com'));
    expect(a).toMatchObject({ kind: 'host', host: 'api.github.com', port: 443, allowed: true });
    expect(a.kind === 'host' && a.source).toEqual({
      key: 'network.allow[1]',
      file: FILE,
      ...at(yaml, '"*.github.com"'),
      origin: 'profile',
    });
  });

  it('a denied host: the network.deny entry that matched, deny winning over the allow pattern', () => {
    const { policy, locate } = fixture(yaml);
    const a = locate(whyHost(policy, 'evil.github.com:443'));
    expect(a).toMatchObject({ allowed: false, source: { key: 'network.deny[0]', file: FILE, ...at(yaml, 'evil') } });
  });

  it('a host --allow-domain let in: the flag decides, not a profile line; a profile entry still names its own', () => {
    const { profile, positions } = parseProfile(yaml, FILE);
    const { policy } = derivedOnFixture(profile, { request: { allowDomains: ['example.com'] } });
    const locate = (a: WhyAnswer) => locateAnswer(a, { positions, flags: {} });
    const flagged = locate(whyHost(policy, 'example.com', [], 1));
    expect(flagged).toMatchObject({ allowed: true, because: expect.stringContaining('matches --allow-domain') });
    expect(flagged.kind === 'host' && flagged.source).toEqual({ key: '--allow-domain', origin: 'flag' });
    const own = locate(whyHost(policy, 'registry.npmjs.org', [], 1));
    expect(own.kind === 'host' && own.source).toMatchObject({ key: 'network.allow[0]', file: FILE });
  });

  it('a destination answered "always": allowed as the user answer, for that port only; deny still wins', () => {
    const { policy, locate } = fixture(yaml);
    const remembered = [
      { host: 'example.com', port: 443 },
      { host: 'evil.github.com', port: 443 },
    ];
    const a = locate(whyHost(policy, 'example.com', remembered));
    expect(a).toMatchObject({ allowed: true, because: expect.stringContaining('you answered "always"') });
    expect(a.kind === 'host' && a.source).toBeUndefined();
    expect(locate(whyHost(policy, 'example.com:80', remembered)).allowed).toBe(false);
    expect(locate(whyHost(policy, 'evil.github.com:443', remembered))).toMatchObject({
      allowed: false,
      source: { key: 'network.deny[0]' },
    });
  });

  it('a host no pattern names: denied by the allow list; an IP literal needs allow_private too', () => {
    const { policy, locate } = fixture(yaml);
    expect(locate(whyHost(policy, 'example.com'))).toMatchObject({
      allowed: false,
      source: { key: 'network.allow', file: FILE, ...at(yaml, 'allow:') },
    });
    const net = 'network:\n  allow: ["10.0.0.5"]\n  allow_private: ["10.0.0.5:5432"]\n';
    const { policy: p2, locate: l2 } = fixture(net);
    expect(l2(whyHost(p2, '10.0.0.5:5432'))).toMatchObject({ allowed: true, source: { key: 'network.allow[0]' } });
    expect(l2(whyHost(p2, '10.0.0.5:22'))).toMatchObject({
      allowed: false,
      source: { key: 'network.allow_private', file: FILE },
    });
  });

  it('network none and host: the network line decides, or its default', () => {
    const none = fixture('description: x\n');
    expect(none.locate(whyHost(none.policy, 'example.com'))).toMatchObject({
      allowed: false,
      source: { key: 'network', origin: 'default' },
    });
    const hostNet = 'description: x\nnetwork: host\n';
    const host = fixture(hostNet);
    expect(host.locate(whyHost(host.policy, 'example.com'))).toMatchObject({
      allowed: true,
      source: { key: 'network', file: FILE, ...at(hostNet, 'network') },
    });
  });
});

describe('sbx why: commands', () => {
  const yaml = [
    'commands:',
    '  default: ask',
    '  allow:',
    '    make: {}',
    '    git:',
    '      block: ["push --force"]',
    '  deny: [rm, "@network"]',
    '',
  ].join('\n');

  function decide(argv: string[]) {
    const { policy, locate } = fixture(yaml);
    const decision = decideCommand({
      rules: policy.commands,
      command: { kind: 'argv', argv },
      mode: policy.mode,
      network: 'host',
      allowDenylisted: false,
      workspace: policy.workspace,
      base: policy.workspace.host,
      paths: {},
      withRules: true,
    });
    return locate(whyCommand(argv, decision));
  }

  it('a command denied by a rule: the deny entry (its group) at its line', () => {
    const a = decide(['curl', 'https://x.test']);
    expect(a).toMatchObject({ kind: 'command', verdict: 'deny', allowed: false });
    expect(a.kind === 'command' && a.rules[0]).toMatchObject({
      rule: 'commands.deny',
      source: { key: 'commands.deny[1]', file: FILE, ...at(yaml, '"@network"') },
    });
  });

  it('a blocked subcommand: the block entry', () => {
    const a = decide(['git', 'push', '--force']);
    expect(a.kind === 'command' && a.rules[0]?.source).toMatchObject({
      key: 'commands.allow.git.block[0]',
      file: FILE,
      ...at(yaml, '"push --force"'),
    });
  });

  it('an allowed command names its allow entry; one no rule names asks, by commands.default', () => {
    const make = decide(['make', 'test']);
    expect(make).toMatchObject({ verdict: 'allow', allowed: true });
    expect(make.kind === 'command' && make.rules).toEqual([
      expect.objectContaining({
        rule: 'commands.allow.make',
        source: expect.objectContaining({ ...at(yaml, 'make') }),
      }),
    ]);
    const ask = decide(['uname', '-a']);
    expect(ask).toMatchObject({ verdict: 'ask', allowed: false });
    expect(ask.kind === 'command' && ask.rules[0]?.source).toMatchObject({
      key: 'commands.default',
      file: FILE,
      ...at(yaml, 'default'),
    });
  });
});
