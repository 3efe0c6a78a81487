// Refusals thrown while deriving the Policy name the profile key (or flag) behind them, which the
// pipeline then locates (profile/positions.ts): the writable bind over host state, mode: danger, a
// reserved variable from env.set or --env, a missing bind source, a bad limit from a key or a flag.
import { describe, expect, it } from 'vitest';
import type { Host, PathFact } from '../../../src/policy/host.js';
import { parseLimits } from '../../../src/limits/parse-limits.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { deriveOnFixture } from '../../helpers/hosts.js';

const dir = (real: string): PathFact => ({ exists: true, real, type: 'dir', uid: 1000 });
const dirs =
  (...paths: string[]) =>
  (h: Host) => {
    for (const p of paths) h.paths[p] = dir(p);
  };

describe('refusals from a profile key carry it', () => {
  it('HOST_STATE_WRITABLE: the writable_roots entry, or the --bind flag', () => {
    const tmp = '/home/alice/proj/tmp';
    const profile = { writable_roots: [tmp, '/home/alice/.config'] };
    const e = sbxErrorOf(() =>
      deriveOnFixture(profile, { host: dirs(tmp, '/home/alice/.config', '/home/alice/.config/sbx') }),
    );
    expect(e).toMatchObject({ code: 'HOST_STATE_WRITABLE', source: { key: 'writable_roots[1]' } });
    const bind = { binds: [{ source: '/home/alice/.config', access: 'rw' as const }] };
    const f = sbxErrorOf(() =>
      deriveOnFixture({}, { request: bind, host: dirs('/home/alice/.config', '/home/alice/.config/sbx') }),
    );
    expect(f).toMatchObject({ code: 'HOST_STATE_WRITABLE', source: { key: '--bind', origin: 'flag' } });
  });

  it('DANGER_NOT_ALLOWED: mode', () => {
    expect(sbxErrorOf(() => deriveOnFixture({ mode: 'danger' }))).toMatchObject({ source: { key: 'mode' } });
  });

  it('ENV_RESERVED: env.set.NAME from the profile, --env from the request', () => {
    const fromProfile = sbxErrorOf(() => deriveOnFixture({ env: { set: { SBX_PROFILE: 'x' } } }));
    expect(fromProfile).toMatchObject({ code: 'ENV_RESERVED', source: { key: 'env.set.SBX_PROFILE' } });
    const fromFlag = sbxErrorOf(() => deriveOnFixture({}, { request: { env: { SBX_PROFILE: 'x' } } }));
    expect(fromFlag).toMatchObject({ code: 'ENV_RESERVED', source: { key: '--env', origin: 'flag' } });
  });

  it('BIND_SOURCE_MISSING: the read_only entry', () => {
    const e = sbxErrorOf(() => deriveOnFixture({ read_only: ['/nowhere'] }));
    expect(e).toMatchObject({ code: 'BIND_SOURCE_MISSING', source: { key: 'read_only[0]' } });
  });

  it('PROFILE_INVALID in the allow-list: the network.allow or network.deny entry, or --allow-domain', () => {
    const network = { allow: ['registry.npmjs.org', 'a.*.example'], deny: ['ok.example', 'bad:0'] };
    expect(sbxErrorOf(() => deriveOnFixture({ network }))).toMatchObject({
      code: 'PROFILE_INVALID',
      source: { key: 'network.allow[1]' },
    });
    expect(sbxErrorOf(() => deriveOnFixture({ network: { ...network, allow: [] } }))).toMatchObject({
      source: { key: 'network.deny[1]' },
    });
    const flag = { allowDomains: ['a.*.example'] };
    expect(sbxErrorOf(() => deriveOnFixture({ network: { allow: ['x.example'] } }, { request: flag }))).toMatchObject({
      source: { key: '--allow-domain', origin: 'flag' },
    });
  });

  it('LIMIT_INVALID: limits.memory from the profile, --memory from the flag', () => {
    expect(sbxErrorOf(() => parseLimits({ memory: 'lots' }))).toMatchObject({ source: { key: 'limits.memory' } });
    expect(sbxErrorOf(() => parseLimits({}, { memory: 'lots' }))).toMatchObject({
      source: { key: '--memory', origin: 'flag' },
    });
  });
});
