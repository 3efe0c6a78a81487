// Session directories under $XDG_RUNTIME_DIR/sbx (real bwrap via `node bin/sbx.js run`): one per run
// while it runs, none after; a stale one (its sbx died: crashed, SIGKILLed) is swept by the next run,
// a live one is not.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let base: string;

/** A pid that certainly belonged to a process that has exited (and was reaped). */
function deadPid(): number {
  const r = spawnSync('true');
  if (r.pid === undefined || r.status !== 0) throw new Error('could not run `true`');
  return r.pid;
}

describe.skipIf(SKIP_INTEGRATION)('session directories (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('session');
    base = join(t.runtimeDir, 'sbx');
  });
  afterAll(() => t?.cleanup());

  it('a run has its directory <session>.<sbx pid> while it runs and none after', async () => {
    const sbx = startSbx(['--', 'sh', '-c', 'echo "ready $SBX_SESSION_ID"; read line'], {
      env: t.env,
      cwd: t.workspace,
      stdin: 'pipe',
    });
    const id = (await sbx.line(/^ready /)).split(' ')[1]!;
    expect(readdirSync(base)).toEqual([`${id}.${sbx.child.pid}`]);
    sbx.stdin!.end('go\n');
    const r = await sbx.done;
    expect(r.code).toBe(0);
    expect(readdirSync(base)).toEqual([]);
  });

  it('after a plain run $XDG_RUNTIME_DIR/sbx holds no session dir, also when the command fails or is killed', async () => {
    for (const script of ['true', 'exit 3', 'kill -9 $$']) {
      await runSbx(['--', 'sh', '-c', script], { env: t.env, cwd: t.workspace });
      expect(readdirSync(base), script).toEqual([]);
    }
  });

  it('a stale directory named like a session with a dead pid is swept by the next run; a live one is kept', async () => {
    const stale = join(base, `m0stale0-deadbeef.${deadPid()}`);
    mkdirSync(stale, { mode: 0o700 });
    writeFileSync(join(stale, 'empty'), '');
    const live = join(base, `m0live00-cafef00d.${process.pid}`);
    mkdirSync(live, { mode: 0o700 });
    const unrelated = join(base, 'not-a-session');
    mkdirSync(unrelated);
    const r = await runSbx(['--', 'true'], { env: t.env, cwd: t.workspace });
    expect(r.code).toBe(0);
    expect(existsSync(stale)).toBe(false);
    expect(readdirSync(base).sort()).toEqual(['m0live00-cafef00d.' + process.pid, 'not-a-session'].sort());
    spawnSync('rm', ['-rf', live, unrelated]);
  });

  it('the directory a SIGKILLed sbx left behind is swept by the next run', async () => {
    const sbx = startSbx(['--', 'sh', '-c', 'echo "ready $SBX_SESSION_ID"; read line'], {
      env: t.env,
      cwd: t.workspace,
      stdin: 'pipe',
    });
    const id = (await sbx.line(/^ready /)).split(' ')[1]!;
    const left = `${id}.${sbx.child.pid}`;
    sbx.child.kill('SIGKILL');
    const killed = await sbx.done;
    expect(killed.signal).toBe('SIGKILL');
    expect(readdirSync(base)).toEqual([left]); // stale: its owner is dead
    const r = await runSbx(['--', 'true'], { env: t.env, cwd: t.workspace });
    expect(r.code).toBe(0);
    expect(readdirSync(base)).toEqual([]);
  });
});
