// The auditor's host half against hostile trees, called directly (src/git/host/auditor.ts): no
// input turns the audit into a throw. A FIFO or a link where git reads a config, a hook that is a
// link to a host file, a directory it cannot read, a bound hit: each is a git-state violation naming
// the path, and the links are never followed (the host file they name is left as it was).
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditGitState, type GitAuditPlan, snapshotGitState } from '../../../src/git/host/auditor.js';
import { DEFAULT_WALK_LIMITS } from '../../../src/git/host/walk.js';
import { makeTempDir } from '../../helpers/tmp.js';

/** A workspace holding a repository with one commit; `outside` is a host directory beside it. */
function tree(): { ws: string; outside: string } {
  const root = makeTempDir('sbx-gitaudit-');
  const ws = join(root, 'ws');
  const outside = join(root, 'outside');
  mkdirSync(ws);
  mkdirSync(outside);
  spawnSync('git', ['init', '-q', ws]);
  return { ws, outside };
}

const plan = (ws: string, over: Partial<GitAuditPlan> = {}): GitAuditPlan => ({
  roots: [ws],
  globalConfigs: [],
  session: 'S',
  uid: process.getuid?.() ?? -1,
  ...over,
});

/** Snapshot, `act` (the sandbox's part), audit: the details and whether the audit finished. */
function audited(ws: string, act: () => void, over: Partial<GitAuditPlan> = {}) {
  const p = plan(ws, over);
  const before = snapshotGitState(p);
  act();
  const { violations, incomplete } = auditGitState(p, before);
  return { details: violations.map((v) => v.detail.replaceAll(ws, '<ws>')), incomplete };
}

describe('the git-state auditor on hostile trees', () => {
  it('nothing changed: nothing said', () => {
    const { ws } = tree();
    expect(audited(ws, () => {})).toEqual({ details: [], incomplete: false });
  });

  it('a FIFO put where git reads the config: reported and replaced by the recorded bytes, sbx never blocks on it', () => {
    const { ws } = tree();
    const config = join(ws, '.git/config');
    const text = readFileSync(config, 'utf8');
    const r = audited(ws, () => {
      rmSync(config);
      expect(spawnSync('mkfifo', [config]).status).toBe(0);
    });
    expect(r).toEqual({
      details: ['<ws>/.git/config: program entry added: (config not readable: other, 0 bytes); restored'],
      incomplete: false,
    });
    expect(readFileSync(config, 'utf8')).toBe(text);
  });

  it('a config replaced by a link to a host file: the link is replaced, the host file is never written', () => {
    const { ws, outside } = tree();
    const host = join(outside, 'gitconfig');
    writeFileSync(host, '[core]\n\tfsmonitor = evil\n');
    const config = join(ws, '.git/config');
    const r = audited(ws, () => {
      rmSync(config);
      symlinkSync(host, config);
    });
    expect(r.details).toEqual([`<ws>/.git/config: program entry added: (config is a link to ${host}); restored`]);
    expect(readFileSync(host, 'utf8')).toBe('[core]\n\tfsmonitor = evil\n');
    expect(existsSync(config) && !readlinkSafe(config)).toBe(true);
  });

  it('a hook that is a link to a host file: removed, the host file left', () => {
    const { ws, outside } = tree();
    const host = join(outside, 'script');
    writeFileSync(host, '#!/bin/sh\n');
    const r = audited(ws, () => symlinkSync(host, join(ws, '.git/hooks/pre-commit')));
    expect(r.details).toEqual(['<ws>/.git/hooks/pre-commit: hook added; removed']);
    expect(readFileSync(host, 'utf8')).toBe('#!/bin/sh\n');
  });

  it('a directory made where a hook would be, then the hooks directory made 0555: quarantined, the mode given back', () => {
    const { ws } = tree();
    const hooks = join(ws, '.git/hooks');
    const r = audited(ws, () => {
      mkdirSync(join(hooks, 'pre-commit'), { mode: 0o555 });
      chmodSync(hooks, 0o555);
    });
    expect(r).toEqual({
      details: ['<ws>/.git/hooks/pre-commit: hook added; quarantined as pre-commit.sbx-quarantine-S'],
      incomplete: false,
    });
    expect(existsSync(join(hooks, 'pre-commit'))).toBe(false);
    expect(statSync(hooks).mode & 0o777).toBe(0o555);
    chmodSync(hooks, 0o755); // for the temp dir's removal
  });

  it('a recorded repository whose directory is swapped for a link to a host repository: the host one is left alone', () => {
    const { ws, outside } = tree();
    const nested = join(ws, 'node_modules/sub');
    spawnSync('git', ['init', '-q', nested]);
    const host = join(outside, 'repo');
    spawnSync('git', ['init', '-q', host]);
    spawnSync('git', ['-C', host, 'config', 'core.fsmonitor', 'the user’s own']);
    const r = audited(ws, () => {
      spawnSync('mv', [nested, `${nested}2`]);
      symlinkSync(host, nested);
    });
    // The moved repository is the one recorded (same identity); the link is followed nowhere.
    expect(r).toEqual({ details: [], incomplete: false });
    expect(existsSync(join(host, '.git/HEAD'))).toBe(true);
  });

  it('a change reached through a directory the run made a link: not repaired through it, said, incomplete', () => {
    const { ws, outside } = tree();
    const shared = join(ws, 'shared');
    mkdirSync(shared);
    writeFileSync(join(shared, 'x.inc'), '[user]\n\tname = x\n');
    spawnSync('git', ['-C', ws, 'config', 'include.path', '../shared/x.inc']);
    const hostFile = join(outside, 'x.inc');
    const r = audited(ws, () => {
      writeFileSync(hostFile, '[core]\n\teditor = evil\n');
      spawnSync('mv', [shared, `${shared}.old`]);
      symlinkSync(outside, shared);
    });
    expect(r.incomplete).toBe(true);
    expect(r.details).toEqual([
      '<ws>/shared/x.inc: included config: program entry added: core.editor=evil; NOT repaired (a directory above it is a link: not followed): remove it before running git there',
    ]);
    expect(readFileSync(hostFile, 'utf8')).toBe('[core]\n\teditor = evil\n');
  });

  it('a .git file pointing through a link loop: git cannot open it either, nothing to say', () => {
    const { ws } = tree();
    const r = audited(ws, () => {
      symlinkSync('loop-b', join(ws, 'loop-a'));
      symlinkSync('loop-a', join(ws, 'loop-b'));
      mkdirSync(join(ws, 'sub'));
      writeFileSync(join(ws, 'sub/.git'), `gitdir: ${ws}/loop-a/x\n`);
    });
    expect(r).toEqual({ details: [], incomplete: false });
  });

  // Host git, as the same user, may open it again: a directory of the user's own is read as the user
  // can, its mode given back. As root it is readable anyway.
  it('a git dir armed below a directory the run made unreadable (chmod 0): found, disarmed, the mode given back', () => {
    const { ws } = tree();
    const hidden = join(ws, 'hidden');
    const r = audited(ws, () => {
      mkdirSync(hidden);
      spawnSync('git', ['init', '-q', join(hidden, 'x')]);
      spawnSync('git', ['-C', join(hidden, 'x'), 'config', 'core.fsmonitor', 'evil']);
      chmodSync(hidden, 0);
    });
    expect(r).toEqual({
      details: [
        '<ws>/hidden/x/.git: new git dir that names programs: core.fsmonitor=evil; quarantined as .git.sbx-quarantine-S; its HEAD quarantined as HEAD.sbx-quarantine-S',
      ],
      incomplete: false,
    });
    expect(statSync(hidden).mode & 0o7777).toBe(0);
    chmodSync(hidden, 0o755); // for the temp dir's removal
  });

  it('the entry bound: named, incomplete', () => {
    const { ws } = tree();
    const limits = { ...DEFAULT_WALK_LIMITS, maxEntries: 50 };
    const r = audited(
      ws,
      () => {
        for (let i = 0; i < 60; i++) writeFileSync(join(ws, `f${i}`), '');
      },
      { limits },
    );
    expect(r.incomplete).toBe(true);
    expect(r.details).toEqual([
      '<ws>: more than 50 entries in the writable trees: the rest was not audited; inspect it before running git there',
    ]);
  });

  it('a .git file pointing into objects/ (where the walk does not go): the git dir there is still audited', () => {
    const { ws } = tree();
    const r = audited(ws, () => {
      const hidden = join(ws, '.git/objects/ab/evil');
      mkdirSync(join(hidden, 'objects'), { recursive: true });
      mkdirSync(join(hidden, 'refs'));
      writeFileSync(join(hidden, 'HEAD'), 'ref: refs/heads/main\n');
      writeFileSync(join(hidden, 'config'), '[core]\n\tpager = evil\n');
      mkdirSync(join(ws, 'sub'));
      writeFileSync(join(ws, 'sub/.git'), `gitdir: ${hidden}\n`);
    });
    expect(r.details).toEqual([
      '<ws>/.git/objects/ab/evil: new git dir that names programs: core.pager=evil; quarantined as evil.sbx-quarantine-S; its HEAD quarantined as HEAD.sbx-quarantine-S',
    ]);
  });
});

