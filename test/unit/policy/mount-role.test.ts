// A mount's `role` (policy/types.ts MountRole) is what backends, exporters and the path guards act on;
// its `reason` is text for people. So rewording every reason of a policy changes nothing any of them
// produces, while changing the roles they read does (the control); and no file of src/backend or
// src/export compares a reason, or imports from policy/derive/ (read from the sources): what they
// need is in the Policy or in a public module.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileBwrap, expandArgsFd } from '../../../src/backend/bwrap/compile.js';
import { describeLandlockGaps, landlockExposed } from '../../../src/backend/landlock/assessment.js';
import { compileLandlock, expandLandlockLaunch } from '../../../src/backend/landlock/compile.js';
import { compileNsjail, expandNsjailLaunch } from '../../../src/backend/nsjail/compile.js';
import { rootsOf } from '../../../src/commands/path-guards.js';
import { SbxError } from '../../../src/errors.js';
import { exportDocker } from '../../../src/export/docker.js';
import { exportK8s } from '../../../src/export/k8s.js';
import { exportOci } from '../../../src/export/oci.js';
import type { Host } from '../../../src/policy/host.js';
import type { Mount, MountRole, Policy } from '../../../src/policy/types.js';
import {
  builtinProfileNames,
  FIXTURE_BWRAP,
  FIXTURE_SESSION,
  hostFixtureNames,
  runPipeline,
} from '../../helpers/hosts.js';
import { SRC_DIR } from '../../helpers/paths.js';
import { fixtureNsjailHost } from '../backend/nsjail/nsjail-fixtures.js';
import { WITH_CREDENTIALS } from '../../helpers/credentials.js';

const BRIDGE = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs', judge: '/opt/sbx/dist/sbx-landlock' };

interface Sample {
  name: string;
  policy: Policy;
  host: Host;
}

/**
 * Every built-in profile on every fixture host, and what those leave out: the landlock backend run
 * over the workspace's git state (guards), an allow-list (the bridge), the caller's binds, ssh_agent.
 */
async function samples(): Promise<Sample[]> {
  const out: Sample[] = [];
  for (const profile of builtinProfileNames())
    for (const host of hostFixtureNames()) {
      const p = await runPipeline(profile, host);
      out.push({ name: `${profile} × ${host}`, policy: p.policy, host: p.host });
    }
  const more: [string, Parameters<typeof runPipeline>[2]][] = [
    ['exposed workspace secrets', { request: { exposeWorkspaceSecrets: true } }],
    ['an allow-list', { request: { allowDomains: ['example.com'] }, mutateHost: (h) => (h.bridge = BRIDGE) }],
    [
      '--ro-bind and --bind',
      {
        request: {
          binds: [
            { source: '/home/alice/proj/vendor', access: 'ro' },
            { source: '/home/alice/proj/out', access: 'rw' },
          ],
        },
        mutateHost: (h) => {
          for (const path of ['/home/alice/proj/vendor', '/home/alice/proj/out'])
            h.paths[path] = { exists: true, real: path, type: 'dir', uid: 1000 };
        },
      },
    ],
    ['ssh_agent', { profile: { ssh_agent: { keys: ['me@laptop'] } } }],
    ['credentials', WITH_CREDENTIALS],
  ];
  for (const [name, options] of more) {
    const p = await runPipeline('default', 'alice', options);
    out.push({ name: `default × alice, ${name}`, policy: p.policy, host: p.host });
  }
  return out;
}

/** What a refusal says that is not a mount's reason: its code and its fix. */
function attempt(produce: () => unknown): unknown {
  try {
    return produce();
  } catch (e) {
    if (e instanceof SbxError) return `refused ${e.code}: ${e.hint ?? ''}`;
    throw e;
  }
}

