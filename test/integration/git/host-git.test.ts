// The git-state auditor's promise (src/git/, docs/SECURITY.md "Git state: what a later host git
// runs"): no later host git command runs anything a sandbox wrote. Each attack is planted for real:
// first unsandboxed (the control: the host's next `git status` or commit writes the marker), then by
// a sandboxed run, after which the same host git command writes no marker and the report names the
// exact git-state violation. Real bwrap via bin/sbx.js; the attacks that need no bwrap-only layout
// again under nsjail (when a binary is found) and landlock. Runs as root and as a normal user.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { findNsjail } from '../nsjail/harness.js';

const GIT_ID = ['-c', 'user.name=host', '-c', 'user.email=host@example.invalid'];
const nsjail = findNsjail();
const landlockHelper = existsSync(join(REPO_ROOT, 'dist', 'sbx-landlock'));
const BACKENDS = ['bwrap', ...('path' in nsjail ? ['nsjail'] : []), ...(landlockHelper ? ['landlock'] : [])];

let t: TestHost;
let n = 0;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('githost');
  if ('path' in nsjail) t.env.SBX_NSJAIL = nsjail.path;
});
afterAll(() => {
  if (!t) return;
  // Some plants make their directory 0555 (an attack that keeps sbx from cleaning it): as a user, not
  // even rm could empty them. A tree deeper than PATH_MAX: GNU chmod and rm walk it by descriptor,
  // where Node's rmSync cannot.
  spawnSync('chmod', ['-R', 'u+w', t.root]);
  spawnSync('rm', ['-rf', t.root]);
});

// The global config cases write ~/.gitconfig; no other case may see it.
afterEach(() => {
  if (t) rmSync(join(t.home, '.gitconfig'), { force: true });
});

