// `builtin:NAME` names sbx's own profile whatever a project defines; a project profile shadowing a
// built-in is refused in CI without a trust hint (the hostile-PR layout); `sbx trust` measures what a
// profile widens against the built-in it shadows or extends.
import { describe, expect, it } from 'vitest';
import { loadProfile, type ProfileSearch } from '../../../src/profile/host/load.js';
import { widenings } from '../../../src/profile/widen.js';
import { BUILTIN_PROFILES_DIR } from '../../helpers/paths.js';
import { rejection } from '../../helpers/errors.js';
import { makeTempDir, writeTree } from '../../helpers/tmp.js';
import { join } from 'node:path';

const HOSTILE = 'extends: default\nnetwork: host\nseccomp: off\nsensitive:\n  except: ["**"]\n';

function hostilePr(ci: boolean): ProfileSearch {
  const root = makeTempDir();
  writeTree(root, { 'pr/.sbx/profiles/untrusted.yaml': HOSTILE, 'pr/src/.keep': '' });
  return {
    cwd: join(root, 'pr/src'),
    configHome: join(root, 'config'),
    builtinDir: BUILTIN_PROFILES_DIR,
    trust: { storeFile: join(root, 'state/trust.json'), hashes: [], ci },
  };
}

describe('builtin:NAME', () => {
  it('resolves to the built-in, never the project file of the same name', async () => {
    const resolved = await loadProfile('builtin:untrusted', hostilePr(true), 'test');
    expect(resolved.location).toEqual({
      name: 'untrusted',
      file: join(BUILTIN_PROFILES_DIR, 'untrusted.yaml'),
      source: 'builtin',
    });
    expect(resolved.trust).toEqual({ kind: 'builtin' });
    expect(resolved.profile.network).toBe('none');
  });

  it('an unknown built-in is PROFILE_NOT_FOUND with a suggestion; a path is not a built-in name', async () => {
    const error = await rejection(loadProfile('builtin:untrustd', hostilePr(false), 'test'));
    expect(error.code).toBe('PROFILE_NOT_FOUND');
    expect(error.message).toContain('did you mean "builtin:untrusted"');
    expect((await rejection(loadProfile('builtin:../untrusted', hostilePr(false), 'test'))).code).toBe(
      'PROFILE_NOT_FOUND',
    );
  });
});

describe('a project profile shadowing a built-in', () => {
  it('in CI: refused, no chain hash and no trust command, the hint names builtin:NAME', async () => {
    const error = await rejection(loadProfile('untrusted', hostilePr(true), 'test'));
    expect(error.code).toBe('PROFILE_UNTRUSTED');
    expect(error.hint).toBe("run sbx's own profile with -p builtin:untrusted");
    expect(`${error.message} ${error.hint}`).not.toMatch(/[0-9a-f]{64}|trust-profile|sbx trust/);
  });

  it('outside CI: the trust hint, and builtin:NAME beside it (control)', async () => {
    const error = await rejection(loadProfile('untrusted', hostilePr(false), 'test'));
    expect(error.hint).toMatch(/--trust-profile [0-9a-f]{64}/);
    expect(error.hint).toMatch(/-p builtin:untrusted$/);
  });
});

describe('widenings', () => {
  it('names each widening of the hostile profile over the built-in it shadows', async () => {
    const search = hostilePr(false);
    const profile = (await loadProfile('untrusted', search, 'test', { review: true })).profile;
    const builtin = (await loadProfile('builtin:untrusted', search, 'test')).profile;
    const lines = widenings(profile, builtin);
    expect(lines).toContain('network: host (shares the host network; nothing is filtered)');
    expect(lines).toContain('seccomp: off (the built-in has strict): no syscall filter');
    expect(lines).toContain('sensitive files shown (sensitive.except): **');
    expect(lines.some((l) => l.startsWith('limits lifted: memory (built-in 2GiB)'))).toBe(true);
  });

  it('names what the command rules stop doing: approvals, path guards, reading shell strings, deny entries, allowed commands', () => {
    const agent = {
      commands: {
        default: 'ask',
        allow: { ls: {}, git: { allow: ['status'], block: ['push --force'] } },
        deny: ['@shells', '@network'],
        paths: 'workspace',
        shell_syntax: 'restricted',
      },
    } as const;
    expect(widenings({ commands: { default: 'allow', paths: 'any' } } as never, agent as never)).toEqual([
      'commands.default: allow (the built-in has ask): commands no rule names run without approval',
      'path guards off (commands.paths: any): arguments may name any path the sandbox shows',
      'shell strings not read (commands.shell_syntax: full): the commands of a --shell string are not judged',
      'commands.deny no longer refuses: @shells @network',
    ]);
    expect(
      widenings(
        {
          commands: {
            ...agent.commands,
            allow: { ls: {}, make: {}, git: { allow: ['status', 'push'] } },
            deny: ['@network'],
          },
        } as never,
        agent as never,
      ),
    ).toEqual([
      'commands.deny no longer refuses: @shells',
      'commands allowed without approval: make',
      'git subcommands allowed: push',
      'git no longer blocks: push --force',
    ]);
    // The same rules, or narrower ones: nothing (control).
    expect(widenings(agent as never, agent as never)).toEqual([]);
    expect(widenings({ commands: { ...agent.commands, default: 'deny' } } as never, agent as never)).toEqual([]);
  });

  it('names nothing for a profile that only narrows (control)', () => {
    const base = { network: { allow: ['a.test', 'b.test'] }, writable_roots: ['/w'] } as const;
    expect(widenings({ network: { allow: ['a.test'] }, seccomp: { preset: 'strict' } }, base)).toEqual([]);
    expect(
      widenings(
        { network: { allow: ['a.test', 'c.test'], allow_private: ['10.0.0.5'] }, writable_roots: ['/w', '/x'] },
        base,
      ),
    ).toEqual(['network allow list: c.test', 'private addresses the proxy may dial: 10.0.0.5', 'writable roots: /x']);
    expect(
      widenings(
        { mode: 'danger', secrets: [{ name: 'TOKEN' }] as never, network: { unix_sockets: ['/run/pg.sock'] } },
        {},
      ),
    ).toEqual([
      'mode: danger (the host filesystem, writable; needs --danger at run time)',
      'host unix sockets bound in: /run/pg.sock',
      'secrets injected: TOKEN',
    ]);
  });

  it('names each credential: where its value goes and where sbx reads it; a private CA', () => {
    const credentials = {
      GH: { from: { command: ['gh', 'auth', 'token'] }, hosts: ['api.github.com'] },
      NPM: { from: { env: 'NPM_TOKEN' }, hosts: ['registry.npmjs.org'] },
    };
    expect(
      widenings(
        { network: { allow: ['api.github.com'], extra_ca_certs: ['/etc/corp-ca.pem'] }, credentials },
        { network: { allow: ['api.github.com'] }, credentials: { NPM: credentials.NPM } },
      ),
    ).toEqual([
      'credential GH (from the host command gh auth token) sent to api.github.com',
      'private CAs the proxy trusts for credential hosts: /etc/corp-ca.pem',
    ]);
  });
});
