// Reading a run's credential values (network/host/credential-values.ts) on real temp files and real
// programs: each source, each refusal by name beside its control, and no value ever in an error.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SbxError } from '../../../../src/errors.js';
import { type CredentialRule, compileCredentials } from '../../../../src/network/credentials.js';
import { compileEgressRules } from '../../../../src/network/egress.js';
import { readCredentialValues, refuseExposed } from '../../../../src/network/host/credential-values.js';
import type { Policy } from '../../../../src/policy/types.js';
import { runPipeline } from '../../../helpers/hosts.js';
import { makeTempDir } from '../../../helpers/tmp.js';

const VALUE = 'ghp_THEVALUEthevalue0123456789abcdefghij';
const UID = process.getuid!();
const rules = compileEgressRules({ allow: ['api.github.com'], deny: [], allowPrivate: [] });
const rule = (from: CredentialRule['from']) => compileCredentials({ T: { from, hosts: ['api.github.com'] } }, rules);

async function context(overrides: Partial<Parameters<typeof readCredentialValues>[1]> = {}) {
  const { policy } = await runPipeline('default', 'alice');
  return { env: { PATH: '/usr/bin:/bin' }, cwd: '/', uid: UID, policy, ...overrides };
}

/** The fixture policy with `dir` bound at its own path as well. */
async function policyBinding(dir: string, access: 'ro' | 'rw'): Promise<Policy> {
  const { policy } = await runPipeline('default', 'alice');
  const role = access === 'ro' ? 'user-ro' : 'user-rw';
  const bind = { kind: 'bind', source: dir, target: dir, access, optional: false, reason: 't', role } as const;
  return { ...policy, mounts: [...policy.mounts, bind] };
}

async function failure(from: CredentialRule['from'], overrides: Parameters<typeof context>[0] = {}): Promise<SbxError> {
  try {
    await readCredentialValues(rule(from), await context(overrides));
  } catch (e) {
    if (!(e instanceof SbxError)) throw e;
    expect(JSON.stringify({ m: e.message, h: e.hint, d: e.details })).not.toContain(VALUE);
    return e;
  }
  throw new Error('expected a refusal');
}

describe('readCredentialValues', () => {
  it('env: the variable of the invoking environment; unset refuses', async () => {
    expect(await readCredentialValues(rule({ env: 'TOKEN' }), await context({ env: { TOKEN: VALUE } }))).toEqual(
      new Map([['T', VALUE]]),
    );
    const e = await failure({ env: 'TOKEN' });
    expect([e.code, e.message]).toEqual([
      'CREDENTIAL_UNAVAILABLE',
      'credentials.T: TOKEN is not set in the environment sbx was started with',
    ]);
  });

  it('file: one trailing newline dropped; refused when another user could change it, or the sandbox sees it', async () => {
    const dir = makeTempDir('sbx-cred-file-');
    const file = join(dir, 'token');
    writeFileSync(file, `${VALUE}\n`, { mode: 0o600 });
    expect((await readCredentialValues(rule({ file }), await context())).get('T')).toBe(VALUE);
    chmodSync(file, 0o666);
    expect((await failure({ file })).message).toBe(`credentials.T: ${file} can be changed by another user`);
    chmodSync(file, 0o600);
    // A tree the sandbox is shown, even read-only: the command reads the file there.
    const shown = await policyBinding(dir, 'ro');
    expect((await failure({ file }, { policy: shown })).message).toBe(
      `credentials.T: ${file} lies in ${dir}, which the sandbox sees: the command could read the value there`,
    );
    writeFileSync(file, '\n', { mode: 0o600 });
    expect((await failure({ file })).message).toBe(`credentials.T: ${file} is empty`);
  });

  it('command: its stdout when it exits 0; a failure, a line break inside or a planted program refuses', async () => {
    expect((await readCredentialValues(rule({ command: ['printf', '%s\\n', VALUE] }), await context())).get('T')).toBe(
      VALUE,
    );
    expect((await failure({ command: ['sh', '-c', 'echo nope; exit 3'] })).message).toBe(
      'credentials.T: sh exited with status 3',
    );
    expect((await failure({ command: ['printf', 'a\\nb'] })).message).toMatch(/characters an HTTP header cannot carry/);
    expect((await failure({ command: ['no-such-program-sbx'] })).message).toBe(
      'credentials.T: no-such-program-sbx was not found on PATH (entries the sandbox can write are not searched)',
    );
    // A program on PATH inside a tree the sandbox writes is never run, even when it is the only one.
    const dir = makeTempDir('sbx-cred-bin-');
    mkdirSync(join(dir, 'bin'));
    writeFileSync(join(dir, 'bin', 'gh-token'), `#!/bin/sh\necho ${VALUE}\n`, { mode: 0o755 });
    const writable = await policyBinding(dir, 'rw');
    const env = { PATH: `${join(dir, 'bin')}:/usr/bin:/bin` };
    expect((await failure({ command: ['gh-token'] }, { policy: writable, env })).message).toMatch(
      /was not found on PATH/,
    );
    // Control: the same program outside every writable tree runs.
    expect((await readCredentialValues(rule({ command: ['gh-token'] }), await context({ env }))).get('T')).toBe(VALUE);
  });
});

describe('refuseExposed', () => {
  it('refuses a value the sandbox sees in a variable or on the command line; control: elsewhere it passes', async () => {
    const { policy } = await runPipeline('default', 'alice');
    const values = new Map([['T', VALUE]]);
    expect(() => refuseExposed(values, policy, {})).not.toThrow();
    const kept = { ...policy, env: { ...policy.env, vars: { ...policy.env.vars, GH_TOKEN: VALUE } } };
    expect(() => refuseExposed(values, kept, {})).toThrow(
      'credentials.T: its value is also in the variable GH_TOKEN, which the sandbox sees',
    );
    const argv = { ...policy, command: ['curl', '-H', `Authorization: Bearer ${VALUE}`] };
    expect(() => refuseExposed(values, argv, {})).toThrow('argument 2 of the command');
    expect(() => refuseExposed(values, policy, { OTHER: VALUE })).toThrow('the secret OTHER');
  });
});
