// Issue 33 end to end, under the built-in agent profile with real bwrap and the real /bin/sh, git, sed,
// awk, make, tar and npx: ordinary agent commands (the kinds the corpus holds: test/helpers/
// agent-shell-corpus.ts) run and print what they print unsandboxed, in a twin repository; the bypasses
// are refused (126) and nothing of them ran (no marker), where the same string run unsandboxed makes
// its marker (the control: each bypass works outside). Runs as whoever runs the suite.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let control: string;

/** The same repository in both places: files, a planted `bin/ls`, two commits with fixed dates. */
function fixture(dir: string): void {
  const files: Record<string, string> = {
    'README.md': '# fixture\nline 2\nline 3\n',
    'src/a.ts': 'export const a = "foo"; // the api: /api/users\n',
    'src/b.ts': 'export const b = 2;\n',
    'package.json': JSON.stringify({ name: 'top', version: '1.0.0', scripts: { test: 'echo top-ok' } }),
    'bin/ls': '#!/bin/sh\ntouch m-path\n',
    'm.sh': 'touch m-env\n',
  };
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  chmodSync(join(dir, 'bin/ls'), 0o755);
}

const sandboxed = (script: string) =>
  runSbx(['-p', 'agent', '--approval', 'never', '--shell', script], { env: t.env, cwd: t.workspace });
const unsandboxed = (script: string) => runHost(['sh', '-c', script], { env: t.env, cwd: control });

