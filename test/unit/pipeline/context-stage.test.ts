// The run context (pipeline/context-stage.ts): the options defaulted once, where the pipeline starts, and the
// ambient facts read once and frozen, so no later stage can see another value than an earlier one did.
import { DEFAULT_QUESTION_TIMEOUT_MS } from '../../../src/network/network-asks.js';
import { describe, expect, it } from 'vitest';
import { runContext, runSettings } from '../../../src/pipeline/context-stage.js';
import { DEFAULT_CAPTURE_LIMIT_BYTES } from '../../../src/pipeline/run-options.js';
import { sbxErrorOf } from '../../helpers/errors.js';

const HOST_ENV = { HOME: '/home/ctx', PATH: '/usr/bin:/bin', XDG_CACHE_HOME: '/home/ctx/cache', UNSET: undefined };

describe('run settings', () => {
  it('fill each documented default: the default profile, inherit stdio, 16 KiB capture, no denylist override, no signal forwarding, 2 minutes a network question', () => {
    expect(runSettings({ command: ['true'] })).toEqual({
      command: ['true'],
      profile: 'default',
      allowDenylistedCommands: false,
      stdio: 'inherit',
      captureLimitBytes: DEFAULT_CAPTURE_LIMIT_BYTES,
      forwardSignals: false,
      networkRequestTimeoutMs: DEFAULT_QUESTION_TIMEOUT_MS,
    });
    expect(DEFAULT_CAPTURE_LIMIT_BYTES).toBe(16 * 1024);
    expect(DEFAULT_QUESTION_TIMEOUT_MS).toBe(120_000);
  });

  it("keep the caller's values, false included", () => {
    const given = {
      profile: 'x',
      allowDenylistedCommands: true,
      stdio: 'capture' as const,
      captureLimitBytes: 1,
      forwardSignals: true,
      networkRequestTimeoutMs: 5000,
    };
    expect(runSettings(given)).toEqual(given);
    expect(runSettings({ allowDenylistedCommands: false, stdio: 'ignore' })).toMatchObject({
      allowDenylistedCommands: false,
      stdio: 'ignore',
    });
  });

  it('leave out the options the context turns into facts: no stage can read them raw', () => {
    const settings = runSettings({ hostEnv: HOST_ENV, cwd: '/w', tty: true, trustProfiles: ['a'.repeat(64)] });
    for (const key of ['hostEnv', 'cwd', 'tty', 'trustProfiles']) expect(settings).not.toHaveProperty(key);
  });
});

describe('the run context', () => {
  it('takes its facts from the options when given: env (defined values only), cwd, tty', () => {
    const ctx = runContext({ hostEnv: HOST_ENV, cwd: '/w', tty: true }, {}, 'sid-1');
    expect(ctx.env).toEqual({ HOME: '/home/ctx', PATH: '/usr/bin:/bin', XDG_CACHE_HOME: '/home/ctx/cache' });
    expect(ctx.cwd).toBe('/w');
    expect(ctx.tty).toBe(true);
    expect(ctx.sessionId).toBe('sid-1');
    expect(ctx.dirs.home).toBe('/home/ctx');
    // The profile search is the context's environment's, not this process's.
    expect(ctx.search).toMatchObject({ cwd: '/w', cacheDir: '/home/ctx/cache/sbx' });
  });

  it('falls back to this process for what the caller did not give', () => {
    const ctx = runContext({}, {}, 'sid-2');
    expect(ctx.cwd).toBe(process.cwd());
    expect(ctx.uid).toBe(process.getuid?.());
    expect(ctx.gid).toBe(process.getgid?.());
    expect(ctx.arch).toBe(process.arch);
    expect(ctx.execPath).toBe(process.execPath);
    expect(ctx.tty).toBe(Boolean(process.stdin.isTTY));
    expect(Object.keys(ctx.env).sort()).toEqual(
      Object.entries(process.env)
        .filter(([, v]) => v !== undefined)
        .map(([k]) => k)
        .sort(),
    );
  });

  it('a captured run never has a terminal, whatever the caller says', () => {
    expect(runContext({ stdio: 'capture', tty: true }, {}, 's').tty).toBe(false);
    // Control: the same option without capture is kept.
    expect(runContext({ stdio: 'inherit', tty: true }, {}, 's').tty).toBe(true);
  });

  it("takes the door's hooks once: the door (library by default), warm, the policy check", () => {
    const checkPolicy = () => {};
    expect(runContext({}, {}, 's')).toMatchObject({ door: 'library', warm: false, checkPolicy: undefined });
    expect(runContext({}, { door: 'mcp', warm: true, checkPolicy }, 's')).toMatchObject({
      door: 'mcp',
      warm: true,
      checkPolicy,
    });
  });

  it('is frozen to its leaves a stage reads: the context, its options, env, dirs and profile search', () => {
    const ctx = runContext({ hostEnv: HOST_ENV, command: ['true'] }, {}, 's');
    for (const part of [ctx, ctx.options, ctx.env, ctx.dirs, ctx.search]) expect(Object.isFrozen(part)).toBe(true);
    expect(() => {
      (ctx.env as Record<string, string>).PATH = '/tmp/evil';
    }).toThrow(TypeError);
    expect(ctx.env.PATH).toBe('/usr/bin:/bin');
  });

  it("is a copy: the caller's environment changing after the run started changes nothing", () => {
    const hostEnv: Record<string, string> = { HOME: '/home/ctx', PATH: '/usr/bin' };
    const ctx = runContext({ hostEnv }, {}, 's');
    hostEnv.PATH = '/tmp/evil';
    expect(ctx.env.PATH).toBe('/usr/bin');
    expect(Object.isFrozen(hostEnv)).toBe(false);
  });

  it('refuses a malformed trusted hash (USAGE) as it is built', () => {
    const error = sbxErrorOf(() => runContext({ hostEnv: { ...HOST_ENV, SBX_TRUST_PROFILE: 'nope' } }, {}, 's'));
    expect(error.code).toBe('USAGE');
  });
});
