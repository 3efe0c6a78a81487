// Runs writing one repository at once (src/git/baseline.ts, src/git/host/live-runs.ts): a run that
// starts while another's sandbox has planted something audits against the state from before that
// sandbox, so its own audit catches the plant if its sandbox makes it again after the first audit
// removed it. Called directly against the auditor (each step in order, with the control: without
// the register, the re-plant survives and the host's next `git status` runs it), then for real: two
// `sbx run`s under bwrap (and nsjail when found) interleaved through files in the workspace. (Landlock
// serialises runs on a git dir instead: native/sbx-guard.c, test/integration/landlock/.)
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { auditGitState, type GitAuditPlan, snapshotGitState } from '../../../src/git/host/auditor.js';
import { readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { makeTempDir } from '../../helpers/tmp.js';
import { findNsjail } from '../nsjail/harness.js';

const uid = process.getuid?.() ?? -1;

/** A repository in `ws` with a nested one in `ws/sub` (a dependency checked out from git). */
function layout(ws: string): void {
  mkdirSync(ws);
  spawnSync('git', ['init', '-q', ws]);
  spawnSync('git', ['init', '-q', join(ws, 'sub')]);
}

/** `layout` under a fresh root; `marker` is written by any host git run in `ws/sub` that reads the plant. */
function repo(): { ws: string; state: string; marker: string } {
  const root = makeTempDir('sbx-gitruns-');
  const ws = join(root, 'ws');
  layout(ws);
  return { ws, state: join(root, 'state'), marker: join(root, 'marker') };
}

// The plant: the nested repository's config given a program that `git status` there runs. Made again
// after an audit put the config back, it is the same git dir (same inode) with the same entry: a
// baseline that already held it sees no change.
function plant(ws: string, marker: string): void {
  spawnSync('git', ['-C', join(ws, 'sub'), 'config', 'core.fsmonitor', `touch ${marker}; false`]);
}

function hostStatusRuns(ws: string, marker: string): boolean {
  spawnSync('git', ['-C', join(ws, 'sub'), 'status'], { stdio: 'ignore' });
  return existsSync(marker);
}

const plan = (ws: string, session: string, state?: string): GitAuditPlan => ({
  roots: [ws],
  globalConfigs: [],
  session,
  uid,
  ...(state ? { live: { dir: join(state, 'git-runs'), uid } } : {}),
});

/** A plants; B starts (its walk sees the plant); A ends and is audited; B plants the same again and ends. */
function interleaved(ws: string, marker: string, state?: string) {
  const beforeA = snapshotGitState(plan(ws, 'A', state));
  plant(ws, marker);
  const beforeB = snapshotGitState(plan(ws, 'B', state));
  const a = auditGitState(plan(ws, 'A', state), beforeA);
  plant(ws, marker);
  const b = auditGitState(plan(ws, 'B', state), beforeB);
  const said = (r: typeof a) => r.violations.map((v) => v.detail.replace(ws, '<ws>').split(';')[0]);
  return { a: said(a), b: said(b), incomplete: a.incomplete || b.incomplete };
}

describe('two runs in one repository, interleaved (the auditor called directly)', () => {
  it('control: each run its own baseline, the re-plant matches the second snapshot and survives', () => {
    const { ws, marker } = repo();
    const r = interleaved(ws, marker);
    expect(r.a).toEqual([`<ws>/sub/.git/config: program entry added: core.fsmonitor=touch ${marker}`]);
    expect(r.b).toEqual([]);
    expect(hostStatusRuns(ws, marker)).toBe(true);
  });

  it('registered: the second run inherits the first one’s baseline and disarms the re-plant', () => {
    const { ws, state, marker } = repo();
    const r = interleaved(ws, marker, state);
    const found = `<ws>/sub/.git/config: program entry added: core.fsmonitor=touch ${marker}`;
    expect(r).toEqual({ a: [found], b: [found], incomplete: false });
    expect(hostStatusRuns(ws, marker)).toBe(false);
    // Each record is gone with its audit.
    expect(readdirSync(join(state, 'git-runs'))).toEqual([]);
  });

  it('a record whose process is gone (sbx killed before its audit) is removed, not inherited', () => {
    const { ws, state, marker } = repo();
    const dir = join(state, 'git-runs');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const empty = { gitDirs: [], gitFiles: {}, includes: {}, hookDirs: {}, unchecked: [], entries: 0 };
    const dead = { format: 1, pid: 2 ** 22 + 1, started: '1', atMs: 0, roots: [ws], baseline: empty };
    writeFileSync(join(dir, 'dead.json'), JSON.stringify(dead), { mode: 0o600 });
    plant(ws, marker);
    const before = snapshotGitState(plan(ws, 'C', state));
    // (The dead record named the tree clean; inherited, this run would put back a config it never saw change.)
    expect(readdirSync(dir)).toEqual(['C.json']);
    // The plant was there before this run began: its own walk decides, as without any register.
    expect(auditGitState(plan(ws, 'C', state), before)).toEqual({ violations: [], incomplete: false });
  });

  it('a record another could have written is not trusted: the run is unaudited (125), naming it', () => {
    const { ws, state } = repo();
    const dir = join(state, 'git-runs');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, 'odd.json'), '{}', { mode: 0o666 });
    chmodSync(join(dir, 'odd.json'), 0o666);
    const r = auditGitState(plan(ws, 'D', state), snapshotGitState(plan(ws, 'D', state)));
    expect(r.incomplete).toBe(true);
    expect(r.violations.map((v) => v.detail)).toEqual([
      `the git state of ${ws} could not be recorded before the run (${join(dir, 'odd.json')} is not a private file of uid ${uid}: remove it): inspect it before running git there`,
    ]);
  });

  it('a state directory others can write is refused the same way', () => {
    const { ws, state } = repo();
    mkdirSync(join(state, 'git-runs'), { recursive: true });
    chmodSync(join(state, 'git-runs'), 0o777);
    const r = auditGitState(plan(ws, 'E', state), snapshotGitState(plan(ws, 'E', state)));
    expect(r.incomplete).toBe(true);
    expect(r.violations[0]?.detail).toContain('is not a private directory');
  });
});

