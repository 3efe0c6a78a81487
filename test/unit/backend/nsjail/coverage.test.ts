// Every field of the Policy IR is either mapped by compileNsjail or listed in NSJAIL_GAPS, so a new
// IR field cannot be forgotten by this backend. "Mapped" is observed, not declared: changing the
// field changes what compileNsjail produces (argv, environment, descriptor data) or makes it refuse.
// The field lists come from the real Policy objects of every built-in profile (plus a filtered
// network and all limits) and from the IR's source text (every Mount kind, every Limits key, every
// Policy key), so optional fields absent from the samples are still seen.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileNsjail } from '../../../../src/backend/nsjail/compile.js';
import { NSJAIL_GAPS } from '../../../../src/backend/nsjail/gaps.js';
import type { Mount, Policy } from '../../../../src/policy/types.js';
import { builtinProfileNames, FIXTURE_SESSION, runPipeline } from '../../../helpers/hosts.js';
import { SRC_DIR } from '../../../helpers/paths.js';
import { fixtureNsjailHost } from './nsjail-fixtures.js';
import { WITH_CREDENTIALS } from '../../../helpers/credentials.js';

const MIB = 1024 * 1024;
const BRIDGE = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };

/** Field names of `interface NAME { ... }` (top level only) in a source file. */
function interfaceKeys(file: string, name: string): string[] {
  const source = readFileSync(join(SRC_DIR, file), 'utf8');
  const start = source.indexOf(`export interface ${name} {`);
  if (start < 0) throw new Error(`interface ${name} not found in ${file}`);
  const keys: string[] = [];
  let depth = 0;
  for (const line of source.slice(start).split('\n').slice(1)) {
    if (depth === 0 && /^\}/.test(line)) break;
    const m = /^\s{2}(\w+)\??:/.exec(line);
    if (depth === 0 && m) keys.push(m[1]!);
    depth += (line.match(/[{(]/g) ?? []).length - (line.match(/[})]/g) ?? []).length;
  }
  return keys;
}

/** The `kind` literals of the Mount union in policy/types.ts. */
function mountKinds(): string[] {
  const source = readFileSync(join(SRC_DIR, 'policy/types.ts'), 'utf8');
  const union = source.slice(source.indexOf('export type Mount ='), source.indexOf('export type MountKind'));
  return [...union.matchAll(/kind: '([\w-]+)'/g)].map((m) => m[1]!);
}

async function samplePolicies(): Promise<Policy[]> {
  const out: Policy[] = [];
  for (const profile of builtinProfileNames())
    for (const host of ['alice', 'root']) out.push((await runPipeline(profile, host)).policy);
  const limits = {
    memory: '1GiB',
    pids: 64,
    cpus: 1,
    timeout: '10s',
    cpu_time: '5s',
    file_size: '8MiB',
    nofile: 128,
    address_space: '8GiB',
  };
  out.push(
    (
      await runPipeline('default', 'alice', {
        request: { command: ['curl', 'x'], allowDomains: ['example.com'], limits },
        mutateHost: (h) => (h.bridge = BRIDGE),
        profile: { limits: { required: ['memory'] } },
      })
    ).policy,
    (await runPipeline('agent', 'alice', { request: { command: [], shell: 'ls src | wc -l' } })).policy,
    (await runPipeline('default', 'alice', { profile: { ssh_agent: { keys: ['me@laptop'] } } })).policy,
    (await runPipeline('default', 'alice', WITH_CREDENTIALS)).policy,

    // Toolchains in HOME, one of them left out (toolchainsSkipped).
    (await runPipeline('default', 'carol')).policy,
    // The landlock backend's opt-in, set by the caller (never a profile key).
    (await runPipeline('default', 'alice', { request: { command: ['true'], exposeWorkspaceSecrets: true } })).policy,
  );
  return out;
}

/**
 * Leaf paths: nested objects are walked; arrays, maps (env.vars, commands.allow), the network bridge and
 * the egress rules (the proxy's input, taken whole) are leaves; mounts by kind.
 */
