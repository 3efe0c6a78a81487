// action.yml run step by step as a runner would (harness.ts), with real bwrap: the exit status
// passes through, the step summary and annotations are written, and what the sandboxed command
// prints is never read as a workflow command, beside a control where the same text printed by an
// unsandboxed step is.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runSbx,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { loadAction, runAction, workflowCommands } from './harness.js';

let t: TestHost;

/** What an untrusted build might print to take over the job log's command parser. */
const SPOOF = [
  'echo "::error title=fake::spoofed annotation"',
  'echo "::add-mask::SPOOF_MASK" >&2',
  'echo "  ::warning::indented spoof"',
  'echo "::stop-commands::guess"',
  'echo "::guess::"',
  'printf "::notice::unfinished line"',
].join('; ');

describe('action.yml (metadata)', () => {
  const action = loadAction();

  it('is a composite action with command, profile (default builtin:untrusted), trust-profile and allow-domains inputs', () => {
    expect(action.runs.using).toBe('composite');
    expect(action.inputs.command?.required).toBe(true);
    expect(action.inputs.profile?.default).toBe('builtin:untrusted');
    expect(action.inputs['allow-domains']?.default).toBe('');
    expect(action.inputs['trust-profile']?.default).toBe('');
    expect(action.outputs['exit-code']?.value).toBe('${{ steps.run.outputs.exit-code }}');
  });

  it('passes inputs through env: no expression is spliced into a script (script injection)', () => {
    for (const step of action.runs.steps) {
      expect(step.shell).toBe('bash');
      expect(step.run).not.toContain('${{');
    }
  });
});