// The same interleaving through the CLI: the sandboxes wait on files the test writes in the workspace.
const nsjail = findNsjail();
const BACKENDS = ['bwrap', ...('path' in nsjail ? ['nsjail'] : [])];
let t: TestHost;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('gitruns');
  if ('path' in nsjail) t.env.SBX_NSJAIL = nsjail.path;
});
afterAll(() => {
  if (t) spawnSync('rm', ['-rf', t.root]);
});

const waitFor = (file: string) => `while [ ! -e ${file} ]; do sleep 0.1; done`;

// Under bwrap and nsjail a repository's own config is read-only inside; a file in the workspace that
// the user's ~/.gitconfig includes is not (it is the workspace's), and the auditor guards it.
describe.skipIf(SKIP_INTEGRATION).each(BACKENDS)('two sbx runs at once on one repository (%s)', (backend) => {
  afterEach(() => rmSync(join(t.home, '.gitconfig'), { force: true }));

  it('the second run’s audit undoes what its sandbox planted again after the first audit', async () => {
    const ws = join(t.root, `ws-${backend}`);
    const marker = join(t.root, `marker-${backend}`);
    mkdirSync(ws);
    spawnSync('git', ['init', '-q', ws]);
    writeFileSync(join(ws, 'shared.inc'), '[user]\n\tname = shared\n');
    writeFileSync(join(t.home, '.gitconfig'), `[include]\n\tpath = ${ws}/shared.inc\n`);
    const plantInc = `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n' >> shared.inc`;
    const hostStatus = () => {
      spawnSync('git', ['-C', ws, 'status'], { env: t.env, stdio: 'ignore' });
      return existsSync(marker);
    };
    const report = join(t.root, `report-${backend}.json`);
    const run = (script: string, extra: string[] = []) =>
      startSbx(['--backend', backend, ...extra, '--', 'sh', '-c', script], { env: t.env, cwd: ws });
    const a = run(`${plantInc} && echo planted && ${waitFor('go-a')}`);
    await a.line(/^planted$/);
    const b = run(`echo started && ${waitFor('go-b')} && ${plantInc}`, ['--report-file', report]);
    await b.line(/^started$/);
    writeFileSync(join(ws, 'go-a'), '');
    const ranA = await a.done;
    expect(ranA.err).toMatch(/git-state.*shared\.inc: included config: program entry added: core\.fsmonitor/);
    expect(hostStatus()).toBe(false);
    writeFileSync(join(ws, 'go-b'), '');
    const ranB = await b.done;
    expect(ranB.code, ranB.err).toBe(0);
    expect(hostStatus()).toBe(false);
    const details = readReport(report)
      .violations.filter((v) => v.kind === 'git-state')
      .map((v) => v.detail);
    expect(details).toEqual([
      expect.stringMatching(/shared\.inc: included config: program entry added: core\.fsmonitor=.*; restored$/),
    ]);
  });
});