function leafPaths(value: unknown, prefix: string): string[] {
  if (prefix === 'mounts')
    return (value as Mount[]).flatMap((m) =>
      Object.keys(m)
        .filter((k) => k !== 'kind')
        .map((k) => `mounts.${m.kind}.${k}`),
    );
  if (
    Array.isArray(value) ||
    value === null ||
    typeof value !== 'object' ||
    ['env.vars', 'network.bridge', 'network.capture', 'network.rules', 'commands.allow', 'credentials.rules'].includes(
      prefix,
    )
  )
    return [prefix];
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
}

function covers(feature: string, path: string): boolean {
  const f = feature.split('.');
  const p = path.split('.');
  return f.length <= p.length && f.every((seg, i) => seg === '*' || seg === p[i]);
}

/** A gap of a field every mount kind has (`mounts.reason`, `mounts.role`) covers it under each kind. */
function gapFor(path: string) {
  const field = /^mounts\.[\w-]+\.(reason|role)$/.exec(path)?.[1];
  return NSJAIL_GAPS.find((g) => covers(g.key, path) || (field !== undefined && g.key === `mounts.${field}`));
}

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** A changed value of the same type (kept valid where the compiler checks validity). */
function mutate(path: string, value: unknown): unknown {
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number')
    return path.endsWith('fileSizeBytes') || path.endsWith('sizeBytes') || path.endsWith('memoryBytes')
      ? value + MIB
      : value + 1;
  if (typeof value === 'string')
    return value.startsWith('/') ? `${value}/x` : value === 'ro' ? 'rw' : value === 'rw' ? 'ro' : `${value}x`;
  if (Array.isArray(value)) return value.length > 0 ? value.slice(1) : ['cpu-time'];
  if (value && typeof value === 'object') return path === 'env.vars' ? { ...value, SBX_COVERAGE_EXTRA: 'x' } : null;
  return 'x';
}

function output(policy: Policy, uid: number): string {
  try {
    const launch = compileNsjail(policy, FIXTURE_SESSION, fixtureNsjailHost(uid));
    return JSON.stringify({
      args: launch.args,
      env: launch.env,
      fds: launch.fds.map((fd) => (fd.purpose === 'status' ? fd.purpose : new TextDecoder().decode(fd.data))),
    });
  } catch (e) {
    return `refused: ${(e as Error).message}`;
  }
}

/** Whether changing `path` in some sample changes the compiled output. */
function isMapped(path: string, samples: Policy[]): boolean {
  const segs = path.split('.');
  for (const sample of samples) {
    const uid = sample.identity.hostRoot ? 0 : 1000;
    const before = output(sample, uid);
    if (segs[0] === 'mounts') {
      const [, kind, field] = segs;
      const index = sample.mounts.findIndex((m) => m.kind === kind);
      if (index < 0) continue;
      const changed = clone(sample);
      const mount = changed.mounts[index] as unknown as Record<string, unknown>;
      mount[field!] = mutate(path, mount[field!]);
      if (output(changed, uid) !== before) return true;
      continue;
    }
    const changed = clone(sample) as unknown as Record<string, unknown>;
    let holder: Record<string, unknown> | undefined = changed;
    // An optional object (sshAgent) is absent from most samples.
    for (const seg of segs.slice(0, -1)) holder = holder?.[seg] as Record<string, unknown> | undefined;
    const last = segs.at(-1)!;
    if (holder === undefined || !(last in holder) || holder[last] === undefined) continue;
    holder[last] = mutate(path, holder[last]);
    if (output(changed as unknown as Policy, uid) !== before) return true;
  }
  return false;
}