describe.skipIf(SKIP_INTEGRATION)('action.yml steps run as a runner would (real bwrap)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('action');
  });
  afterAll(() => t?.cleanup());

  it('a passing command: exit 0, exit-code output, a summary table, no annotation', async () => {
    const r = await runAction(t, 'pass', { command: 'echo built ok; env' });
    expect(r.steps.map((s) => s.code)).toEqual([0, 0, 0, 0, 0]);
    expect(r.log).toContain('built ok\n');
    // The runner's variables (and their file paths) stay out of the sandbox.
    expect(r.log).toMatch(/^PATH=/m);
    expect(r.log).not.toMatch(/^(GITHUB|RUNNER)_/m);
    expect(r.output).toBe('exit-code=0\n');
    expect(workflowCommands(r.log)).toEqual([]);
    expect(r.summary).toMatch(/^### sbx run: \/bin\/sh -c -- echo built ok; env$/m);
    expect(r.summary).toContain('| Result | exited 0, set by the command |');
    expect(r.summary).toContain('| Profile | untrusted (builtin) |');
    expect(r.summary).toContain('| Backend | bwrap |');
    expect(r.summary).toMatch(/^\| Duration \| \d+(\.\d)? m?s \|$/m);
    expect(r.summary).toMatch(/^\| memory \| 2GiB \| /m);
  });

  it("a failing command: the step's status and exit-code output are the command's", async () => {
    const r = await runAction(t, 'fail', { command: 'exit 7' });
    expect(r.status).toBe(7);
    expect(r.output).toBe('exit-code=7\n');
    expect(r.summary).toContain('| Result | exited 7, set by the command |');
    expect(workflowCommands(r.log)).toEqual([]);
  });

  it('allow-domains: each destination, a glob too, becomes an --allow-domain', async () => {
    const r = await runAction(t, 'domains', {
      command: 'true',
      'allow-domains': 'registry.example.com\n  *.example.org',
    });
    expect(r.status).toBe(0);
    // A malformed destination is refused by sbx's own parser: the input reaches it as one word each.
    const bad = await runAction(t, 'domains-bad', { command: 'true', 'allow-domains': 'a.example.com http://x/y' });
    expect(bad.status).toBe(125);
  });

  it('a command rule refusal: 126 and ::error annotations titled with the code and the rule', async () => {
    const r = await runAction(t, 'denied', { command: 'telnet example.com 80', profile: 'agent' });
    expect(r.status).toBe(126);
    expect(workflowCommands(r.log)).toEqual([
      {
        name: 'error',
        properties: { title: 'COMMAND_DENIED' },
        data: expect.stringMatching(/^sbx refused: telnet is on the profile's deny list \(@network\) \(hint: /),
      },
      {
        name: 'error',
        properties: { title: 'sbx: commands.offline' },
        // The rule is in a built-in profile, outside the checkout: no file=, the key named instead.
        data: 'preflight command: telnet needs the network, and this profile has none (profile key network)',
      },
    ]);
    expect(r.summary).toContain('| preflight | command | commands.deny | telnet is on the profile');
  });

  it('a profile error in the workspace: the annotation names its file and line, relative to the checkout', async () => {
    writeFileSync(join(t.workspace, 'ci.yaml'), 'mode: workspace-write\nnetwork: none\nbogus_key: 1\n');
    const r = await runAction(t, 'profile', { command: 'true', profile: './ci.yaml' });
    expect(r.status).toBe(125);
    expect(workflowCommands(r.log)).toEqual([
      {
        name: 'error',
        properties: { title: 'PROFILE_INVALID', file: 'ci.yaml', line: '3', col: '1' },
        data: expect.stringContaining('unknown key "bogus_key"'),
      },
    ]);
  });

  it('a file name from the repository cannot inject a command (annotation, summary, error line)', async () => {
    const name = 'x\n::add-mask::INJECTED\r::error::INJECTED|<img src=x>.yaml';
    writeFileSync(join(t.workspace, name), 'bogus_key: 1\n');
    const r = await runAction(t, 'inject', { command: 'true', profile: join(t.workspace, name) });
    expect(r.status).toBe(125);
    const commands = workflowCommands(r.log);
    expect(commands).toHaveLength(1);
    expect(commands[0]!.properties).toMatchObject({ title: 'PROFILE_INVALID', file: name });
    expect(r.log).toMatch(/^sbx: error: .*x\\n::add-mask::INJECTED\\x0d::error::INJECTED/m);
    expect(r.summary).not.toMatch(/^::/m);
    expect(r.summary).not.toContain('<img');
    expect(r.summary.split('\n').filter((l) => l.startsWith('| Refused |'))).toHaveLength(1);
  });

  it('what the sandboxed command prints is not read as a workflow command', async () => {
    // Control: the same lines printed by bash with no sbx around them are commands.
    const host = spawnSync('bash', ['-c', `{ ${SPOOF}; } 2>&1`], { encoding: 'utf8' });
    expect(workflowCommands(host.stdout).map((c) => c.name)).toEqual(['error', 'add-mask', 'warning', 'notice']);

    const r = await runAction(t, 'spoof', { command: `${SPOOF}; exit 3` });
    expect(r.status).toBe(3);
    expect(r.log).toContain('::add-mask::SPOOF_MASK');
    // Nothing the command printed counts, and commands are on again once sbx is done (its unfinished
    // last line did not swallow the resume line).
    expect(workflowCommands(`${r.log}::notice::after\n`)).toEqual([{ name: 'notice', properties: {}, data: 'after' }]);
    // The runner reads stdout on its own pipe: the command's unfinished last line there must not
    // swallow the resume line either.
    const split = await runAction(t, 'spoof-split', { command: SPOOF }, 'split');
    expect(split.log).toMatch(/^::notice::unfinished line$/m);
    expect(workflowCommands(`${split.log}::notice::after\n`)).toEqual([
      { name: 'notice', properties: {}, data: 'after' },
    ]);
    expect(split.err).toMatch(/^::add-mask::SPOOF_MASK$/m);
    // sbx's own annotations after the command still count: a violation is annotated.
    const denied = await runAction(t, 'spoof-denied', { command: `${SPOOF}; telnet example.com`, profile: 'agent' });
    expect(workflowCommands(denied.log).map((c) => c.properties.title)).toEqual([
      'COMMAND_DENIED',
      'sbx: commands.offline',
    ]);
  }, 90_000); // three runs of the whole action

  it('refuses a sandbox that could write the runner files later steps read (GITHUB_ENV in the workspace)', async () => {
    const envFile = join(t.workspace, 'github-env');
    writeFileSync(envFile, '');
    const r = await runSbx(['-p', 'untrusted', '--', 'true'], {
      cwd: t.workspace,
      env: { ...t.env, GITHUB_ACTIONS: 'true', GITHUB_ENV: envFile },
    });
    expect(r.code).toBe(125);
    expect(workflowCommands(r.out)).toEqual([
      { name: 'error', properties: { title: 'HOST_STATE_WRITABLE' }, data: expect.stringContaining('$GITHUB_ENV') },
    ]);
    // Control: outside the workspace the same run goes ahead.
    const ok = await runSbx(['-p', 'untrusted', '--', 'true'], {
      cwd: t.workspace,
      env: { ...t.env, GITHUB_ACTIONS: 'true', GITHUB_ENV: join(t.root, 'github-env') },
    });
    expect(ok.code).toBe(0);
  });

  it('outside GitHub Actions sbx prints no workflow command, and writes no summary', async () => {
    const summary = join(t.root, 'summary-outside');
    writeFileSync(summary, '');
    const env = { ...t.env, GITHUB_STEP_SUMMARY: summary };
    const denied = await runSbx(['-p', 'agent', '--approval', 'never', '--shell', 'telnet example.com'], {
      cwd: t.workspace,
      env,
    });
    expect(denied.code).toBe(126);
    const failed = await runSbx(['-p', 'untrusted', '--', 'sh', '-c', 'exit 4'], { cwd: t.workspace, env });
    expect(failed.code).toBe(4);
    for (const text of [denied.out, denied.err, failed.out, failed.err]) expect(text).not.toMatch(/^::/m);
    expect(readFileSync(summary, 'utf8')).toBe('');
  });
});
