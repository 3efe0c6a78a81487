// askApproval over fake streams: each answer, the default, garbage, EOF, split and oversized input, and
// a hostile argv that cannot repaint the question. openTty in a process with no controlling terminal.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { type ApprovalAnswer, askApproval, askNetworkApproval } from '../../../src/cli/prompt.js';
import { REPO_ROOT } from '../../helpers/paths.js';
import { makeTempDir } from '../../helpers/tmp.js';

const QUESTION = {
  argv: ['git', 'push', 'origin', 'my branch'],
  profile: 'agent',
  reason: 'git push is not on the allowlist',
};

/** Ask with fake streams; `feed` writes the user's side once the question is out. */
async function ask(
  feed: (input: PassThrough) => void,
  question = QUESTION,
): Promise<{ answer: ApprovalAnswer; shown: string }> {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d: Buffer) => (shown += d.toString()));
  const pending = askApproval(question, { input, output });
  feed(input);
  return { answer: await pending, shown };
}

describe('askApproval', () => {
  it('shows the quoted command, the reason and the choices', async () => {
    const { shown } = await ask((i) => i.write('d\n'));
    expect(shown.split('\n')).toEqual([
      'sbx: approval needed (profile agent)',
      "  command: git push origin 'my branch'",
      '  reason:  git push is not on the allowlist',
      '[o]nce  [a]lways for profile agent  [d]eny for 10 minutes  [Enter] deny this time: ',
    ]);
  });

  it.each([
    ['o\n', 'once'],
    ['once\n', 'once'],
    ['  O \r\n', 'once'],
    ['a\n', 'always'],
    ['ALWAYS\n', 'always'],
    ['d\n', 'deny'],
    ['deny\n', 'deny'],
    ['\n', 'deny-once'],
    ['y\n', 'deny-once'],
    ['yes\n', 'deny-once'],
    ['oa\n', 'deny-once'],
    ['always please\n', 'deny-once'],
    ['D\n', 'deny'],
    ['  \t\n', 'deny-once'],
  ])('%j → %s (only d/deny is remembered; Enter and anything else deny once)', async (typed, expected) => {
    expect((await ask((i) => i.write(typed))).answer).toBe(expected);
  });

  it('EOF before a newline is a denial, even after a partial "a"', async () => {
    expect((await ask((i) => i.end())).answer).toBe('deny-once');
    const partial = await ask((i) => i.end('a'));
    expect(partial.answer).toBe('deny-once');
    expect(partial.shown.endsWith(': \n')).toBe(true);
  });

  it('an input error is a denial', async () => {
    expect((await ask((i) => i.destroy(new Error('EIO')))).answer).toBe('deny-once');
  });

  it('reads one line across chunks and leaves the rest unread', async () => {
    const input = new PassThrough();
    const pending = askApproval(QUESTION, { input, output: new PassThrough() });
    input.write('al');
    input.write('ways\nrm -rf /\n');
    expect(await pending).toBe('always');
    expect(input.isPaused()).toBe(true);
    expect(input.listenerCount('data')).toBe(0);
  });

  it('a second question on an input already at EOF is denied, not left hanging', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    input.end();
    expect(await askApproval(QUESTION, { input, output })).toBe('deny-once');
    expect(await askApproval(QUESTION, { input, output })).toBe('deny-once');
  });

  it('an endless line without a newline is denied once it is too long to be an answer', async () => {
    expect((await ask((i) => i.write('a'.repeat(100)))).answer).toBe('deny-once');
  });

  it('control characters in the command, reason and profile are escaped, so they cannot repaint the question', async () => {
    const { shown } = await ask((i) => i.write('d\n'), {
      argv: ['echo', '\x1b[2K\r[o]nce (default)'],
      profile: 'p\x1b]0;x\x07',
      reason: 'why\r\x9b2K',
    });
    expect(shown).not.toMatch(/[\x1b\x07\r\x9b]/);
    expect(shown).toContain("command: echo $'\\x1b[2K\\r[o]nce (default)'");
    expect(shown).toContain('reason:  why\\x0d\\x9b2K');
    expect(shown).toContain('profile p\\x1b]0;x\\x07');
  });
});

describe('openTty', () => {
  it('returns undefined in a process without a controlling terminal (setsid)', async () => {
    const dir = makeTempDir('sbx-prompt-bundle-');
    const entry = join(dir, 'tty.ts');
    writeFileSync(
      entry,
      [
        `import { openTty } from ${JSON.stringify(join(REPO_ROOT, 'src/cli/prompt.ts'))};`,
        `const tty = openTty();`,
        `process.stdout.write(tty === undefined ? 'none' : 'tty');`,
        `tty?.close();`,
      ].join('\n'),
    );
    await build({
      entryPoints: [entry],
      outfile: join(dir, 'tty.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'error',
    });
    // detached: the child calls setsid(), leaving it without a controlling terminal whatever runs the tests.
    const child = spawn(process.execPath, [join(dir, 'tty.mjs')], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    expect({ code, out }).toEqual({ code: 0, out: 'none' });
  });
});

describe('askNetworkApproval', () => {
  async function askNet(typed: string | undefined, host = 'registry.example') {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = '';
    output.on('data', (d: Buffer) => (shown += d.toString()));
    const pending = askNetworkApproval({ host, port: 443 }, 'agent', { input, output });
    if (typed === undefined) input.end();
    else input.write(typed);
    return { answer: await pending, shown };
  }

  it('shows the destination and the choices', async () => {
    const { shown } = await askNet('o\n');
    expect(shown.split('\n')).toEqual([
      'sbx: the sandboxed command asks to connect to registry.example:443 (not in network.allow; it waits)',
      '[o]nce for this run  [a]lways for profile agent  [d]eny or [Enter] for this run: ',
    ]);
  });

  it.each([
    ['o\n', 'once'],
    ['always\n', 'always'],
    ['d\n', 'deny'],
    ['\n', 'deny'],
    ['yes\n', 'deny'],
    [undefined, 'deny'],
  ])('%j → %s (only o/once and a/always allow)', async (typed, expected) => {
    expect((await askNet(typed)).answer).toBe(expected);
  });

  it('a destroyed terminal (the question timed out) is a denial, not a question left hanging', async () => {
    const input = new PassThrough();
    const pending = askNetworkApproval({ host: 'a.example', port: 80 }, 'agent', { input, output: new PassThrough() });
    input.destroy();
    expect(await pending).toBe('deny');
  });

  it('an IPv6 literal is bracketed, and control characters cannot repaint the question', async () => {
    expect((await askNet('d\n', '::1')).shown).toContain('connect to [::1]:443');
    expect((await askNet('d\n', 'a\x1b[2Kb\r')).shown).toContain('connect to a\\x1b[2Kb\\x0d:443');
  });
});
