// What the rules judge is what runs: the restricted reader (src/commands/shell-words.ts) against the
// system shell sbx runs a --shell string with. Generated strings of quotes, escapes, operators and
// redirections; for each one the reader accepts, /bin/sh runs it with every command replaced by a
// recorder of its argv, and the two must agree word for word. No sandbox needed: this is about sh.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_SHELL } from '../../../src/policy/command-line.js';
import { parseShellScript } from '../../../src/commands/shell-words.js';

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sbx-shell-words-'));
  // p: appends its arguments to $LOG, each ended by NUL, the command ended by \x01.
  writeFileSync(
    join(dir, 'p'),
    '#!/bin/sh\nfor a; do printf \'%s\\0\' "$a"; done >> "$LOG"\nprintf \'\\001\' >> "$LOG"\n',
  );
  chmodSync(join(dir, 'p'), 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Every piece but a bare | or & (a pipeline's commands run at once: their records would interleave).
 * Redirections end with a space, so their targets are plain file names.
 */
const PIECES = [
  'a',
  'b',
  ' ',
  ' ',
  '\t',
  "'",
  '"',
  '\\',
  ';',
  '\n',
  ' && ',
  '-x',
  '=',
  '#',
  '/',
  '.',
  'é',
  "'|'",
  '"&"',
  '\\|',
  '\\&',
  '\\;',
  ' 2>&1',
  ' >/dev/null ',
  ' 2>o1 ',
  '>>o2 ',
  '>o3 ',
  "'\n'",
  '"a b"',
  "'$x'",
  '"\\$"',
  '"\\\\"',
  '"\\a"',
  "'\\'",
];

describe('the restricted reader agrees with /bin/sh', () => {
  it('every accepted string: the argv sh runs for each command is the argv the reader returned', () => {
    let seed = 0x51ab;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    let compared = 0;
    for (let n = 0; n < 3000 && compared < 150; n++) {
      const body = Array.from({ length: 1 + (next() % 10) }, () => PIECES[next() % PIECES.length]!).join('');
      const script = `p ${body}`;
      const parsed = parseShellScript(script);
      // Only strings whose every command is the recorder (a word after ; may name another program).
      if (!parsed.ok || !parsed.commands.every((c) => c.argv[0] === 'p')) continue;
      // Files are written below the run's own directory (and /dev/null), nowhere else.
      if (parsed.commands.some((c) => c.redirects.some((r) => r.target.startsWith('/') && r.target !== '/dev/null')))
        continue;
      const cwd = join(dir, `run-${n}`);
      const files = parsed.commands.flatMap((c) =>
        c.redirects
          .filter((r) => r.op === '>' || r.op === '>>')
          .filter((r) => r.target !== '/dev/null')
          .map((r) => resolve(cwd, r.target)),
      );
      mkdirSync(cwd);
      const log = join(dir, `log-${n}`);
      const sh = spawnSync(SYSTEM_SHELL, ['-c', '--', script], {
        cwd,
        env: { PATH: `${dir}:/usr/bin:/bin`, LOG: log },
        encoding: 'utf8',
      });
      expect(sh.status, `${JSON.stringify(script)}: ${sh.stderr}`).toBe(0);
      const ran = readFileSync(log, 'utf8')
        .split('\x01')
        .slice(0, -1)
        .map((c) => c.split('\0').slice(0, -1));
      expect(ran, JSON.stringify(script)).toEqual(parsed.commands.map((c) => c.argv.slice(1)));
      // The files sh wrote are the targets the reader saw (the path guards judge those).
      for (const file of files) expect(existsSync(file), `${JSON.stringify(script)}: ${file}`).toBe(true);
      compared++;
    }
    // The generator must exercise the comparison, not skip its way to a pass.
    expect(compared).toBe(150);
    // A safety net for a loaded machine (150 runs of sh), not a duration the test asserts.
  }, 120_000);
});
