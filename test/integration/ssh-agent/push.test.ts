// `git push` over SSH from inside the sandbox, with no key file in sight: a real sshd on 127.0.0.1
// (started here, its own host key and config, letting in one public key) and a bare repository
// outside. With that key allowed by `ssh_agent`, the push lands (checked outside); with only the other
// key allowed, or no ssh_agent at all, it is refused, while the same push unsandboxed, through the
// same agent, lands (the control). The sandbox reaches sshd through `network: host`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  type Ran,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import {
  type Agent,
  makeKey,
  missingTools,
  must,
  SSHD,
  type Sshd,
  startAgent,
  startSshd,
  type TestKey,
  userName,
} from './harness.js';

const skipReason = missingTools(['ssh-agent', 'ssh-add', 'ssh-keygen', 'ssh', 'git', SSHD]);

/** Per test and per run: each test starts several sandboxes, and CI hosts are shared. */
const RUNS_MS = 90_000;

let t: TestHost;
let agent: Agent;
let sshd: Sshd;
let bare: string;
let authorized: TestKey;
let other: TestKey;

const git = (args: readonly string[], cwd: string) =>
  must('git', ['-C', cwd, ...args], { HOME: t.home, GIT_CONFIG_NOSYSTEM: '1' });

/** The push, as a script for inside (or outside) the sandbox: to branch `branch` of the bare repository. */
function pushScript(branch: string): string {
  const ssh = `ssh -F /dev/null -p ${sshd.port} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null`;
  return `GIT_SSH_COMMAND='${ssh}' git push ssh://${userName()}@127.0.0.1${bare} HEAD:refs/heads/${branch}`;
}

function profile(name: string, agentKeys: readonly string[] | undefined): string {
  const file = join(t.root, `${name}.yaml`);
  const agentLines = agentKeys ? `ssh_agent:\n  keys: ${JSON.stringify(agentKeys)}\n` : '';
  writeFileSync(file, `extends: default\nnetwork: host\n${agentLines}`);
  return file;
}

function sandboxed(profileFile: string, script: string): Promise<Ran> {
  return runSbx(['-p', profileFile, '--', 'sh', '-c', script], {
    env: { ...t.env, SSH_AUTH_SOCK: agent.socket },
    cwd: t.workspace,
    timeoutMs: RUNS_MS,
  });
}

/** The commit a branch of the bare repository points at, or '' when it has no such branch. */
function branchHead(branch: string): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], bare).trim();
  } catch {
    return '';
  }
}

describe.skipIf(SKIP_INTEGRATION)('ssh_agent: git push over SSH to a local sshd', () => {
  beforeAll(async () => {
    if (skipReason) {
      console.warn(`ssh_agent git push tests skipped: ${skipReason}`);
      return;
    }
    requireIntegrationPrerequisites();
    t = makeTestHost('ssh-push');
    const keys = join(t.root, 'keys');
    mkdirSync(keys, { mode: 0o700 });
    authorized = makeKey(keys, 'authorized', 'authorized@sbx-test');
    other = makeKey(keys, 'other', 'other@sbx-test');
    agent = await startAgent(t.root);
    expect(agent.add([authorized.file, other.file]).status).toBe(0);
    const sshdDir = join(t.root, 'sshd');
    mkdirSync(sshdDir, { mode: 0o700 });
    sshd = await startSshd(sshdDir, authorized.pub);
    bare = join(t.root, 'bare.git');
    must('git', ['init', '-q', '--bare', bare]);
    git(['init', '-q'], t.workspace);
    writeFileSync(join(t.workspace, 'README'), 'pushed from a sandbox\n');
    git(['add', 'README'], t.workspace);
    git(['-c', 'user.name=sbx', '-c', 'user.email=sbx@test', 'commit', '-q', '-m', 'first'], t.workspace);
  });

  afterAll(() => {
    sshd?.stop();
    agent?.stop();
    t?.cleanup();
  }, RUNS_MS);

  it(
    'pushes with the allowed key, no key file inside',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const head = git(['rev-parse', 'HEAD'], t.workspace).trim();
      const r = await sandboxed(
        profile('allowed', [authorized.comment]),
        `ls ${join(t.root, 'keys')} 2>/dev/null; echo "keys=$?"; ${pushScript('from-sandbox')}`,
      );
      expect(r.out).toMatch(/keys=[12]\n/);
      expect(r.err).toContain('* [new branch]      HEAD -> from-sandbox');
      expect(r.code).toBe(0);
      expect(branchHead('from-sandbox')).toBe(head);
    },
    RUNS_MS,
  );

  it(
    'is refused with only the other key allowed, or no ssh_agent (control: the same push unsandboxed lands)',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const control = await runHost(['sh', '-c', pushScript('from-host')], {
        env: { ...t.env, SSH_AUTH_SOCK: agent.socket },
        cwd: t.workspace,
      });
      expect(control.code).toBe(0);
      expect(branchHead('from-host')).not.toBe('');

      for (const [name, keys] of [
        ['other-key', [other.fingerprint]],
        ['no-agent', undefined],
      ] as const) {
        const r = await sandboxed(profile(name, keys), pushScript(name));
        expect(r.code, r.err).not.toBe(0);
        expect(r.err).toContain('Permission denied (publickey)');
        expect(branchHead(name)).toBe('');
      }
    },
    RUNS_MS,
  );
});
