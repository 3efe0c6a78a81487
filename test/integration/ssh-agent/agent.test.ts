// `ssh_agent` end to end through the CLI, against a real ssh-agent holding two keys: inside, `ssh-add -l`
// lists the allowed key only, signing works with it and fails with the other, and every request that
// would change the agent (remove, add, lock) fails, while the agent outside still holds both keys,
// unlocked. Each refusal stands beside a control: the same request, unsandboxed, works on an agent.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  askpassEnv,
  askpassScript,
  makeKey,
  missingTools,
  must,
  startAgent,
  type TestKey,
} from './harness.js';

const skipReason = missingTools(['ssh-agent', 'ssh-add', 'ssh-keygen']);

/** Per test and per run: each test starts several sandboxes, and CI hosts are shared. */
const RUNS_MS = 90_000;

let t: TestHost;
let agent: Agent;
let keysDir: string;
let allowed: TestKey;
let other: TestKey;

/** A profile file outside the workspace (a `-p PATH` profile needs no trust pin). */
function profile(name: string, keys: readonly string[]): string {
  const file = join(t.root, `${name}.yaml`);
  writeFileSync(file, `extends: default\nssh_agent:\n  keys: ${JSON.stringify(keys)}\n`);
  return file;
}

function sandboxed(profileFile: string, script: string, env: Record<string, string> = {}): Promise<Ran> {
  return runSbx(['-p', profileFile, '--', 'sh', '-c', script], {
    env: { ...t.env, SSH_AUTH_SOCK: agent.socket, ...env },
    cwd: t.workspace,
    timeoutMs: RUNS_MS,
  });
}