function git(cwd: string, ...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync('git', [...GIT_ID, ...args], { cwd, env: t.env, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A repository with one commit; `setup` adds what the attack needs before anything runs. */
function freshRepo(setup?: (repo: string) => void): string {
  const repo = join(t.root, `repo-${++n}`);
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'init');
  setup?.(repo);
  return repo;
}

/** A config value that runs a command writing `marker` (and fails, so git goes on without it). */
const runs = (marker: string) => `touch ${marker}; false`;

interface Attack {
  /** The repository layout before the run (both copies get it). */
  setup?: (repo: string) => void;
  /** The plant, run in the repository: by sh on the host (control), by sbx (sandboxed). */
  plant: (marker: string) => string;
  /** The later host git command, run in the repository. */
  probe: (repo: string) => void;
}

interface Sandboxed {
  repo: string;
  code: number | null;
  /** The git-state violations' details, the repository as `<ws>` and the session as `S`. */
  details: string[];
  ledger: Record<string, unknown>[];
}

function probed(attack: Attack, repo: string, marker: string): boolean {
  rmSync(marker, { force: true });
  attack.probe(repo);
  return existsSync(marker);
}

/** The control: planted unsandboxed, the host git command writes the marker. */
async function control(attack: Attack): Promise<void> {
  const marker = join(t.root, `control-${++n}`);
  const repo = freshRepo(attack.setup);
  expect((await runHost(['sh', '-c', attack.plant(marker)], { env: t.env, cwd: repo })).code).toBe(0);
  expect(probed(attack, repo, marker)).toBe(true);
}

/** The same plant by a sandboxed run: the host git command writes nothing. */
async function sandboxed(attack: Attack, backend = 'bwrap'): Promise<Sandboxed> {
  const marker = join(t.root, `sandboxed-${++n}`);
  const repo = freshRepo(attack.setup);
  const [report, ledger] = [join(t.root, `report-${n}.json`), join(t.root, `ledger-${n}.jsonl`)];
  const args = ['--backend', backend, '--report-file', report, '--audit-file', ledger, '--', 'sh', '-c'];
  const r = await runSbx([...args, attack.plant(marker)], { env: t.env, cwd: repo });
  expect(probed(attack, repo, marker)).toBe(false);
  const parsed = readReport(report);
  const details = parsed.violations
    .filter((v) => v.kind === 'git-state')
    .map((v) => v.detail.replaceAll(repo, '<ws>').replaceAll(parsed.sessionId, 'S'));
  const lines = readFileSync(ledger, 'utf8').split('\n').filter(Boolean);
  return { repo, code: r.code, details, ledger: lines.map((l) => JSON.parse(l)) };
}

/** `git init --separate-git-dir`: `<repo>/<name>/.git` names `<repo>/.store/<name>.git`. */
function separateGitDir(repo: string, name: string): void {
  mkdirSync(join(repo, '.store'), { recursive: true });
  expect(git(repo, 'init', '-q', `--separate-git-dir=${repo}/.store/${name}.git`, `${repo}/${name}`).code).toBe(0);
}

const status =
  (sub = '.') =>
  (repo: string) =>
    void git(join(repo, sub), 'status');
const commit =
  (sub = '.') =>
  (repo: string) =>
    void git(join(repo, sub), 'commit', '-q', '--allow-empty', '-m', 'x');
const hookPlant = (dir: string, marker: string) =>
  `printf '#!/bin/sh\\ntouch ${marker}\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`;
const fsmonitor = (sub: string, marker: string) => `git -C ${sub} config core.fsmonitor '${runs(marker)}'`;
const fetch =
  (sub = '.') =>
  (repo: string) =>
    void git(join(repo, sub), 'fetch', '-q');
/** `dir` made a git dir whose config runs a command at the next `git fetch` there. */
const bareRepo = (dir: string, marker: string) =>
  `cd ${dir} && mkdir objects refs && echo 'ref: refs/heads/main' > HEAD && ` +
  `printf '[core]\\n\\tsshCommand = "${runs(marker)}"\\n[remote "origin"]\\n\\turl = ssh://example.invalid/x\\n' > config`;
const bareEntries = (marker: string) => `core.sshcommand=${runs(marker)}`;
const disarmed = (path: string, why: string) =>
  `<ws>/${path}: new git dir that ${why}; quarantined as ${basename(path)}.sbx-quarantine-S; its HEAD quarantined as HEAD.sbx-quarantine-S`;

interface Case extends Attack {
  expected: (marker: string) => string[];
}

const ATTACKS: Record<string, Case> = {
  'a linked worktree whose commondir is rewritten to a copied git dir with a fsmonitor': {
    setup: (repo) => void git(repo, 'worktree', 'add', '-q', '--detach', `${repo}-wt`),
    plant: (m) =>
      `cp -r .git evil && git config -f evil/config core.fsmonitor '${runs(m)}' && ` +
      `echo "$PWD/evil" > .git/worktrees/$(ls .git/worktrees)/commondir`,
    probe: (repo) => void git(`${repo}-wt`, 'status'),
    // The copy's own worktree entry points back into the copy: a git dir reading config from no git dir that was there before.
    expected: (m) => [
      expect.stringMatching(/^<ws>\/\.git\/worktrees\/repo-\d+-wt\/commondir: rewritten; restored$/),
      expect.stringMatching(
        /^<ws>\/evil\/worktrees\/repo-\d+-wt: new git dir that its commondir names <ws>\/evil; quarantined/,
      ),
      disarmed('evil', `names programs: core.fsmonitor=${runs(m)}`),
    ],
  },
  // git 2.39 ignores core.worktree in a directory it discovers as bare (`git status`: "must be run in a
  // work tree"), but `git fetch` runs there, and with it core.sshCommand.
  'the .git invalidated and the workspace root made a git dir (core.sshCommand)': {
    plant: (m) => `mv .git/HEAD .git/HEAD.x && ${bareRepo('.', m)}`,
    probe: fetch(),
    expected: (m) => [
      '<ws>/.git/HEAD: no longer a valid HEAD (git would skip this git dir); restored',
      `<ws>/HEAD: new git dir that names programs: ${bareEntries(m)}; quarantined as HEAD.sbx-quarantine-S`,
    ],
  },
  'a subdirectory made a git dir': {
    setup: (repo) => mkdirSync(join(repo, 'sub')),
    plant: (m) => bareRepo('sub', m),
    probe: fetch('sub'),
    expected: (m) => [disarmed('sub', `names programs: ${bareEntries(m)}`)],
  },
  'a repository whose .git is a gitdir: file naming a git dir inside the workspace': {
    setup: (repo) => separateGitDir(repo, 'sub'),
    plant: (m) => fsmonitor('sub', m),
    probe: status('sub'),
    expected: (m) => [`<ws>/.store/sub.git/config: program entry added: core.fsmonitor=${runs(m)}; restored`],
  },
  'a repository whose .git is a link to a git dir inside the workspace': {
    setup: (repo) => {
      separateGitDir(repo, 'ln');
      rmSync(join(repo, 'ln/.git'));
      symlinkSync('../.store/ln.git', join(repo, 'ln/.git'));
    },
    plant: (m) => fsmonitor('ln', m),
    probe: status('ln'),
    expected: (m) => [`<ws>/.store/ln.git/config: program entry added: core.fsmonitor=${runs(m)}; restored`],
  },
  'a nested repository under .venv (pruned by the secret scan)': {
    setup: (repo) => void git(repo, 'init', '-q', `${repo}/.venv/src/pkg`),
    plant: (m) => fsmonitor('.venv/src/pkg', m),
    probe: status('.venv/src/pkg'),
    expected: (m) => [`<ws>/.venv/src/pkg/.git/config: program entry added: core.fsmonitor=${runs(m)}; restored`],
  },
  'a hook in a nested repository under node_modules': {
    setup: (repo) => void git(repo, 'init', '-q', `${repo}/node_modules/x`),
    plant: (m) => hookPlant('node_modules/x/.git/hooks', m),
    probe: commit('node_modules/x'),
    expected: () => ['<ws>/node_modules/x/.git/hooks/pre-commit: hook added; removed'],
  },
  'a nested repository whose hooks directory is replaced by a link to planted hooks': {
    setup: (repo) => void git(repo, 'init', '-q', `${repo}/node_modules/x`),
    plant: (m) =>
      `mkdir evilhooks && ${hookPlant('evilhooks', m)} && rm -rf node_modules/x/.git/hooks && ` +
      'ln -s "$PWD/evilhooks" node_modules/x/.git/hooks',
    probe: commit('node_modules/x'),
    expected: () => [
      '<ws>/node_modules/x/.git/hooks: hooks directory replaced by a link to <ws>/evilhooks; quarantined as hooks.sbx-quarantine-S',
    ],
  },
  'a new submodule staged with a fsmonitor in its config': {
    plant: (m) =>
      `git init -q sub && git -C sub ${GIT_ID.join(' ')} commit -q --allow-empty -m s && ${fsmonitor('sub', m)} && ` +
      'git add sub 2>/dev/null',
    probe: status(),
    expected: (m) => [disarmed('sub/.git', `names programs: core.fsmonitor=${runs(m)}`)],
  },
  'a new .git/modules/<name> behind a gitdir: file': {
    plant: (m) =>
      `mkdir -p .git/modules && git init -q --separate-git-dir=.git/modules/evil sub && git -C sub ${GIT_ID.join(' ')} commit -q --allow-empty -m s && ` +
      `${fsmonitor('sub', m)} && git add sub 2>/dev/null`,
    probe: status(),
    expected: (m) => [disarmed('.git/modules/evil', `names programs: core.fsmonitor=${runs(m)}`)],
  },
  'a hook in a nested repository whose hooks directory is then made 0555': {
    setup: (repo) => void git(repo, 'init', '-q', `${repo}/node_modules/n`),
    plant: (m) => `${hookPlant('node_modules/n/.git/hooks', m)} && chmod 0555 node_modules/n/.git/hooks`,
    probe: commit('node_modules/n'),
    expected: () => ['<ws>/node_modules/n/.git/hooks/pre-commit: hook added; removed'],
  },
  'a commondir planted in a nested repository whose .git is then made 0555': {
    setup: (repo) => void git(repo, 'init', '-q', `${repo}/n`),
    plant: (m) =>
      `cp -r n/.git evil && git config -f evil/config core.fsmonitor '${runs(m)}' && ` +
      'echo "$PWD/evil" > n/.git/commondir && chmod 0555 n/.git',
    probe: status('n'),
    expected: (m) => [
      '<ws>/n/.git/commondir: added; removed',
      disarmed('evil', `names programs: core.fsmonitor=${runs(m)}`),
    ],
  },
  'a file in the workspace that ~/.gitconfig includes, given a fsmonitor': {
    setup: (repo) => {
      writeFileSync(join(repo, 'shared.inc'), '[user]\n\tname = shared\n');
      writeFileSync(join(t.home, '.gitconfig'), `[include]\n\tpath = ${repo}/shared.inc\n`);
    },
    plant: (m) => `printf '[core]\\n\\tfsmonitor = "${runs(m)}"\\n' >> shared.inc`,
    probe: status(),
    expected: (m) => [`<ws>/shared.inc: included config: program entry added: core.fsmonitor=${runs(m)}; restored`],
  },
  'a hook in the workspace directory that the global core.hooksPath names': {
    setup: (repo) => {
      mkdirSync(join(repo, 'hk'));
      writeFileSync(join(t.home, '.gitconfig'), `[core]\n\thooksPath = ${repo}/hk\n`);
    },
    plant: (m) => hookPlant('hk', m),
    probe: commit(),
    expected: () => ['<ws>/hk/pre-commit: hook added; removed'],
  },
};

describe.skipIf(SKIP_INTEGRATION)('no later host git runs what a sandbox wrote (bwrap)', () => {
  it.each(Object.keys(ATTACKS))('%s', async (name) => {
    const attack = ATTACKS[name]!;
    await control(attack);
    const marker = join(t.root, `sandboxed-${n + 1}`);
    const r = await sandboxed(attack);
    expect(r.details).toEqual(attack.expected(marker));
    expect(r.code).toBe(0);
  });
});

describe.skipIf(SKIP_INTEGRATION)('real git work inside the sandbox is left alone', () => {
  it('git clone, git submodule add and git worktree add: nothing reported, nothing moved', async () => {
    const repo = freshRepo((r) => {
      git(r, 'init', '-q', '-b', 'main', 'src-repo');
      git(join(r, 'src-repo'), 'commit', '-q', '--allow-empty', '-m', 'src');
    });
    const report = join(t.root, `report-${++n}.json`);
    const work =
      'git clone -q ./src-repo cloned && ' +
      `git ${GIT_ID.join(' ')} -c protocol.file.allow=always submodule add -q ./src-repo sub && ` +
      'git worktree add -q --detach wt';
    const r = await runSbx(['--report-file', report, '--', 'sh', '-c', work], { env: t.env, cwd: repo });
    expect([r.code, r.err]).toEqual([0, expect.any(String)]);
    expect(readReport(report).violations.filter((v) => v.kind === 'git-state')).toEqual([]);
    for (const path of ['cloned/.git/HEAD', '.git/modules/sub/HEAD', 'sub/.git', 'wt/.git'])
      expect(existsSync(join(repo, path))).toBe(true);
    expect(git(join(repo, 'sub'), 'status', '--porcelain').code).toBe(0);
  });
});

describe.skipIf(SKIP_INTEGRATION)('the same attacks under the other backends', () => {
  const shared = [
    'a repository whose .git is a gitdir: file naming a git dir inside the workspace',
    'a nested repository under .venv (pruned by the secret scan)',
    'a hook in a nested repository whose hooks directory is then made 0555',
    'a new submodule staged with a fsmonitor in its config',
    'a subdirectory made a git dir',
  ];
  for (const backend of BACKENDS.filter((b) => b !== 'bwrap')) {
    it.each(shared)(`${backend}: %s`, async (name) => {
      const attack = ATTACKS[name]!;
      const marker = join(t.root, `sandboxed-${n + 1}`);
      const r = await sandboxed(attack, backend);
      expect(r.details).toEqual(attack.expected(marker));
      expect(r.code).toBe(0);
    });
  }
});

describe.skipIf(SKIP_INTEGRATION)('an audit that cannot finish: loud, 125, report and ledger written', () => {
  const plantCommondir = (m: string) =>
    `cp -r .git evil && git config -f evil/config core.fsmonitor '${runs(m)}' && echo "$PWD/evil" > .git/commondir`;
  const deep = (levels: number, name: string) =>
    `i=0; d=.; while [ $i -lt ${levels} ]; do d=$d/${name}; i=$((i+1)); done; mkdir -p $d`;

  it('an 811-deep directory beside a planted commondir: the commondir still goes, the depth is named', async () => {
    const attack: Attack = { plant: (m) => `${deep(811, 'd')} && ${plantCommondir(m)}`, probe: status() };
    await control(attack);
    const marker = join(t.root, `sandboxed-${n + 1}`);
    const r = await sandboxed(attack);
    expect(r.code).toBe(125);
    expect(r.details).toEqual([
      '<ws>/.git/commondir: added; removed',
      disarmed('evil', `names programs: core.fsmonitor=${runs(marker)}`),
      `<ws>${'/d'.repeat(257)}: deeper than 256 directories or 4000 bytes: not audited; inspect it before running git there`,
      'the command exited 0; sbx exits 125: the git state was not all audited or repaired',
    ]);
    const [record] = r.ledger.filter((l) => l.type === 'run');
    expect(record).toMatchObject({
      exitCode: 125,
      violations: expect.arrayContaining([expect.objectContaining({ kind: 'git-state' })]),
    });
  });

  it('a nested repository with a fsmonitor moved deeper than PATH_MAX: named, 125', async () => {
    // Each step is made from the one before (cd), as no single path could name the last.
    const name = 'a'.repeat(200);
    const attack: Attack = {
      // Under node_modules: bwrap holds no nested repository's config there, so the plant succeeds.
      setup: (repo) => void git(repo, 'init', '-q', `${repo}/node_modules/n`),
      plant: (m) =>
        `${fsmonitor('node_modules/n', m)} && top=$PWD && i=0 && mkdir far && cd far && ` +
        `while [ $i -lt 25 ]; do mkdir ${name} && cd ${name}; i=$((i+1)); done && mv "$top/node_modules/n" .`,
      probe: () => {},
    };
    const r = await sandboxed(attack);
    expect(r.code).toBe(125);
    expect(r.details).toEqual([
      expect.stringMatching(
        new RegExp(
          `^<ws>/far(/${name})+: deeper than 256 directories or 4000 bytes: not audited; inspect it before running git there$`,
        ),
      ),
      'the command exited 0; sbx exits 125: the git state was not all audited or repaired',
    ]);
    expect(r.ledger.filter((l) => l.type === 'run')).toEqual([expect.objectContaining({ exitCode: 125 })]);
  });
});
