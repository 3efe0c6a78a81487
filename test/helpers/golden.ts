// Golden argv files: one argument per line. Written only when SBX_UPDATE_GOLDEN=1; otherwise a
// missing or different file fails the test (CI never sets the variable).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { expect } from 'vitest';
import { REPO_ROOT } from './paths.js';

export const UPDATE_GOLDEN = process.env.SBX_UPDATE_GOLDEN === '1';

export function toGoldenText(argv: readonly string[]): string {
  for (const arg of argv) {
    // One argument per line only works if no argument spans lines.
    if (/[\n\r]/.test(arg))
      throw new Error(`argument ${JSON.stringify(arg)} contains a line break; golden files cannot hold it`);
  }
  return argv.join('\n') + '\n';
}

export function fromGoldenText(text: string): string[] {
  if (!text.endsWith('\n')) throw new Error('golden file must end with a newline');
  return text.slice(0, -1).split('\n');
}

/** Compare `argv` with the golden file, element by element; (re)write it only in update mode. */
export function expectGolden(file: string, argv: readonly string[]): void {
  const text = toGoldenText(argv);
  if (UPDATE_GOLDEN) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) {
    throw new Error(
      `missing golden file ${relative(REPO_ROOT, file)}: review the argv, then run SBX_UPDATE_GOLDEN=1 npx vitest run test/unit/core/golden.test.ts`,
    );
  }
  expect(
    [...argv],
    `argv differs from ${relative(REPO_ROOT, file)} (a security-relevant change: review, then SBX_UPDATE_GOLDEN=1)`,
  ).toEqual(fromGoldenText(readFileSync(file, 'utf8')));
}
