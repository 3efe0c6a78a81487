// The library door fails closed (dist/api.js, real bwrap): only 'once' and 'always' approve, an
// aborted signal runs nothing, and every bad argument is an SbxError with a code before anything is
// read or run. Each refusal is checked by a marker the command would have created, beside a control
// run that creates it.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

type Api = typeof import('../../../src/api.js');
let api: Api;
let t: TestHost;
let asking: string;
const marker = () => join(t.workspace, 'ran-marker');
const base = () => ({
  profile: asking,
  cwd: t.workspace,
  hostEnv: { ...t.env, XDG_STATE_HOME: join(t.root, 'state') },
  stdio: 'capture' as const,
});

describe.skipIf(SKIP_INTEGRATION)('library door fails closed (dist/api.js, real bwrap)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    api = (await import(DIST_API)) as Api;
    t = makeTestHost('door');
    asking = join(t.root, 'asking.yaml');
    writeFileSync(asking, 'extends: default\ncommands:\n  default: ask\n  allow: { ls: }\n');
  });
  afterAll(() => t?.cleanup());

  it("control: 'once' approves and the command runs", async () => {
    rmSync(marker(), { force: true });
    const o = await api.run({ ...base(), command: ['touch', 'ran-marker'], approve: async () => 'once' });
    expect(o.exitCode).toBe(0);
    expect(existsSync(marker())).toBe(true);
    rmSync(marker());
  });

  const answers: [string, () => Promise<unknown>][] = [
    ["'no'", async () => 'no'],
    ['false', async () => false],
    ['null', async () => null],
    ["'DENY'", async () => 'DENY'],
    ["'ONCE'", async () => 'ONCE'],
    ['0', async () => 0],
    ['true', async () => true],
    ['undefined', async () => undefined],
    [
      'a throw',
      async () => {
        throw new Error('approver crashed');
      },
    ],
  ];
  it.each(answers)('an approver answering %s refuses (APPROVAL_DENIED) and nothing runs', async (_what, approve) => {
    const run = api.run({ ...base(), command: ['touch', 'ran-marker'], approve: approve as never });
    await expect(run).rejects.toMatchObject({ name: 'SbxError', code: 'APPROVAL_DENIED', exitCode: 126 });
    expect(existsSync(marker())).toBe(false);
  });

  it("a refusal names its rule's profile line in SbxError.source: APPROVAL_DENIED and COMMAND_DENIED", async () => {
    const refused = await api.run({ ...base(), command: ['touch', 'ran-marker'] }).catch((e: unknown) => e);
    expect(refused).toMatchObject({
      code: 'APPROVAL_DENIED',
      source: { key: 'commands.default', origin: 'profile', file: asking, line: 3 },
    });
    const denying = join(t.root, 'denying.yaml');
    writeFileSync(denying, 'extends: default\ncommands:\n  deny: [touch]\n');
    const denied = await api
      .run({ ...base(), profile: denying, command: ['touch', 'ran-marker'] })
      .catch((e: unknown) => e);
    expect(denied).toMatchObject({
      code: 'COMMAND_DENIED',
      source: { key: 'commands.deny[0]', origin: 'profile', file: denying, line: 3 },
    });
    expect(existsSync(marker())).toBe(false);
  });

  it('an already-aborted signal: ABORTED, nothing runs (control: the same call without it runs)', async () => {
    const controller = new AbortController();
    controller.abort();
    const opts = { command: ['touch', 'ran-marker'], cwd: t.workspace, hostEnv: t.env, stdio: 'capture' as const };
    await expect(api.run({ ...opts, signal: controller.signal })).rejects.toMatchObject({
      code: 'ABORTED',
      exitCode: 143,
    });
    expect(existsSync(marker())).toBe(false);
    expect((await api.run(opts)).exitCode).toBe(0);
    expect(existsSync(marker())).toBe(true);
    rmSync(marker());
  });

  it('a signal aborted while sbx prepares (during the approval): ABORTED, nothing runs', async () => {
    const controller = new AbortController();
    const approve = async () => {
      controller.abort();
      return 'once' as const;
    };
    await expect(
      api.run({ ...base(), command: ['touch', 'ran-marker'], approve, signal: controller.signal }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    expect(existsSync(marker())).toBe(false);
  });

  it("a signal aborted while the command runs: 143, interruptedBy 'caller', no violation", async () => {
    // The command says it runs through a FIFO in the workspace: reading it resolves once it wrote.
    const fifo = join(t.workspace, 'ready.fifo');
    rmSync(fifo, { force: true });
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const controller = new AbortController();
    const running = api.run({
      command: ['sh', '-c', 'echo ready > ready.fifo; exec sleep 30'],
      cwd: t.workspace,
      hostEnv: t.env,
      stdio: 'capture',
      signal: controller.signal,
    });
    expect(await readFile(fifo, 'utf8')).toBe('ready\n');
    controller.abort();
    const o = await running;
    expect(o).toMatchObject({
      exitCode: 143,
      signal: 'SIGTERM',
      interruptedBy: 'caller',
      setBy: 'child',
      violations: [],
    });
    rmSync(fifo);
  });

  it.each([
    ['command as a string', { command: 'ls' }, /^run\(\): command: Invalid input: expected array, received string$/],
    ['an empty command', { command: [] }, /^run\(\): command: must name a command/],
    ['a NUL in an argument', { command: ['echo', 'a\0b'] }, /^run\(\): command\.1: must not contain a NUL character$/],
    [
      'cwd as a number',
      { command: ['true'], cwd: 5 },
      /^run\(\): cwd: Invalid input: expected string, received number$/,
    ],
    ['an unknown key', { command: ['true'], comand: ['x'] }, /^run\(\): .*Unrecognized key: "comand"/],
    ['stdio not one of the modes', { command: ['true'], stdio: 'pipe' }, /^run\(\): stdio: /],
    ['approve not a function', { command: ['true'], approve: 'once' }, /^run\(\): approve: must be a function/],
    [
      'signal not an AbortSignal',
      { command: ['true'], signal: { aborted: true } },
      /^run\(\): signal: must be an AbortSignal$/,
    ],
    [
      'limits with an unknown name',
      { command: ['true'], limits: { memroy: '1GiB' } },
      /^run\(\): limits: Unrecognized key: "memroy"$/,
    ],
  ])('run() with %s: SbxError OPTIONS_INVALID (exit 2), nothing runs', async (_what, options, message) => {
    const error = await api
      .run({ cwd: t.workspace, hostEnv: t.env, ...(options as object) } as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(api.SbxError);
    expect(error).toMatchObject({ code: 'OPTIONS_INVALID', exitCode: 2 });
    expect((error as Error).message).toMatch(message);
  });

  it('run(null), run(), compile({ command: "ls" }): SbxError OPTIONS_INVALID', async () => {
    for (const call of [
      () => api.run(null as never),
      () => api.run(undefined as never),
      () => api.compile({ command: 'ls' } as never),
    ]) {
      await expect(call()).rejects.toMatchObject({ name: 'SbxError', code: 'OPTIONS_INVALID' });
    }
  });

  it('every issue is named: the first in the message, the rest in details', async () => {
    const error = (await api
      .run({ command: 'ls', cwd: 5, bogus: 1 } as never)
      .catch((e: unknown) => e)) as InstanceType<Api['SbxError']>;
    expect([error.message, ...error.details].join('\n')).toMatch(/command: .*\n.*cwd: .*\n.*Unrecognized key: "bogus"/);
  });
});
