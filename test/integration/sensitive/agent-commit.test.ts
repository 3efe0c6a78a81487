// Masking leaves real work and the repository unharmed (issue 13), end to end through real bwrap via
// bin/sbx.js under `-p agent`: a repository with tracked files named like secrets, an ignored .env,
// an untracked key and a .git/config carrying a token, a credential helper and an auth header. An
// agent edits one file and commits it with git run directly (agent denies shells): the host's
// history gets exactly that change by the repository's author, while the credentials and the
// untracked secrets stay unreadable inside. Each probe has its unsandboxed control.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { findNsjail } from '../nsjail/harness.js';

const MARKER = `SBX-PLANTED-${randomBytes(6).toString('hex')}`;
const TOKEN = `ghp_${randomBytes(10).toString('hex')}`;
const HEADER = `Bearer hdr-${randomBytes(8).toString('hex')}`;
const WHERE =
  'if the command needed one, let it in with --unmask GLOB (or sensitive.except in the profile); --verbose lists them';
const TRACKED = `export const secretsSchema = '${randomBytes(4).toString('hex')}';\n`;

function git(cwd: string, ...args: string[]): string {
  const env = { PATH: process.env.PATH!, HOME: cwd, GIT_CONFIG_NOSYSTEM: '1' };
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A repository whose identity and credentials live in its own .git/config (HOME has none). */
function makeRepo(ws: string, files: Record<string, string>): void {
  git(ws, 'init', '-q', '-b', 'main');
  git(ws, 'config', 'user.name', 'Repo Author');
  git(ws, 'config', 'user.email', 'author@example.invalid');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(ws, path, '..'), { recursive: true });
    writeFileSync(join(ws, path), text);
  }
  git(ws, 'add', '-A');
  git(ws, 'commit', '-q', '-m', 'init');
}

describe.skipIf(SKIP_INTEGRATION)('masking keeps git and the build whole (real bwrap via bin/sbx.js, -p agent)', () => {
  let t: TestHost;
  const opts = () => ({ env: t.env, cwd: t.workspace });
  const agent = (...command: string[]) => runSbx(['-p', 'agent', '--', ...command], opts());

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mask');
    const ws = t.workspace;
    makeRepo(ws, { 'src/secrets.ts': TRACKED, 'password-policy.md': '# Password policy\n', '.gitignore': '.env\n' });
    git(ws, 'remote', 'add', 'origin', `https://user:${TOKEN}@example.invalid/x.git`);
    git(ws, 'config', 'credential.helper', `store --file ${join(t.root, 'creds')}`);
    git(ws, 'config', 'http.extraheader', `Authorization: ${HEADER}`);
    writeFileSync(join(ws, '.env'), `API_KEY=${MARKER}\n`);
    mkdirSync(join(ws, 'keys'));
    writeFileSync(join(ws, 'keys', 'dev.pem'), `-----BEGIN PRIVATE KEY-----\n${MARKER}\n`);
  });
  afterAll(() => t?.cleanup());

  it('control: unsandboxed, the secrets and credentials are readable', async () => {
    const r = await runHost(['cat', '.env', 'keys/dev.pem', '.git/config'], opts());
    expect(r.out.split(MARKER)).toHaveLength(3);
    for (const secret of [TOKEN, HEADER, 'store --file']) expect(r.out).toContain(secret);
    expect((await runHost(['git', 'config', '--get-all', 'credential.helper'], opts())).out).toContain('store --file');
  });

  it('.git/config inside keeps identity and remotes, without the token, the helper or the header', async () => {
    const r = await agent('cat', '.git/config');
    expect(r.code).toBe(0);
    for (const secret of [TOKEN, HEADER, 'store --file', '[credential', 'helper =', 'extraheader =']) {
      expect(r.out, secret).not.toContain(secret);
    }
    expect(r.out).toContain('\tname = Repo Author\n');
    expect(r.out).toContain('\turl = https://example.invalid/x.git\n');
    // git itself finds no helper (the default profile: agent does not allow `git config`).
    const helper = await runSbx(['--', 'git', 'config', '--get-all', 'credential.helper'], opts());
    expect([helper.code, helper.out]).toEqual([1, '']);
    const remote = await runSbx(['--', 'git', 'remote', 'get-url', 'origin'], opts());
    expect(remote.out).toBe('https://example.invalid/x.git\n');
  });

  it('.env and keys/dev.pem read empty inside; tracked src/secrets.ts reads its real content', async () => {
    const r = await agent('cat', '.env', 'keys/dev.pem', 'src/secrets.ts', 'password-policy.md');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${TRACKED}# Password policy\n`);
    expect(r.out + r.err).not.toContain(MARKER);
  });

  it('an edit and a commit inside change exactly that file in the host repository, by its author', async () => {
    expect((await agent('git', 'status', '--porcelain')).out).toBe('');
    const edit = await agent('node', '-e', "require('fs').appendFileSync('password-policy.md', 'Rotate yearly.\\n')");
    expect(edit.code).toBe(0);
    expect((await agent('git', 'status', '--porcelain')).out).toBe(' M password-policy.md\n');
    expect((await agent('git', 'add', '-A')).code).toBe(0);
    const commit = await agent('git', 'commit', '-q', '-m', 'policy: rotation');
    expect([commit.code, commit.err]).toEqual([0, '']);

    const ws = t.workspace;
    const head = git(ws, 'show', '--name-status', '--format=%an <%ae>%n%s', 'HEAD');
    expect(head).toBe('Repo Author <author@example.invalid>\npolicy: rotation\n\nM\tpassword-policy.md\n');
    expect(git(ws, 'show', 'HEAD:password-policy.md')).toBe('# Password policy\nRotate yearly.\n');
    // Nothing of the masked files reached the history, and the host's copies are intact.
    const everCommitted = git(ws, 'log', '--all', '--format=', '--name-only').split('\n').filter(Boolean).sort();
    expect(everCommitted).toEqual(['.gitignore', 'password-policy.md', 'password-policy.md', 'src/secrets.ts']);
    expect(readFileSync(join(ws, '.env'), 'utf8')).toBe(`API_KEY=${MARKER}\n`);
    expect(readFileSync(join(ws, '.git', 'config'), 'utf8')).toContain(TOKEN);
    expect(git(ws, 'status', '--porcelain')).toBe('?? keys/\n');
  });

  it('a failing command is told what was masked, without --verbose', async () => {
    const r = await agent('cat', 'keys/dev.pem', 'missing.txt');
    expect(r.code).toBe(1);
    const line = r.err.split('\n').find((l) => l.includes('masked'));
    const paths = `${join(t.workspace, '.env')}, ${join(t.workspace, 'keys/dev.pem')}`;
    expect(line).toBe(`sbx: 2 sensitive files were masked (${paths}); ${WHERE}`);
  });
});

