// Issue 31 §3 end to end (real bwrap via bin/sbx.js): what a sandboxed run writes must not choose a
// later run's policy. A profile named by path (`-p ./ci.yaml`, the Action's `profile:`) inside a tree
// a sandbox or a pull request writes is used only when pinned; a workspace without `.sbx` gets an
// empty one held read-only, so no run can plant `.sbx/profiles/agent.yaml` (on every backend). Each
// refusal checks that the marker command did not run, beside a control in which it does.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findNsjail } from '../nsjail/harness.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxReport,
  scenarioDir,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;

const workdir = (name: string) => scenarioDir(t, name);

const CI = 'extends: default\n';
// What a sandboxed run rewrites the file to: a read-only mode would otherwise leave it outside every
// writable tree of the next run, so only where the file lies can decide.
const EVIL = 'extends: default\nmode: read-only\nnetwork: host\n';
const PLANT = 'mkdir -p .sbx/profiles && echo "network: host" > .sbx/profiles/agent.yaml';

describe.skipIf(SKIP_INTEGRATION)('profiles named by path, and .sbx (issue 31 §3)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('profile-paths');
  });
  afterAll(() => t?.cleanup());

  it('-p ./ci.yaml in the workspace: rewritten by a run, refused on the next until pinned; outside, used as is', {
    timeout: 60_000,
  }, async () => {
    const ws = workdir('ws-ci');
    const opts = { env: t.env, cwd: ws };
    writeFileSync(join(ws, 'ci.yaml'), CI);
    // A run under the default profile may write its workspace: it rewrites the profile file.
    expect((await runSbx(['--', 'sh', '-c', `printf '%s' '${EVIL}' > ci.yaml`], opts)).code).toBe(0);
    const refused = await runSbxReport(['-p', './ci.yaml', '--', 'touch', 'ran-rewritten'], opts);
    expect(refused.r.code).toBe(125);
    expect(refused.report.error?.code).toBe('PROFILE_UNTRUSTED');
    expect(refused.report.error?.message).toContain(`profile file "./ci.yaml" (${join(ws, 'ci.yaml')}, in a tree`);
    expect(refused.report.error?.hint).toContain(`sbx trust ${join(ws, 'ci.yaml')}`);
    expect(existsSync(join(ws, 'ran-rewritten'))).toBe(false);

    // Control: the same bytes in a directory no run writes, named from elsewhere, are used as they are.
    const elsewhere = workdir('profiles-elsewhere');
    writeFileSync(join(elsewhere, 'ci.yaml'), CI);
    const ok = await runSbx(['-p', join(elsewhere, 'ci.yaml'), '--', 'touch', 'ran-elsewhere'], opts);
    expect(ok.code).toBe(0);
    expect(existsSync(join(ws, 'ran-elsewhere'))).toBe(true);

    // Pinned after review, the workspace's file runs; rewritten again, it is refused again.
    writeFileSync(join(ws, 'ci.yaml'), CI);
    expect((await runSbxRaw(['trust', '--yes', './ci.yaml'], opts)).code).toBe(0);
    expect((await runSbx(['-p', './ci.yaml', '--', 'touch', 'ran-pinned'], opts)).code).toBe(0);
    expect(existsSync(join(ws, 'ran-pinned'))).toBe(true);
    expect((await runSbx(['-p', './ci.yaml', '--', 'sh', '-c', `printf '%s' '${EVIL}' > ci.yaml`], opts)).code).toBe(0);
    const again = await runSbxReport(['-p', './ci.yaml', '--', 'touch', 'ran-again'], opts);
    expect(again.report.error?.code).toBe('PROFILE_UNTRUSTED');
    expect(again.report.error?.message).toContain('changed since you trusted it');
    expect(existsSync(join(ws, 'ran-again'))).toBe(false);
  });

  it('a profile file inside the writable_roots it names is refused (HOST_STATE_WRITABLE), the fix in the hint', async () => {
    const ws = workdir('ws-roots');
    const roots = workdir('writable-roots');
    const file = join(roots, 'p.yaml');
    writeFileSync(file, `extends: default\nwritable_roots: [${roots}]\n`);
    const refused = await runSbxReport(['-p', file, '--', 'touch', join(roots, 'ran')], { env: t.env, cwd: ws });
    expect(refused.r.code).toBe(125);
    expect(refused.report.error?.code).toBe('HOST_STATE_WRITABLE');
    expect(refused.report.error?.message).toContain(`${roots} contains ${file} (a profile file this run uses`);
    expect(refused.report.error?.hint).toContain(`sbx trust ${file}`);
    expect(existsSync(join(roots, 'ran'))).toBe(false);
    // Control: with a writable root that does not hold it, the same kind of profile runs.
    const other = workdir('writable-other');
    const fine = join(roots, 'q.yaml');
    writeFileSync(fine, `extends: default\nwritable_roots: [${other}]\n`);
    expect((await runSbx(['-p', fine, '--', 'touch', join(other, 'ran')], { env: t.env, cwd: ws })).code).toBe(0);
    expect(existsSync(join(other, 'ran'))).toBe(true);
  });

  it("GitHub Actions: a profile file in the checkout is the pull request's, read-only mode or not", async () => {
    const checkout = workdir('checkout');
    mkdirSync(join(checkout, 'ci'));
    const file = join(checkout, 'ci', 'sbx.yaml');
    writeFileSync(file, 'extends: default\nmode: read-only\n');
    const cwd = workdir('runner-cwd');
    const actions = { ...t.env, GITHUB_ACTIONS: 'true', GITHUB_WORKSPACE: checkout };
    const refused = await runSbxReport(['-p', file, '--', 'touch', join(t.root, 'ran-actions')], { env: actions, cwd });
    expect(refused.report.error?.code).toBe('PROFILE_UNTRUSTED');
    expect(refused.report.error?.hint).toContain('--trust-profile');
    expect(existsSync(join(t.root, 'ran-actions'))).toBe(false);
    // Control: outside Actions mode the same file, named from elsewhere, is used (it is no one's checkout).
    expect((await runSbx(['-p', file, '--', 'true'], { env: t.env, cwd })).code).toBe(0);
  });

  describe('a workspace without .sbx: the sandbox cannot make one', () => {
    const backends: [string, Record<string, string>][] = [
      ['bwrap', {}],
      ['landlock', {}],
    ];
    const nsjail = findNsjail();
    if ('path' in nsjail) backends.push(['nsjail', { SBX_NSJAIL: nsjail.path }]);
    else it.skip(`nsjail: ${nsjail.missing}`, () => {});

    it.each(backends)('%s', async (backend, extraEnv) => {
      const ws = workdir(`ws-plant-${backend}`);
      const env = { ...t.env, ...extraEnv };
      const r = await runSbx(['--backend', backend, '--', 'sh', '-c', PLANT], { env, cwd: ws });
      // Landlock lets the write happen and puts the directory back after the run (a git-state violation).
      if (backend !== 'landlock') expect(r.err).toContain('Read-only file system');
      else expect(r.err).toContain(`${ws}/.sbx/profiles: added`);
      // Nothing planted: the `.sbx` sbx made for the run stays, empty (Landlock's guard keeps what it
      // took out of it, renamed where no profile search looks).
      expect(readdirSync(join(ws, '.sbx'))).toEqual([]);
      // Control: the same command unsandboxed plants it.
      const control = workdir(`ws-plant-${backend}-control`);
      expect((await runHost(['sh', '-c', PLANT], { env: t.env, cwd: control })).code).toBe(0);
      expect(existsSync(join(control, '.sbx/profiles/agent.yaml'))).toBe(true);
    });
  });
});