describe('coverage of the Policy IR by the nsjail backend', async () => {
  const samples = await samplePolicies();
  const paths = [...new Set(samples.flatMap((p) => leafPaths(p, '')))].sort();

  it('the samples hold every Policy key, every Mount kind and every Limits key of the IR source', () => {
    const top = new Set(paths.map((p) => p.split('.')[0]));
    for (const key of interfaceKeys('policy/types.ts', 'Policy')) expect([...top], `Policy.${key}`).toContain(key);
    for (const kind of mountKinds())
      expect(
        samples.some((s) => s.mounts.some((m) => m.kind === kind)),
        `mount kind ${kind}`,
      ).toBe(true);
    for (const key of interfaceKeys('limits/types.ts', 'Limits'))
      expect(paths, `Limits.${key}`).toContain(`limits.${key}`);
  });

  it('reads its sources correctly (controls)', () => {
    expect(mountKinds()).toEqual(
      expect.arrayContaining(['bind', 'tmpfs', 'proc', 'dev', 'symlink', 'mask', 'session-dir', 'remount-ro']),
    );
    expect(interfaceKeys('limits/types.ts', 'Limits')).toEqual([
      'memoryBytes',
      'pids',
      'cpus',
      'timeoutMs',
      'cpuTimeSec',
      'fileSizeBytes',
      'nofile',
      'addressSpaceBytes',
      'required',
    ]);
    expect(interfaceKeys('policy/types.ts', 'Policy')).toEqual(
      expect.arrayContaining(['profile', 'mounts', 'limits', 'seccomp', 'command']),
    );
    expect(covers('mounts.bind.optional', 'mounts.bind.optional')).toBe(true);
    expect(covers('workspace', 'workspace.host')).toBe(true);
    expect(covers('limits.cpus', 'limits.cpuTimeSec')).toBe(false);
  });

  it.each(paths)('%s is mapped or listed in NSJAIL_GAPS', (path) => {
    const mapped = isMapped(path, samples);
    const gap = gapFor(path);
    expect(mapped || gap !== undefined, `${path}: not mapped by compileNsjail and not in NSJAIL_GAPS`).toBe(true);
    // A field listed as "equivalent" because it is enforced elsewhere must really not be read here.
    if (
      gap?.effect === 'equivalent' &&
      ['limits.memoryBytes', 'limits.pids', 'limits.cpus', 'limits.addressSpaceBytes'].includes(path)
    )
      expect(mapped, path).toBe(false);
  });

  it('every Mount kind changes the argv when added to a policy', () => {
    const base = samples[0]!;
    const before = output(base, base.identity.hostRoot ? 0 : 1000);
    const examples: Record<string, Mount> = {
      bind: {
        kind: 'bind',
        source: '/opt/x',
        target: '/opt/x',
        access: 'ro',
        optional: false,
        reason: 't',
        role: 'user-ro',
      },
      tmpfs: { kind: 'tmpfs', target: '/opt/t', sizeBytes: MIB, mode: 0o755, reason: 't', role: 'private' },
      proc: { kind: 'proc', target: '/proc2', reason: 't', role: 'kernel' },
      dev: { kind: 'dev', target: '/dev2', reason: 't', role: 'kernel' },
      symlink: { kind: 'symlink', target: '/opt/l', linkTo: 'x', reason: 't', role: 'system' },
      mask: { kind: 'mask', target: '/opt/m', what: 'file', reason: 't', role: 'mask' },
      file: { kind: 'file', target: '/opt/f', content: 'x', mode: 0o444, reason: 't', role: 'private' },
      'session-dir': { kind: 'session-dir', target: '/run/s', reason: 't', role: 'socket' },
      'remount-ro': { kind: 'remount-ro', target: '/tmp', reason: 't', role: 'private' },
    };
    for (const kind of mountKinds()) {
      // Nothing to mount: nsjail's procfs is read-only as a whole; its gap says what stays readable.
      if (kind === 'kernel') {
        expect(NSJAIL_GAPS.find((g) => g.key === 'mounts.kernel')?.effect).toBe('weaker');
        continue;
      }
      const example = examples[kind];
      expect(example, `an example ${kind} mount in this test`).toBeDefined();
      const withoutProc = kind === 'proc' ? base.mounts.filter((m) => m.kind !== 'proc') : base.mounts;
      const policy = { ...base, mounts: [...withoutProc.slice(0, -1), example!, base.mounts.at(-1)!] };
      expect(output(policy, base.identity.hostRoot ? 0 : 1000), kind).not.toBe(before);
      expect(output(policy, base.identity.hostRoot ? 0 : 1000), kind).not.toMatch(/^refused/);
    }
  });
});
