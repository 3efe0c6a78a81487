// The registry binds each unit to the launcher it probed: the ChosenBackend a run holds describes,
// compiles and reads with that launcher and no other. Pure fixtures: no launcher is probed or run.
import { describe, expect, it } from 'vitest';
import { BACKENDS, backendOf, chooseBackend, type Launcher } from '../../../src/backend/host/registry.js';
import { FIXTURE_BWRAP, FIXTURE_SESSION, runPipeline } from '../../helpers/hosts.js';

const BWRAP: Launcher = {
  backend: 'bwrap',
  path: FIXTURE_BWRAP.path,
  version: 'bubblewrap 0.11.0',
  bwrap: { path: FIXTURE_BWRAP.path, version: 'bubblewrap 0.11.0', features: FIXTURE_BWRAP.features },
  chosenBy: 'bwrap',
};
const NSJAIL: Launcher = { backend: 'nsjail', path: '/opt/nsjail', version: 'nsjail 3.4', chosenBy: 'auto' };
const LANDLOCK: Launcher = {
  backend: 'landlock',
  path: '/opt/sbx-landlock',
  version: 'sbx-landlock 1',
  chosenBy: 'auto',
};
const join = (argv: string[]) => argv.join(' ');

describe('backendOf', () => {
  it.each([BWRAP, NSJAIL, LANDLOCK])('binds $backend to its own unit and keeps the launcher', (launcher) => {
    const chosen = backendOf(launcher);
    expect(chosen.name).toBe(launcher.backend);
    expect(chosen.launcher).toBe(launcher);
    expect(chosen.egressOn).toBe(BACKENDS[launcher.backend].egressOn);
  });

  it("compile and describe use the bound launcher's facts (bwrap's path, its version)", async () => {
    const { policy, host, argv } = await runPipeline('default', 'alice');
    const chosen = backendOf(BWRAP);
    const launch = await chosen.compile(policy, FIXTURE_SESSION, host, process.arch);
    expect(launch.file).toBe(BWRAP.path);
    // The same argv the golden files hold: the unit passes the launcher's features to the pure compiler.
    expect([launch.file, ...(await chosen.expand(launch))]).toEqual(argv);
    const described = await chosen.describe(policy, launch, join);
    expect(described.lines[0]).toMatch(/^# bubblewrap 0\.11\.0\. /);
  });

  it("nsjail's description names its own launcher's path and version", async () => {
    const { policy, host } = await runPipeline('default', 'alice');
    const chosen = backendOf(NSJAIL);
    const launch = await chosen.compile(policy, FIXTURE_SESSION, { ...host, uid: 1000 }, process.arch);
    expect(launch.file).toBe(NSJAIL.path);
    const described = await chosen.describe(policy, launch, join);
    expect(described.lines[0]).toMatch(/^# nsjail 3\.4 at \/opt\/nsjail\. /);
  });
});

describe('supervision: which results a unit reads', () => {
  const session = { ...FIXTURE_SESSION };
  it('each unit says how backend/host/exec.ts supervises it (nsjail supervises, with its data in files)', () => {
    expect(backendOf(BWRAP).execOptions(session)).toEqual({ supervision: 'status-fd' });
    expect(backendOf(NSJAIL).execOptions(session)).toEqual({ supervision: 'supervisor', fdDir: session.dir });
    expect(backendOf(LANDLOCK).execOptions(session)).toEqual({ supervision: 'status-fd', launcherKill: 'SIGTERM' });
  });

  it("a result of the other supervision never reaches a unit's read: INTERNAL (125), checked once in the registry", async () => {
    const { host } = await runPipeline('default', 'alice');
    const supervised = {
      kind: 'supervised' as const,
      code: 0,
      signal: null,
      log: '',
      durationMs: 1,
      timedOut: false,
      interrupts: [],
    };
    await expect(backendOf(LANDLOCK).read(supervised, host)).rejects.toMatchObject({ code: 'INTERNAL' });
    const failed = { kind: 'setup-failed' as const, code: 1, signal: null, durationMs: 1 };
    await expect(backendOf(NSJAIL).read(failed, host)).rejects.toMatchObject({ code: 'INTERNAL' });
    // Control: the same setup failure under its own supervision is read as the unit's own refusal.
    await expect(backendOf(LANDLOCK).read(failed, host)).rejects.toMatchObject({ code: 'SANDBOX_SETUP' });
  });
});

describe('chooseBackend', () => {
  it('a named backend that is missing is refused (BWRAP_MISSING), never swapped for another', async () => {
    const env = { PATH: '/nonexistent', SBX_NSJAIL: undefined };
    const ctx = { env, cacheDir: undefined, uid: 1000 };
    await expect(chooseBackend({ ...ctx, choice: 'bwrap' })).rejects.toMatchObject({ code: 'BWRAP_MISSING' });
  });
});
