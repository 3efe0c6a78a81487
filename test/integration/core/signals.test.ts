// Signals to sbx while the sandbox runs (real bwrap via `node bin/sbx.js run`): SIGTERM ends the run
// with 143 and leaves no process of the sandbox; SIGKILL to sbx takes the sandbox with it
// (--die-with-parent). Each run's `sleep` carries a unique argument so /proc can be searched for
// exactly this sandbox's processes. The waits are: a ready line printed once the sleep really runs,
// and the sbx process's exit plus every pipe it shared with the sandbox closing.
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseReport } from '../../helpers/report.js';
import {
  killAll,
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  SAFETY_MS,
  sleeperScript,
  SKIP_INTEGRATION,
  startSbx,
  uniqueSleepArg,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
const markers: string[] = [];
/** argv of wrapper processes a test started (killed in afterEach if a test left one behind). */
const wrappers: string[][] = [];

function newMarker(): string {
  const m = uniqueSleepArg();
  markers.push(m);
  return m;
}

describe.skipIf(SKIP_INTEGRATION)('signals to sbx (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('sig');
  });
  afterEach(() => {
    for (const m of markers.splice(0)) killAll(['sleep', m]);
    for (const argv of wrappers.splice(0)) killAll(argv);
  });
  afterAll(() => t?.cleanup());

  it('SIGTERM to sbx while the command runs `sleep 30`: sbx exits 143 promptly, and no process of the sandbox is left', async () => {
    const marker = newMarker();
    const started = performance.now();
    const sbx = startSbx(['--', 'sh', '-c', sleeperScript(marker)], { env: t.env, cwd: t.workspace });
    await sbx.line(/^ready /);
    // control: the sandbox's sleep is visible on the host, so the scan below can see it
    expect(pidsWithArgv(['sleep', marker])).toHaveLength(1);
    sbx.child.kill('SIGTERM');
    const r = await sbx.done;
    expect(r.signal).toBeNull();
    expect(r.code).toBe(143);
    expect(r.err).toMatch(/^sbx: sh was interrupted by SIGTERM from the user \(exit 143\)/m);
    // The command's `sleep 30` would have kept it alive for 30 s: it was ended, not waited for.
    expect(performance.now() - started).toBeLessThan(SAFETY_MS);
    expect(pidsWithArgv(['sleep', marker])).toEqual([]);
  });

  // The user's own Ctrl-C (here SIGINT sent to sbx, which forwards it) is their choice, not a policy
  // violation: the report says who sent the signal. A kill that did not come through sbx stays one
  // (exit-codes.test.ts: `kill -9 $$` is a signal violation).
  it('SIGINT to sbx while `sleep` runs: exit 130, the report names the user as sender, no violation', async () => {
    const marker = newMarker();
    const sbx = startSbx(['--report-fd', '3', '--', 'sh', '-c', sleeperScript(marker)], {
      env: t.env,
      cwd: t.workspace,
      extraStdio: { 3: 'pipe' },
    });
    await sbx.line(/^ready /);
    sbx.child.kill('SIGINT');
    const r = await sbx.done;
    expect(r.code).toBe(130);
    const report = parseReport(r.extra[3]!.toString());
    expect(report).toMatchObject({
      exitCode: 130,
      signal: 'SIGINT',
      interruptedBy: 'user',
      setBy: 'child',
      violations: [],
    });
    expect(r.err).toMatch(/^sbx: sh was interrupted by SIGINT from the user \(exit 130\)/m);
    expect(r.err).not.toMatch(/violation|runtime signal/);
    expect(pidsWithArgv(['sleep', marker])).toEqual([]);
  });

  it('SIGTERM reaches the command itself: `exec sleep` gets it and the run ends 143', async () => {
    const marker = newMarker();
    const sbx = startSbx(['--', 'sh', '-c', `echo ready; exec sleep ${marker}`], { env: t.env, cwd: t.workspace });
    await sbx.line(/^ready$/);
    sbx.child.kill('SIGTERM');
    const r = await sbx.done;
    expect(r.code).toBe(143);
    expect(pidsWithArgv(['sleep', marker])).toEqual([]);
  });

  it('SIGKILL to sbx: the sandbox dies with it (--die-with-parent)', async () => {
    const marker = newMarker();
    const sbx = startSbx(['--', 'sh', '-c', sleeperScript(marker)], { env: t.env, cwd: t.workspace });
    await sbx.line(/^ready /);
    const before = pidsWithArgv(['sleep', marker]);
    expect(before).toHaveLength(1);
    sbx.child.kill('SIGKILL');
    // `done` resolves once sbx has exited *and* its stdout/stderr pipes are closed. The sandboxed
    // sleep holds the write ends too, so this is the sandbox's death, observed through a descriptor.
    // If die-with-parent were broken, the safety timeout fails the test instead of hanging.
    const r = await sbx.done;
    expect(r.signal).toBe('SIGKILL');
    const survivors = pidsWithArgv(['sleep', marker]);
    expect(survivors, `sandbox processes outlived sbx: ${survivors.join(' ')}`).toEqual([]);
  });

  // A SIGTERM that reaches sbx after bwrap was spawned but before it reported the command's pid (bwrap
  // still building the sandbox) ends bwrap with SIGKILL; the status is still that of the signal the
  // user sent (143), not of the SIGKILL sbx used internally.
  // The window is held open with SBX_BWRAP = a wrapper that waits for a line on stdin (never sent)
  // before exec'ing the real bwrap: sbx's SIGKILL is what ends it.
  it('SIGTERM while bwrap is still starting: exit 143 (the signal sent), not 137', async () => {
    const real = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).stdout.trim();
    const wrapper = join(t.root, 'slow-bwrap');
    writeFileSync(
      wrapper,
      `#!/bin/sh\n[ "$1" = --version ] && exec ${real} "$@"\necho wrapper-ready\nread line\nexec ${real} "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const marker = newMarker();
    const command = ['sh', '-c', `exec sleep ${marker}`];
    const sbx = startSbx(['--', ...command], {
      env: { ...t.env, SBX_BWRAP: wrapper },
      cwd: t.workspace,
      stdin: 'pipe',
    });
    wrappers.push(['/bin/sh', wrapper, '--args', '4', '--', ...command]);
    await sbx.line(/^wrapper-ready$/);
    // sbx installs its handlers synchronously right after spawning; confirm before signalling
    // (SigCgt has SIGHUP, SIGINT, SIGQUIT and SIGTERM), re-reading /proc only as a safety net.
    const caught = () =>
      BigInt('0x' + /^SigCgt:\s+([0-9a-f]+)$/m.exec(readFileSync(`/proc/${sbx.child.pid}/status`, 'utf8'))![1]!);
    const want = (1n << 0n) | (1n << 1n) | (1n << 2n) | (1n << 14n);
    for (let i = 0; (caught() & want) !== want; i++) {
      if (i > 10_000) throw new Error('sbx never installed its signal handlers');
      await new Promise((r) => setImmediate(r));
    }
    sbx.child.kill('SIGTERM');
    const r = await sbx.done;
    sbx.stdin!.destroy();
    expect(pidsWithArgv(['sleep', marker])).toEqual([]);
    expect(r.err).not.toContain('SIGKILL');
    expect(r.code).toBe(143);
  });
});
