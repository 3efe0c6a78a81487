// `sbx hook gemini-cli` end to end: a recorded BeforeTool input for run_shell_command (with dir_path)
// gets its command wrapped, with no decision (Gemini CLI's policy judges the rewrite), and the rewrite
// run with `bash -c` in that directory prints what the original prints unsandboxed in a copy; what sbx
// refuses is denied with its reason; --approve is refused; other tools get `{}`. Root and an
// unprivileged user alike. agents.test.ts runs the hook under the real Gemini CLI.
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES_DIR } from '../../helpers/paths.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let plain: string;

const recorded = (name: string) =>
  JSON.parse(readFileSync(join(FIXTURES_DIR, 'hooks', `gemini-cli.${name}.json`), 'utf8'));

async function hook(name: string): Promise<Record<string, unknown>> {
  const input = { ...recorded(name), cwd: t.workspace };
  const r = await runSbxRaw(['hook', 'gemini-cli'], { env: t.env, cwd: t.workspace, input: JSON.stringify(input) });
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out);
}

describe.skipIf(SKIP_INTEGRATION)('sbx hook gemini-cli (real bwrap)', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('hook-gemini');
    mkdirSync(join(t.workspace, 'sub'));
    writeFileSync(join(t.workspace, 'sub', 'x.txt'), 'x\n');
    plain = join(t.root, 'plain');
    cpSync(t.workspace, plain, { recursive: true });
  });
  afterAll(() => t?.cleanup());

  it('run_shell_command: wrapped; the rewrite prints what the original prints, in dir_path', async () => {
    const answer = await hook('run-shell-command');
    const original = recorded('run-shell-command').tool_input;
    // No decision: Gemini CLI's policy judges the rewrite whatever a hook says, and sbx claims nothing.
    expect(answer.decision).toBeUndefined();
    const output = answer.hookSpecificOutput as { hookEventName: string; tool_input: Record<string, unknown> };
    expect(output.hookEventName).toBe('BeforeTool');
    const { command, ...kept } = output.tool_input;
    const { command: _original, ...keptOriginal } = original;
    expect(kept).toEqual(keptOriginal);
    // Gemini CLI runs the command in dir_path, with bash -c.
    const sandboxed = await runHost(['bash', '-c', command as string], { env: t.env, cwd: join(t.workspace, 'sub') });
    const control = await runHost(['bash', '-c', original.command], { env: t.env, cwd: join(plain, 'sub') });
    expect(control.code, control.err).toBe(0);
    expect(sandboxed.code, sandboxed.err).toBe(0);
    expect(sandboxed.out).toBe(control.out);
  }, 60_000);

  it('a command sbx refuses is denied with the reason', async () => {
    const answer = await hook('refused');
    expect(answer.decision).toBe('deny');
    expect(answer.reason).toContain("rm is on the profile's deny list");
    expect(answer.hookSpecificOutput).toBeUndefined();
  });

  it('--approve is refused for gemini-cli (exit 2, which Gemini CLI treats as a block), naming why', async () => {
    const input = JSON.stringify({ ...recorded('run-shell-command'), cwd: t.workspace });
    const r = await runSbxRaw(['hook', 'gemini-cli', '--approve'], { env: t.env, cwd: t.workspace, input });
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain("this agent's hooks cannot approve a call");
  });

  it('another tool gets {}: Gemini CLI decides', async () => {
    expect(await hook('read-file')).toEqual({});
  });
});