describe.skipIf(SKIP_INTEGRATION)('ssh_agent: the sandbox sees only the named keys', () => {
  beforeAll(async () => {
    if (skipReason) {
      console.warn(`ssh_agent integration tests skipped: ${skipReason}`);
      return;
    }
    requireIntegrationPrerequisites();
    t = makeTestHost('ssh-agent');
    keysDir = join(t.root, 'keys');
    mkdirSync(keysDir, { mode: 0o700 });
    allowed = makeKey(keysDir, 'allowed', 'allowed@sbx-test');
    other = makeKey(keysDir, 'other', 'other@sbx-test');
    agent = await startAgent(t.root);
    expect(agent.add([allowed.file, other.file]).status).toBe(0);
    // Public halves in the workspace: ssh-keygen -Y sign names the agent's key by its public key.
    writeFileSync(join(t.workspace, 'allowed.pub'), readFileSync(allowed.pub));
    writeFileSync(join(t.workspace, 'other.pub'), readFileSync(other.pub));
    writeFileSync(join(t.workspace, 'message'), 'signed inside the sandbox\n');
  });

  afterAll(() => {
    agent?.stop();
    t?.cleanup();
  });

  it(
    'lists the allowed key only, by comment or by fingerprint (control: the agent holds both)',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const control = agent.add(['-l']);
      expect(control.out).toContain(allowed.fingerprint);
      expect(control.out).toContain(other.fingerprint);

      const byComment = await sandboxed(profile('by-comment', [allowed.comment]), 'echo "$SSH_AUTH_SOCK"; ssh-add -l');
      expect(byComment.err).toBe('');
      expect(byComment.code).toBe(0);
      expect(byComment.out).toContain('/run/sbx/ssh-agent/agent.sock\n');
      expect(byComment.out).toContain(allowed.fingerprint);
      expect(byComment.out).not.toContain(other.fingerprint);

      const byPrint = await sandboxed(profile('by-print', [other.fingerprint]), 'ssh-add -l');
      expect(byPrint.code).toBe(0);
      expect(byPrint.out).toContain(other.fingerprint);
      expect(byPrint.out).not.toContain(allowed.fingerprint);
    },
    RUNS_MS,
  );

  it(
    'signs with the allowed key and refuses the other (control: unsandboxed, the agent signs with both)',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const sign = (pub: string) => `ssh-keygen -Y sign -n file -f ${pub} message`;
      const control = await runHost(['sh', '-c', `${sign('other.pub')} && rm message.sig`], {
        env: { ...t.env, SSH_AUTH_SOCK: agent.socket },
        cwd: t.workspace,
      });
      expect(control.code).toBe(0);

      const file = profile('sign', [allowed.comment]);
      const denied = await sandboxed(file, sign('other.pub'));
      // ssh-keygen does not find the key among those listed, so it never asks; a raw signature request
      // with it is refused by the filter (filter-server.test.ts).
      expect(denied.code).not.toBe(0);
      expect(denied.err).toContain('No private key found for public key "other.pub"');

      const signed = await sandboxed(file, sign('allowed.pub'));
      expect(signed.err).not.toContain('refused');
      expect(signed.code).toBe(0);
      // The signature, checked outside: made by the allowed key, over what the sandbox asked.
      const check = await runHost(
        ['sh', '-c', 'ssh-keygen -Y check-novalidate -n file -f allowed.pub -s message.sig < message'],
        { env: t.env, cwd: t.workspace },
      );
      expect(check.out).toContain('Good "file" signature');
    },
    RUNS_MS,
  );

  it(
    'refuses removing, adding and locking keys, and the agent outside is unchanged (control: a spare agent obeys)',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const spare = await startAgent(t.root, 'spare.sock');
      const askpass = join(t.root, 'askpass');
      must('sh', ['-c', askpassScript(askpass)]);
      try {
        expect(spare.add([other.file]).status).toBe(0);
        expect(spare.add(['-x'], askpassEnv(askpass)).status).toBe(0);
        expect(spare.add(['-l']).status).not.toBe(0);
        expect(spare.add(['-X'], askpassEnv(askpass)).status).toBe(0);
        expect(spare.add(['-D']).status).toBe(0);
        expect(spare.add(['-l']).out).not.toContain(other.fingerprint);
      } finally {
        spare.stop();
      }

      const script = [
        'ssh-add -D; echo "remove-all=$?"',
        'ssh-add -d allowed.pub; echo "remove=$?"',
        // A fresh key made inside: adding it is the sandbox changing the agent.
        'ssh-keygen -q -t ed25519 -N "" -C planted -f /tmp/planted && ssh-add /tmp/planted; echo "add=$?"',
        askpassScript('/tmp/askpass'),
        'export SSH_ASKPASS=/tmp/askpass SSH_ASKPASS_REQUIRE=force',
        'ssh-add -x; echo "lock=$?"',
        'ssh-add -X; echo "unlock=$?"',
        'ssh-add -l; echo "list=$?"',
      ].join('\n');
      const r = await sandboxed(profile('changes', [allowed.comment]), script);
      expect(r.code).toBe(0);
      for (const request of ['remove-all', 'remove', 'add', 'lock', 'unlock'])
        expect(r.out).toContain(`${request}=1\n`);
      expect(r.out).toContain(allowed.fingerprint);
      expect(r.out).toContain('list=0\n');

      const after = agent.add(['-l']);
      expect(after.status).toBe(0);
      expect(after.out).toContain(allowed.fingerprint);
      expect(after.out).toContain(other.fingerprint);
      expect(after.out).not.toContain('planted');
    },
    RUNS_MS,
  );

  it(
    'shows no key file and not the real agent socket inside',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const r = await sandboxed(
        profile('paths', [allowed.comment]),
        `ls ${keysDir}; echo "keys=$?"; ls -A ${agent.socket}; echo "socket=$?"; ls -A /run/sbx/ssh-agent`,
      );
      expect(r.out).toMatch(/keys=[12]\n/);
      expect(r.out).toMatch(/socket=[12]\n/);
      // The agent's directory holds its socket alone, and nothing can be created beside it.
      expect(r.out.trim().split('\n').at(-1)).toBe('agent.sock');
      const write = await sandboxed(profile('write', [allowed.comment]), 'touch /run/sbx/ssh-agent/x');
      expect(write.code).not.toBe(0);
      expect(write.err).toMatch(/Read-only file system|Permission denied/);
    },
    RUNS_MS,
  );

  it(
    'refuses the run (125, nothing runs) when a named key is not in the agent',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const r = await sandboxed(profile('missing', [allowed.comment, 'gone@sbx-test']), 'touch ran');
      expect(r.code).toBe(125);
      expect(r.err).toContain('your ssh-agent holds no key "gone@sbx-test"');
      expect(r.err).toContain('ssh-add -l');
      const ran = await runHost(['sh', '-c', 'test -e ran'], { env: t.env, cwd: t.workspace });
      expect(ran.code).toBe(1);
    },
    RUNS_MS,
  );

  it(
    'refuses the run (125) without an agent to filter, and a profile without ssh_agent gets no agent',
    async (ctx) => {
      if (skipReason) ctx.skip(skipReason);
      const file = profile('no-agent', [allowed.comment]);
      const unset = await runSbx(['-p', file, '--', 'true'], { env: t.env, cwd: t.workspace });
      expect(unset.code).toBe(125);
      expect(unset.err).toContain('SSH_AUTH_SOCK is not set');
      const dead = await sandboxed(file, 'true', { SSH_AUTH_SOCK: join(t.root, 'no-such.sock') });
      expect(dead.code).toBe(125);
      expect(dead.err).toContain('cannot be asked for its keys');

      const plain = join(t.root, 'plain.yaml');
      writeFileSync(plain, 'extends: default\n');
      const none = await sandboxed(plain, 'echo "sock=${SSH_AUTH_SOCK:-unset}"; ssh-add -l; echo "list=$?"');
      expect(none.out).toContain('sock=unset\n');
      expect(none.out).toContain('list=2\n');
    },
    RUNS_MS,
  );
});