function readlinkSafe(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

describe('two runs in one repository at once', () => {
  // Run B starts while run A is inside: B's snapshot holds A's plant. A's audit sets A's change aside;
  // had B's audit put back what its snapshot recorded, it would have written A's plant back for the
  // host's next commit. A rewritten hook is set aside by every audit, never put back in its place.
  it("a hook run A rewrote, recorded by run B's snapshot, is active after neither audit", () => {
    const { ws, outside } = tree();
    const marker = join(outside, 'marker');
    const hook = join(ws, '.git/hooks/pre-commit');
    writeFileSync(hook, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const p = (session: string) => plan(ws, { session });
    const beforeA = snapshotGitState(p('A'));
    writeFileSync(hook, `#!/bin/sh\ntouch ${marker}\n`);
    const beforeB = snapshotGitState(p('B'));
    const a = auditGitState(p('A'), beforeA);
    const b = auditGitState(p('B'), beforeB);
    expect([a.incomplete, b.incomplete]).toEqual([false, false]);
    expect(a.violations.map((v) => v.detail.replaceAll(ws, '<ws>'))).toEqual([
      '<ws>/.git/hooks/pre-commit: hook rewritten; quarantined as pre-commit.sbx-quarantine-A; the one before kept as pre-commit.sbx-before.sbx-quarantine-A',
    ]);
    expect(b.violations).toEqual([]);
    expect(existsSync(hook)).toBe(false);
    expect(readFileSync(`${hook}.sbx-before.sbx-quarantine-A`, 'utf8')).toBe('#!/bin/sh\nexit 0\n');
    const env = {
      ...process.env,
      GIT_AUTHOR_NAME: 'a',
      GIT_AUTHOR_EMAIL: 'a@b',
      GIT_COMMITTER_NAME: 'a',
      GIT_COMMITTER_EMAIL: 'a@b',
    };
    spawnSync('git', ['-C', ws, 'commit', '-q', '--allow-empty', '-m', 'next'], { env });
    expect(existsSync(marker)).toBe(false);
  });
});
