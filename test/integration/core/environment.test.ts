// The sandbox environment through real bwrap (`node bin/sbx.js run`): credential-shaped variables of
// the invoking environment never arrive (not in `env`, not in bwrap's init at /proc/1/environ, not in
// the report), even when a pattern keeps them; only an exact name lets one through. SBX_* is sbx's.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
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
import { readReport } from '../../helpers/report.js';
import type { Report } from '../../../src/report/report.js';

const tag = randomBytes(6).toString('hex');
/** Each value is unique, so finding it anywhere in the output means it leaked. */
const SECRETS: Record<string, string> = {
  AWS_SECRET_ACCESS_KEY: `aws-secret-${tag}`,
  GITHUB_TOKEN: `ghp_token${tag}`,
  SSH_AUTH_SOCK: `/tmp/ssh-agent-${tag}/agent.1`,
  DATABASE_URL: `postgres://user:dbpass-${tag}@db.internal/app`,
};
const NAMES = Object.keys(SECRETS);

let t: TestHost;
let env: Record<string, string>;

/** NAME=VALUE lines of `env` output. */
function envLines(out: string): Record<string, string> {
  return Object.fromEntries(
    out
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

function expectNoSecretValue(text: string): void {
  for (const value of Object.values(SECRETS)) expect(text).not.toContain(value);
}

describe.skipIf(SKIP_INTEGRATION)('environment (real bwrap via bin/sbx.js)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('env');
    env = { ...t.env, ...SECRETS };
  });
  afterAll(() => t?.cleanup());

  it('control: unsandboxed, env shows all four', async () => {
    const r = await runHost(['env'], { env, cwd: t.workspace });
    expect(envLines(r.out)).toMatchObject(SECRETS);
  });

  it('env inside shows none of them, and none of their values anywhere in the output', async () => {
    const r = await runSbx(['--', 'env'], { env, cwd: t.workspace });
    expect(r.code).toBe(0);
    const seen = envLines(r.out);
    for (const name of NAMES) expect(seen).not.toHaveProperty(name);
    expectNoSecretValue(r.out + r.err);
  });

  it("--keep-env '*' and --keep-env 'AWS_*' still drop them (credential names need an exact keep)", async () => {
    for (const pattern of ['*', 'AWS_*']) {
      const r = await runSbx(['--keep-env', pattern, '--', 'env'], { env, cwd: t.workspace });
      expect(r.code).toBe(0);
      const seen = envLines(r.out);
      for (const name of NAMES) expect(seen, `--keep-env ${pattern}`).not.toHaveProperty(name);
      expectNoSecretValue(r.out + r.err);
      if (pattern === '*') expect(seen.XDG_CONFIG_HOME).toBe(t.configHome); // the pattern did keep the harmless ones
    }
  });

  it('--keep-env GITHUB_TOKEN (the exact name) passes that one variable, and only it', async () => {
    const r = await runSbx(['--keep-env', 'GITHUB_TOKEN', '--', 'env'], { env, cwd: t.workspace });
    expect(r.code).toBe(0);
    const seen = envLines(r.out);
    expect(seen.GITHUB_TOKEN).toBe(SECRETS.GITHUB_TOKEN);
    for (const name of NAMES.filter((n) => n !== 'GITHUB_TOKEN')) {
      expect(seen).not.toHaveProperty(name);
      expect(r.out).not.toContain(SECRETS[name]);
    }
  });

  // The credential patterns are case-blind: a lower-case credential (github_token) must not pass a
  // keep pattern that matches it (`--keep-env '*'`, the danger profile's own `keep: ["*"]`).
  it("lower-case credential names are dropped under --keep-env '*' too", async () => {
    const lower = { github_token: `lower-token-${tag}`, aws_secret_access_key: `lower-secret-${tag}` };
    const r = await runSbx(['--keep-env', '*', '--', 'env'], { env: { ...env, ...lower }, cwd: t.workspace });
    expect(r.code).toBe(0);
    for (const [name, value] of Object.entries(lower)) {
      expect(envLines(r.out)).not.toHaveProperty(name);
      expect(r.out).not.toContain(value);
    }
  });

  it("bwrap's init (pid 1 inside) shows no host variable in /proc/1/environ (control: /proc/self/environ outside does)", async () => {
    const host = await runHost(['sh', '-c', 'tr "\\0" "\\n" < /proc/self/environ'], { env, cwd: t.workspace });
    expect(host.out).toContain(SECRETS.AWS_SECRET_ACCESS_KEY);
    const r = await runSbx(['--', 'sh', '-c', 'readlink /proc/1/exe; tr "\\0" "\\n" < /proc/1/environ; echo "rc=$?"'], {
      env,
      cwd: t.workspace,
    });
    expect(r.code).toBe(0);
    const [exe, ...rest] = r.out.split('\n');
    expect(exe).toMatch(/\/bwrap$/);
    expect(rest).toEqual(['rc=0', '']); // readable, and empty
    expectNoSecretValue(r.out + r.err);
    expect(r.out).not.toContain(t.home);
  });

  it("SBX_SESSION_ID, SBX_PROFILE and SBX_WORKSPACE are set; the session id is the report's", async () => {
    const report = join(t.root, 'env-report.json');
    const r = await runSbx(['--report-file', report, '--', 'env'], { env, cwd: t.workspace });
    expect(r.code).toBe(0);
    const seen = envLines(r.out);
    const json = readReport(report) as Required<Report>;
    expect(seen.SBX_SESSION_ID).toBe(json.sessionId);
    expect(seen.SBX_SESSION_ID).toMatch(/^[0-9a-z]+-[0-9a-f]{8}$/);
    expect(seen.SBX_PROFILE).toBe('default');
    expect(seen.SBX_WORKSPACE).toBe(t.workspace);
    // The report names what was kept out, never a value.
    expect(json.droppedEnv).toEqual(expect.arrayContaining(NAMES));
    expectNoSecretValue(readFileSync(report, 'utf8'));
  });

  it('--env SBX_SESSION_ID=x is refused with 126 and runs nothing', async () => {
    const r = await runSbx(['--env', 'SBX_SESSION_ID=x', '--', 'touch', 'ran-reserved'], { env, cwd: t.workspace });
    expect(r.code).toBe(126);
    expect(r.err).toMatch(/^sbx: error: SBX_SESSION_ID: the SBX_\* namespace is reserved for sbx$/m);
    expect(r.out).toBe('');
    expect(existsSync(join(t.workspace, 'ran-reserved'))).toBe(false);
    // control: an ordinary name is accepted and set
    const ok = await runSbx(['--env', 'MY_VAR=x', '--', 'sh', '-c', 'echo "$MY_VAR"'], { env, cwd: t.workspace });
    expect(ok).toMatchObject({ code: 0, out: 'x\n' });
  });
});