describe.skipIf(SKIP_INTEGRATION)('a tracked file changed since its commit (real bwrap via bin/sbx.js)', () => {
  let t: TestHost;
  const opts = () => ({ env: t.env, cwd: t.workspace });

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mask-changed');
    makeRepo(t.workspace, { 'config/app.key': 'placeholder\n', 'README.md': 'r\n' });
    writeFileSync(join(t.workspace, 'config', 'app.key'), `${MARKER}\n`);
  });
  afterAll(() => t?.cleanup());

  it('control: unsandboxed, git would stage the local change', async () => {
    expect((await runHost(['git', 'status', '--porcelain'], opts())).out).toBe(' M config/app.key\n');
  });

  it('is unreadable inside, and git refuses to stage its stand-in (the commit cannot record it)', async () => {
    const read = await runSbx(['--', 'cat', 'config/app.key'], opts());
    expect(read.code).toBe(1);
    expect(read.err).toContain('config/app.key: Permission denied');
    const add = await runSbx(['--', 'git', 'add', '-A'], opts());
    expect(add.code).toBe(128);
    expect(add.err).toContain('error: open("config/app.key"): Permission denied');
    expect(git(t.workspace, 'diff', '--cached', '--name-only')).toBe('');
    expect(readFileSync(join(t.workspace, 'config', 'app.key'), 'utf8')).toBe(`${MARKER}\n`);
  });
});

// The same generated files under nsjail: the config view and the unreadable stand-in are bound from
// the session directory by both backends. nsjail: $SBX_NSJAIL or the test build; skipped (and said)
// without one.
const nsjail = findNsjail();
if ('missing' in nsjail) console.warn(`[nsjail masking] SKIPPED: ${nsjail.missing}`);

describe.skipIf(SKIP_INTEGRATION || !('path' in nsjail))('the same under --backend nsjail', () => {
  let t: TestHost;
  const opts = () => ({ env: { ...t.env, SBX_NSJAIL: 'path' in nsjail ? nsjail.path : '' }, cwd: t.workspace });

  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('mask-nsjail');
    makeRepo(t.workspace, { 'config/app.key': 'placeholder\n', 'src/secrets.ts': TRACKED });
    git(t.workspace, 'remote', 'add', 'origin', `https://user:${TOKEN}@example.invalid/x.git`);
    writeFileSync(join(t.workspace, 'config', 'app.key'), `${MARKER}\n`);
    writeFileSync(join(t.workspace, '.env'), `${MARKER}\n`);
  });
  afterAll(() => t?.cleanup());

  it('shows .git/config without the token, src/secrets.ts whole, .env empty, the changed key unreadable', async () => {
    const r = await runSbx(['--backend', 'nsjail', '--', 'cat', '.git/config', 'src/secrets.ts', '.env'], opts());
    expect([r.code, r.err]).toEqual([0, '']);
    expect(r.out).toContain('\turl = https://example.invalid/x.git\n');
    expect(r.out.endsWith(TRACKED)).toBe(true);
    expect(r.out).not.toContain(TOKEN);
    expect(r.out).not.toContain(MARKER);
    const key = await runSbx(['--backend', 'nsjail', '--', 'cat', 'config/app.key'], opts());
    expect(key.code).toBe(1);
    expect(key.err).toContain('config/app.key: Permission denied');
  });
});
