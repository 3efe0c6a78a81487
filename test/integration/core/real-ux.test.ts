// Issue 24 through bin/sbx.js, as users meet it: the approval prompt on a real pseudo-terminal
// (`script`), where Enter denies once and only `d` is remembered, and `sbx approvals` lists, revokes
// and clears; the hostile pull request that adds .sbx/profiles/untrusted.yaml, refused in CI with no
// trust hint and bypassed by -p builtin:untrusted; `sbx trust` naming what the profile widens.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  runSbxRaw,
  SBX_BIN,
  SKIP_INTEGRATION,
  start,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const HAS_SCRIPT = spawnSync('sh', ['-c', 'command -v script'], { encoding: 'utf8' }).status === 0;
const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

let host: TestHost;
let stateHome: string;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  host = makeTestHost('real-ux');
  stateHome = join(host.root, 'state');
  host.env.XDG_STATE_HOME = stateHome;
});

afterAll(() => host?.cleanup());

/** `sbx ARGS` on a pseudo-terminal (util-linux `script`), typing `typed` at the prompt. */
function onTerminal(args: string[], typed: string) {
  const command = [SBX_BIN, ...args].map(shq).join(' ');
  return start('script', ['-qec', command, '/dev/null'], { env: host.env, cwd: host.workspace, input: typed }).done;
}

const sbx = (args: string[], env: Record<string, string> = {}) =>
  runSbxRaw(args, { env: { ...host.env, ...env }, cwd: host.workspace });

describe.skipIf(SKIP_INTEGRATION || !HAS_SCRIPT)('approvals on a terminal', () => {
  it('Enter denies this time only: nothing is remembered, the next run asks again', async () => {
    const ran = await onTerminal(['run', '-p', 'agent', '--', 'uname'], '\n');
    expect(ran.out).toContain('[Enter] deny this time');
    expect(ran.out).toContain('denied by the user, this time only');
    expect(ran.code).toBe(126);
    expect((await sbx(['approvals', 'list'])).out).toMatch(/no remembered approval answers/);
    const again = await onTerminal(['run', '-p', 'agent', '--', 'uname'], 'o\n');
    expect(again.code).toBe(0);
  });

  it('d is remembered for 10 minutes, listed with the command, and revoked by fingerprint prefix', async () => {
    const ran = await onTerminal(['run', '-p', 'agent', '--', 'uname', '-a'], 'd\n');
    expect(ran.code).toBe(126);
    const list = await sbx(['approvals', 'list']);
    const [head, command] = list.out.trim().split('\n');
    expect(head).toMatch(/^agent {2}([0-9a-f]{12}) {2}deny {2}expires \S+ \(in 10 min\)$/);
    expect(command).toBe('  uname -a');
    // Remembered: refused without asking, even with no terminal.
    const stored = await runSbx(['-p', 'agent', '--', 'uname', '-a'], { env: host.env, cwd: host.workspace });
    expect(stored.code).toBe(126);
    expect(stored.err).toMatch(/denied earlier .*sbx approvals revoke [0-9a-f]{12}/s);
    const prefix = /([0-9a-f]{12})/.exec(head!)![1]!;
    const revoked = await sbx(['approvals', 'revoke', prefix.slice(0, 6)]);
    expect(revoked.code, revoked.err).toBe(0);
    expect(revoked.out).toContain('forgot deny for agent: uname -a');
    expect((await sbx(['approvals', 'list'])).out).toMatch(/no remembered approval answers/);
  });

  it('clear asks on a terminal, refuses without one unless --yes', async () => {
    expect((await onTerminal(['run', '-p', 'agent', '--', 'uname', '-r'], 'a\n')).code).toBe(0);
    const refused = await sbx(['approvals', 'clear']);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('pass --yes');
    const declined = await onTerminal(['approvals', 'clear'], '\n');
    expect(declined.code).toBe(2);
    expect((await sbx(['approvals', 'list', '--json'])).out.trim().split('\n')).toHaveLength(1);
    const cleared = await onTerminal(['approvals', 'clear'], 'y\n');
    expect(cleared.out).toContain('forgot 1 remembered approval answer');
    expect((await sbx(['approvals', 'list', '--json'])).out).toBe('');
  });
});

describe.skipIf(SKIP_INTEGRATION)('a hostile pull request shadowing -p untrusted', () => {
  let pr: string;
  beforeAll(() => {
    if (SKIP_INTEGRATION) return;
    pr = join(host.root, 'pr');
    mkdirSync(join(pr, '.sbx/profiles'), { recursive: true });
    writeFileSync(join(pr, '.sbx/profiles/untrusted.yaml'), 'extends: default\nnetwork: host\nseccomp: off\n');
  });
  const inPr = (args: string[], env: Record<string, string> = {}) =>
    runSbxRaw(args, { env: { ...host.env, ...env }, cwd: pr });

  it.each([{ CI: 'true' }, { GITHUB_ACTIONS: 'true' }])(
    'in CI (%o): refused, no hash or trust command, the hint says builtin:untrusted',
    async (ci) => {
      const ran = await inPr(['run', '-p', 'untrusted', '--', 'true'], ci);
      expect(ran.code).toBe(125);
      expect(ran.err).toContain("hint: run sbx's own profile with -p builtin:untrusted");
      expect(ran.err).not.toMatch(/[0-9a-f]{64}|--trust-profile|sbx trust/);
    },
  );

  it('outside CI the trust hint is still offered (control), with builtin:untrusted beside it', async () => {
    const ran = await inPr(['run', '-p', 'untrusted', '--', 'true']);
    expect(ran.code).toBe(125);
    expect(ran.err).toMatch(/--trust-profile [0-9a-f]{64}.*-p builtin:untrusted/);
  });

  it("-p builtin:untrusted runs sbx's own profile: no network, strict seccomp, whatever the PR holds", async () => {
    const ran = await runSbx(['-p', 'builtin:untrusted', '--report-fd', '3', '--', 'sh', '-c', 'cat /proc/net/dev'], {
      env: { ...host.env, CI: 'true' },
      cwd: pr,
      extraStdio: { 3: 'pipe' },
    });
    expect(ran.code, ran.err).toBe(0);
    const report = JSON.parse(ran.extra[3]!.toString()) as { profile: { name: string; source: string } };
    expect(report.profile).toMatchObject({ name: 'untrusted', source: 'builtin' });
    // Only loopback in its own namespace (the PR's `network: host` would show the host's interfaces).
    expect(
      ran.out
        .split('\n')
        .filter((l) => l.includes(':'))
        .map((l) => l.trim().split(':')[0]),
    ).toEqual(['lo']);
  });

  it('sbx trust shows what it widens, and without a terminal refuses unless --yes', async () => {
    const refused = await inPr(['trust', 'untrusted']);
    expect(refused.out).toContain('WIDENS the built-in "untrusted" (which it shadows):');
    expect(refused.out).toContain('  - network: host (shares the host network; nothing is filtered)');
    expect(refused.out).toContain('  - seccomp: off (the built-in has strict): no syscall filter');
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('pass --yes');
    expect((await inPr(['run', '-p', 'untrusted', '--', 'true'])).code).toBe(125);
    const pinned = await inPr(['trust', '--yes', 'untrusted']);
    expect(pinned.code, pinned.err).toBe(0);
    expect((await inPr(['run', '-p', 'untrusted', '--', 'true'])).code).toBe(0);
  });
});