describe.skipIf(SKIP_INTEGRATION)('issue 33 under -p agent (real bwrap, real sh)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('agent-corpus');
    control = join(t.root, 'control');
    mkdirSync(control);
    for (const dir of [t.workspace, control]) {
      fixture(dir);
      const env = { ...t.env, GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z' };
      for (const args of [
        ['init', '-q', '-b', 'main'],
        ['add', '-A'],
      ])
        expect((await runHost(['git', ...args], { env, cwd: dir })).code).toBe(0);
      const id = ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid'];
      expect((await runHost(['git', ...id, 'commit', '-qm', 'first: fix /x'], { env, cwd: dir })).code).toBe(0);
    }
  });
  afterAll(() => t?.cleanup());

  describe('ordinary agent commands run', () => {
    // In order: some change the repository, and both twins change alike.
    const ORDINARY = [
      'grep -rn "/api/users" src',
      'grep -c "// " src/a.ts',
      "echo '// note' >> notes.txt && cat notes.txt",
      'git -c user.name=t -c user.email=t@example.invalid commit -q --allow-empty -m "/ci: skip" && git log -1 --format=%s',
      'git log --grep=/x --format=%s',
      'echo /',
      "sed -n '1,2p' README.md",
      "sed -i 's/line 3/line three/' README.md && tail -1 README.md",
      "awk -F'\"' '{print $2}' src/a.ts",
      'echo hi | tee out.txt && cat out.txt',
      'date +%Y | wc -c',
      'sleep 0.1 && echo slept',
      'du -s src | cut -f2',
      'which ls',
      '[ -f package.json ] && echo yes',
      'for f in src/*.ts; do wc -l "$f"; done',
      'ls src | while read -r f; do echo "$f"; done',
      'if [ -d src ]; then ls src; else echo none; fi',
      "NODE_ENV=test node -e 'console.log(process.env.NODE_ENV)'",
      "export CI=1 && node -e 'console.log(process.env.CI)'",
      'echo "head: $(git log -1 --format=%s)"',
      'time ls src',
      'cd src && cd .. && ls -d src',
      'cd src && ls ..',
      "find . -name '*.ts' -exec grep -l foo {} +",
      "find src -name '*.ts' | xargs grep -c export",
      "nl -ba src/a.ts | sed -n '1p'",
      'git -c user.name=t -c user.email=t@example.invalid commit -q --allow-empty -m "$(cat <<\'EOF\'\nsubject: /path\n\nbody\nEOF\n)" && git log -1 --format=%B',
      'npm --version',
      'npm test 2>&1 | grep -c top-ok',
    ];

    it.each(ORDINARY.map((s) => [JSON.stringify(s), s]))(
      '%s: runs, and prints what it prints unsandboxed',
      async (_, script) => {
        const host = await unsandboxed(script!);
        expect(host.code, host.err).toBe(0);
        const r = await sandboxed(script!);
        expect(r.code, r.err).toBe(0);
        expect(r.out).toBe(host.out);
        expect(r.out).not.toBe('');
      },
      30_000,
    );
  });

  describe('bypasses are refused and nothing runs; unsandboxed, each works', () => {
    // Each makes a marker file named after it when it runs.
    const BYPASSES: [string, string, string][] = [
      ['m-find', "find . -maxdepth 0 -exec sh -c 'touch m-find' \\;", 'commands.deny'],
      ['m-xargs', "echo x | xargs sh -c 'touch m-xargs'", 'commands.deny'],
      ['m-sort', "yes 'touch m-sort' | head -20000 | sort -S 1K --compress-program=sh > /dev/null", 'commands.deny'],
      ['m-make', "make -E 'all:;@touch m-make' all", 'commands.deny'],
      ['m-npx', "npx -c 'touch m-npx; sh -c true'", 'commands.deny'],
      ['m-alias', "git -c alias.x='!touch m-alias' x", 'commands.deny'],
      ['m-tar', "tar -cf a.tar README.md && tar --to-command='touch m-tar; sh -c true' -xf a.tar", 'commands.deny'],
      ['m-awk', 'awk \'BEGIN{system("touch m-awk")}\'', 'commands.deny'],
      ['m-sed', "sed -n '1e touch m-sed' README.md", 'commands.deny'],
      ['m-env', "env -S 'sh m.sh'", 'commands.deny'],
      ['m-timeout', "timeout 5 sh -c 'touch m-timeout'", 'commands.deny'],
      ['m-subst', 'echo "$(sh -c \'touch m-subst\')"', 'commands.deny'],
      ['m-if', "if true; then sh -c 'touch m-if'; fi", 'commands.deny'],
      ['m-path', 'PATH=bin:$PATH ls', 'commands.deny'],
      ['m-passwd', 'cat /etc/passwd > m-passwd', 'paths.absolute'],
      ['m-sedr', "sed 'r /etc/passwd' README.md > m-sedr", 'paths.absolute'],
      ['m-grepf', 'grep -f /etc/hostname README.md > m-grepf; true', 'paths.absolute'],
      ['m-up', 'cd .. && touch ws/m-up', 'paths.traversal'],
    ];

    it.each(BYPASSES.map(([m, s, rule]) => [JSON.stringify(s), m, s, rule]))(
      '%s',
      async (_, marker, script, rule) => {
        const r = await runSbx(['-p', 'agent', '--approval', 'never', '--report-fd', '3', '--shell', script!], {
          env: t.env,
          cwd: t.workspace,
          extraStdio: { 3: 'pipe' },
        });
        expect(r.code, r.err).toBe(126);
        const report = JSON.parse(r.extra[3]!.toString()) as { violations: { rule: string }[] };
        expect(report.violations[0]?.rule).toBe(rule);
        expect(existsSync(join(t.workspace, marker!))).toBe(false);
        // The control: unsandboxed, the same string makes its marker (`cd ..` lands beside ws: the control's twin is made there).
        if (marker === 'm-up') return;
        await unsandboxed(script!);
        expect(existsSync(join(control, marker!)), `control ${script}`).toBe(true);
      },
      30_000,
    );
  });

  describe('what a refusal tells a model, and what sbx trust tells a person', () => {
    const hintOf = (err: string) =>
      err
        .split('\n')
        .find((l) => l.startsWith('sbx: hint: '))
        ?.slice(5) ?? '';

    it('a shell refused: run its commands as a shell string; deletion refused: move the files aside', async () => {
      const sh = await runSbx(['-p', 'agent', '--', 'sh', '-c', 'ls'], { env: t.env, cwd: t.workspace });
      expect(sh.code).toBe(126);
      expect(hintOf(sh.err)).toContain(
        "run the commands themselves: sbx reads a shell string and judges each command (--shell 'a && b | c')",
      );
      const rm = await sandboxed('rm README.md');
      expect(hintOf(rm.err)).toContain('leave the files, or move them aside with mv');
      expect(existsSync(join(t.workspace, 'README.md'))).toBe(true);
    });

    it('no one to approve: the hint names the commands the profile runs without asking', async () => {
      const r = await sandboxed('od -c README.md');
      expect(r.code).toBe(126);
      expect(hintOf(r.err)).toMatch(
        /^hint: use a command this profile runs without asking \(awk basename .* sed .*\), or /,
      );
    });

    it('a path refused: the hint says where paths may go', async () => {
      const r = await sandboxed('cat /etc/passwd');
      expect(hintOf(r.err)).toContain(
        "name paths inside the workspace (relative, without .. out of it), or in the sandbox's private /tmp or HOME",
      );
    });

    it('sbx trust names what a profile turns off: approvals, path guards, reading shell strings, deny entries', async () => {
      const profiles = join(t.workspace, '.sbx', 'profiles');
      mkdirSync(profiles, { recursive: true });
      writeFileSync(
        join(profiles, 'lax.yaml'),
        'extends: agent\ncommands:\n  default: allow\n  paths: any\n  shell_syntax: full\n',
      );
      const r = await runSbxRaw(['trust', '--dry-run', 'lax'], { env: t.env, cwd: t.workspace });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain('sbx: WIDENS the built-in "agent" (which it extends):');
      for (const line of [
        '  - commands.default: allow (the built-in has ask): commands no rule names run without approval',
        '  - path guards off (commands.paths: any): arguments may name any path the sandbox shows',
        '  - shell strings not read (commands.shell_syntax: full): the commands of a --shell string are not judged',
      ])
        expect(r.out).toContain(line);
      expect(r.out).not.toContain('widens nothing');
    });
  });
});