/** Everything each consumer of mounts produces for this policy, as one comparable text. */
function produced(policy: Policy, host: Host): string {
  const uid = host.uid;
  const landlockHost = {
    path: '/usr/lib/sbx/sbx-landlock',
    stdinIsTty: false,
    arch: 'x86_64' as const,
    uid,
    gid: host.gid,
  };
  const options = { dir: '/var/lib/sbx-export/b', arch: 'x86_64' as const };
  const k8s = {
    ...{ name: 'sbx-test', image: 'sbx-host:latest', workspaceClaim: 'ws', secretName: 'secrets', job: false },
    ...{
      seccomp: 'localhost' as const,
      localhostProfile: 'sbx/t.json',
      proxyImage: 'sbx-host:latest',
      proxyPort: 3128,
    },
    ...options,
  };
  return JSON.stringify({
    bwrap: attempt(() => expandArgsFd(compileBwrap(policy, FIXTURE_SESSION, FIXTURE_BWRAP))),
    nsjail: attempt(() => expandNsjailLaunch(compileNsjail(policy, FIXTURE_SESSION, fixtureNsjailHost(uid)))),
    landlock: attempt(() => expandLandlockLaunch(compileLandlock(policy, FIXTURE_SESSION, landlockHost))),
    // Which features it refuses or approximates (their messages may quote a reason).
    landlockGaps: describeLandlockGaps(policy).map((line) => line.split(':')[0]),
    landlockExposed: landlockExposed(policy),
    docker: attempt(() => exportDocker(policy, { ...options, image: 'sbx-host:latest' })),
    oci: attempt(() => exportOci(policy, { ...options, hostUid: uid, hostGid: host.gid })),
    k8s: attempt(() => exportK8s(policy, k8s)),
    pathGuards: rootsOf(policy.mounts),
  });
}

function withMounts(policy: Policy, change: (m: Mount, i: number) => Mount): Policy {
  return { ...policy, mounts: policy.mounts.map(change) };
}

/** The roles of the union in policy/types.ts, read from its source, and whether each has its one-line comment. */
function declaredRoles(): { role: string; documented: boolean }[] {
  const source = readFileSync(join(SRC_DIR, 'policy/types.ts'), 'utf8');
  const union = source.slice(source.indexOf('export type MountRole ='), source.indexOf('export type Mount ='));
  const lines = union.split('\n');
  return lines.flatMap((line, i) => {
    const role = /^\s*\| '([\w-]+)'/.exec(line)?.[1];
    return role === undefined ? [] : [{ role, documented: /^\s*\/\*\*.*\*\/$/.test(lines[i - 1] ?? '') }];
  });
}

describe('Mount.role', async () => {
  const all = await samples();

  it('every mount has a role of the union; every role is in use and documented on its own line', () => {
    const declared = declaredRoles();
    expect(declared.length).toBeGreaterThan(5);
    for (const { role, documented } of declared) expect(documented, `${role}: its one-line comment`).toBe(true);
    const names = declared.map((d) => d.role);
    const used = new Set(all.flatMap((s) => s.policy.mounts.map((m) => m.role)));
    for (const s of all)
      for (const m of s.policy.mounts) expect(names, `${s.name}: ${m.kind} ${m.target}`).toContain(m.role);
    expect([...used].sort()).toEqual([...names].sort());
  });

  it.each(all)('$name: rewording every reason changes nothing a backend, exporter or guard produces', (s) => {
    const before = produced(s.policy, s.host);
    const reasons = s.policy.mounts.map((m) => m.reason);
    // Text no code could know, then each mount given another's reason (a system bind called a git hook's).
    const reworded = withMounts(s.policy, (m, i) => ({ ...m, reason: `reworded ${i}` }));
    const swapped = withMounts(s.policy, (m, i) => ({ ...m, reason: reasons[(i + 1) % reasons.length]! }));
    expect(produced(reworded, s.host)).toBe(before);
    expect(produced(swapped, s.host)).toBe(before);
  });

  // The control: the comparison above sees a change in what the consumers act on.
  const acted: MountRole[] = ['system', 'toolchain', 'bridge', 'capture', 'guard', 'git-config', 'user-ro'];
  it.each(acted)('changing the role %s changes what some consumer produces', (role) => {
    const changed = all.filter((s) => {
      if (!s.policy.mounts.some((m) => m.role === role)) return false;
      const relabelled = withMounts(s.policy, (m) => (m.role === role ? { ...m, role: 'workspace' } : m));
      return produced(relabelled, s.host) !== produced(s.policy, s.host);
    });
    expect(changed.map((s) => s.name)).not.toEqual([]);
  });
});

