// The pure core (docs/ARCHITECTURE.md, "Pure core, imperative shell"): functions of data. It may not
// import I/O, process spawning, the terminal or the imperative shell (runtime/, report/, cli/), and
// errors.ts imports nothing at all.
// Read from the source text, so a new file in policy/ (and policy/derive/) or backend/ is covered the day it lands.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SRC_DIR } from '../../helpers/paths.js';

const FORBIDDEN_MODULES = [
  'node:fs',
  'node:fs/promises',
  'node:child_process',
  'node:net',
  'node:os',
  'fs',
  'fs/promises',
  'child_process',
  'net',
  'os',
  'execa',
  'chalk',
];
const SHELL_DIRS = ['runtime', 'report', 'cli'];

const ts = (dir: string) =>
  readdirSync(join(SRC_DIR, dir))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `${dir}/${f}`);

/** src/backend/ but its shell half: each unit's backend.ts (probe, exec options, result reading), unit.ts, registry.ts. */
const BACKEND_SHELL = /^backend\/(unit|registry|[\w-]+\/backend)\.ts$/;
const backendFiles = () =>
  readdirSync(join(SRC_DIR, 'backend'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `backend/${f}`)
    .filter((f) => !BACKEND_SHELL.test(f));

const PURE_FILES = [
  ...['schema', 'parse', 'merge', 'variables'].map((f) => `profile/${f}.ts`),
  'profile/schema-secrets.ts',
  'profile/schema-command-rules.ts',
  ...ts('policy'),
  ...ts('policy/derive'),
  ...ts('preflight'),
  ...backendFiles(),
  ...ts('export'),
  ...ts('doctor'),
  ...ts('git'),
  'errors.ts',
  'suggest.ts',
  'path-within.ts',
].sort();

/** Every module specifier a file names: static and type imports, re-exports, dynamic import(), require(). */
function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const patterns = [
    /\bimport\s+(?:type\s+)?[\w*{}\s,$]*?\s*from\s*['"]([^'"]+)['"]/g,
    /\bexport\s+(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s*from\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  return patterns.flatMap((re) => [...code.matchAll(re)].map((m) => m[1]!));
}

describe('importSpecifiers (the reader the purity rules rely on)', () => {
  it('finds every form of import', () => {
    const source = [
      'import { a,',
      "  b } from 'node:fs';",
      "import type { X } from './types.js';",
      "import * as os from 'node:os';",
      'import def, { c } from "execa";',
      "import 'chalk';",
      "export { y } from '../runtime/exec.js';",
      "export * from './z.js';",
      "const m = await import('node:child_process');",
      "const n = require('node:net');",
      "// import { gone } from 'commented-out';",
      "/* import 'also-gone'; */",
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual(
      [
        'node:fs',
        './types.js',
        'node:os',
        'execa',
        'chalk',
        '../runtime/exec.js',
        './z.js',
        'node:child_process',
        'node:net',
      ].sort(),
    );
  });
});

describe('pure core', () => {
  it('the listed files exist (policy/, policy/derive/ and backend/ are globbed; backend/ but its units and registry)', () => {
    for (const file of PURE_FILES) expect(existsSync(join(SRC_DIR, file)), file).toBe(true);
    expect(PURE_FILES).toEqual(
      expect.arrayContaining([
        'policy/derive/index.ts',
        'policy/derive/probe-plan.ts',
        'policy/env.ts',
        'policy/sandbox-path.ts',
        'backend/bwrap/compile.ts',
        'backend/bwrap/status.ts',
        'backend/nsjail/compile.ts',
        'backend/landlock/compile.ts',
        'backend/shared/bridge.ts',
        'backend/launch.ts',
        'profile/parse.ts',
      ]),
    );
  });

  it.each(PURE_FILES)('%s imports no I/O, process, terminal or shell module', (file) => {
    const specifiers = importSpecifiers(readFileSync(join(SRC_DIR, file), 'utf8'));
    expect(
      specifiers.filter((s) => FORBIDDEN_MODULES.includes(s)),
      'forbidden modules',
    ).toEqual([]);
    const intoShell = specifiers
      .filter((s) => s.startsWith('.'))
      .map((s) => relative(SRC_DIR, resolve(dirname(join(SRC_DIR, file)), s)))
      .filter(
        (target) =>
          SHELL_DIRS.some((d) => target === d || target.startsWith(`${d}/`)) ||
          target === 'api.js' ||
          BACKEND_SHELL.test(target.replace(/\.js$/, '.ts')),
      );
    expect(intoShell, "imports of runtime/, report/, cli/, api or a backend's shell half").toEqual([]);
  });

  it.each(PURE_FILES)('%s reads no ambient state (process.env, cwd, uid, clock, randomness)', (file) => {
    const code = readFileSync(join(SRC_DIR, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '');
    const ambient =
      code.match(
        /\bprocess\.(env|cwd|getuid|getgid|pid|stdin|argv)\b|\bDate\.now\(|\bnew Date\(|\bMath\.random\(|\bcrypto\.random/g,
      ) ?? [];
    expect(ambient).toEqual([]);
  });

  it('control: the same reader flags the imperative loader (profile/load.ts reads files)', () => {
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'profile/load.ts'), 'utf8'))).toContain('node:fs');
  });

  it('errors.ts imports nothing but the Violation types (themselves import-free)', () => {
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'errors.ts'), 'utf8'))).toEqual(['./policy/violation.js']);
    expect(readFileSync(join(SRC_DIR, 'errors.ts'), 'utf8')).toMatch(
      /^import type \{ Violation, ViolationSource \} from '\.\/policy\/violation\.js';$/m,
    );
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'policy/violation.ts'), 'utf8'))).toEqual([]);
  });
});
