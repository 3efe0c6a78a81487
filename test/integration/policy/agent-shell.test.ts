// Issue 24 end to end: every string of the everyday corpus (test/helpers/agent-shell-corpus.ts) that
// the agent profile allows runs under `-p agent --shell` with the real /bin/sh in the sandbox and
// exits 0, in a real git repository (revisions, an upstream, cd into a package); and an offline
// `npm install` is named on stderr before it starts, not refused. Runs as whoever runs the suite
// (root, and an unprivileged user in CI). npm only ever sees a closed loopback port as its registry.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYDAY } from '../../helpers/agent-shell-corpus.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
const git = (...args: string[]) => {
  const r = spawnSync('git', args, { cwd: t.workspace, env: t.env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
};
/** npm never reaches out: a closed loopback port is its registry, no retries, no update check. */
const NPM_ENV = [
  'npm_config_registry=http://127.0.0.1:1/',
  'npm_config_fetch_retries=0',
  'npm_config_update_notifier=false',
];
const envFlags = NPM_ENV.flatMap((e) => ['--env', e]);

describe.skipIf(SKIP_INTEGRATION)('agent --shell: the everyday corpus runs with the real /bin/sh (real bwrap)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('agent-shell');
    const files: Record<string, string> = {
      'README.md': '# fixture\nline 2\nline 3\n',
      'src/a.ts': 'export const a = "foo";\n',
      'src/b.ts': 'export const b = 2;\n',
      'sub/package.json': JSON.stringify({ name: 'sub', version: '1.0.0', scripts: { test: 'echo sub-ok' } }),
      'package.json': JSON.stringify({ name: 'top', version: '1.0.0', scripts: { test: 'echo top-ok' } }),
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(t.workspace, path, '..'), { recursive: true });
      writeFileSync(join(t.workspace, path), text);
    }
    const id = ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid'];
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git(...id, 'commit', '-qm', 'one');
    git('branch', 'up');
    writeFileSync(join(t.workspace, 'src/a.ts'), 'export const a = "foo bar";\n');
    git(...id, 'commit', '-qam', 'two');
    git('branch', '-q', '--set-upstream-to=up');
  });
  afterAll(() => t?.cleanup());

  const allowed = EVERYDAY.filter(([, e]) => e === 'allow').map(([s]) => s);
  it.each(allowed.map((s) => [JSON.stringify(s), s]))(
    '%s exits 0',
    async (_, script) => {
      const r = await runSbx(['-p', 'agent', '--approval', 'never', ...envFlags, '--shell', script!], {
        env: t.env,
        cwd: t.workspace,
      });
      expect(r.code, `${r.err}\n${r.out}`).toBe(0);
      expect(r.err).not.toMatch(/^sbx: /m);
    },
    30_000,
  );

  it('what is asked about is refused without a terminal, and never runs', async () => {
    const r = await runSbx(['-p', 'agent', '--approval', 'never', '--shell', 'od -c README.md | head -2'], {
      env: t.env,
      cwd: t.workspace,
    });
    expect(r.code).toBe(126);
    expect(r.out).toBe('');
    expect(r.err).toContain('approvals are off (--approval never)');
  });
});

describe.skipIf(SKIP_INTEGRATION)('offline npm install: named at once, not refused (real bwrap)', () => {
  let u: TestHost;
  beforeAll(() => {
    requireIntegrationPrerequisites();
    u = makeTestHost('offline-npm');
    writeFileSync(
      join(u.workspace, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', dependencies: { 'left-pad': '1.3.0' } }),
    );
  });
  afterAll(() => u?.cleanup());

  it('-p untrusted -- npm install: the notice is the first line on stderr; npm then fails on its own', async () => {
    const r = await runSbx(['-p', 'untrusted', '--timeout', '60s', ...envFlags, '--', 'npm', 'install'], {
      env: u.env,
      cwd: u.workspace,
      timeoutMs: 90_000,
    });
    expect(r.err.split('\n')[0]).toBe(
      'sbx: npm install needs the network, which this profile does not give (network: none); it will fail or hang. ' +
        'Allow its registry with --allow-domain registry.npmjs.org, or use -p network',
    );
    // npm ran and failed (no registry): not sbx's refusal (126), nor its timeout (124).
    expect(r.code).not.toBe(126);
    expect(r.code).not.toBe(124);
    expect(r.code).not.toBe(0);
  }, 120_000);

  it('git push offline is still refused at once, with no notice', async () => {
    const r = await runSbx(['-p', 'untrusted', '--', 'git', 'push'], { env: u.env, cwd: u.workspace });
    expect(r.code).toBe(126);
    expect(r.err).toContain('git push needs the network');
    expect(r.err).not.toContain('it will fail or hang');
  });
});