/** Lines of `source` that compare a reason or look one up: what backends and exporters must not do. */
function reasonComparisons(source: string): string[] {
  const ref = String.raw`[\w$.?!\]\[]*\breason\b`;
  const patterns = [
    // m.reason === X, X !== m.reason, m.reason.startsWith(X), ...
    /\breason\b\s*(?:[!=]==?|\.\s*(?:startsWith|endsWith|includes|match|search|localeCompare)\b|\s+in\s)/,
    new RegExp(String.raw`[!=]==?\s*${ref}(?!\s*[.(\w])`),
    // SET.has(m.reason), /x/.test(m.reason), TABLE[m.reason], switch (m.reason)
    new RegExp(String.raw`\.(?:has|includes|test|indexOf|get|find|exec)\(\s*${ref}\s*\)`),
    new RegExp(String.raw`\[\s*${ref}\s*\]`),
    new RegExp(String.raw`switch\s*\(\s*${ref}\s*\)`),
  ];
  return source.split('\n').filter((line) => patterns.some((p) => p.test(line)));
}

describe('src/backend and src/export', () => {
  const files = ['backend', 'export'].flatMap((dir) =>
    readdirSync(join(SRC_DIR, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `${dir}/${f}`),
  );

  it('reads its sources (control)', () => {
    expect(files).toEqual(
      expect.arrayContaining(['backend/landlock/nested-grants.ts', 'export/docker.ts', 'export/k8s.ts']),
    );
  });

  it.each(files)('%s compares no mount reason: it branches on role and kind', (file) => {
    expect(reasonComparisons(readFileSync(join(SRC_DIR, file), 'utf8'))).toEqual([]);
  });

  it.each(files)('%s imports nothing from policy/derive/', (file) => {
    const source = readFileSync(join(SRC_DIR, file), 'utf8');
    expect(source.match(/['"][^'"\n]*\/policy\/derive\/[^'"\n]*['"]/g) ?? []).toEqual([]);
  });

  it('the check finds the comparisons it forbids and passes a reason shown to people (control)', () => {
    const forbidden = [
      'if (m.reason === SYSTEM_BIND_REASON) {',
      "      if (m.reason !== SYSTEM_BIND_REASON) gaps.add('mounts.symlink', 'refused', `a link at ${m.target}`);",
      "mounts.flatMap((m) => (m.kind === 'bind' && GUARDED_BINDS.has(m.reason) ? [m.source] : [])),",
      'if (rw && m.reason === GIT_CONFIG_VIEW_REASON && !inside(g, state)) {',
      "return (m.kind === 'bind' && m.reason.startsWith(TOOLCHAIN_REASON_PREFIX)) || x;",
      'if (GIT_HOOKS_REASON === m.reason) {',
      'const role = ROLE_OF[m.reason];',
      'switch (m.reason) {',
      'if (/^toolchain/.test(mount.reason)) return;',
      'const { reason } = m; if (reason === OWN_POLICY_REASON) return;',
    ];
    for (const line of forbidden) expect(reasonComparisons(line), line).toEqual([line]);
    const shown = [
      '`${m.target} (${m.reason}) would be replaced by a generated file: Landlock cannot put one over a host path`,',
      'g.exposed.push({ path: m.target, what: m.reason });',
      "{ key: 'mounts.reason', effect: 'equivalent', detail: 'for `sbx explain` only' },",
      "if (m.role === 'system') {",
    ];
    for (const line of shown) expect(reasonComparisons(line), line).toEqual([]);
  });
});
