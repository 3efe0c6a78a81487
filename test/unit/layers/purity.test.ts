// The pure core (docs/ARCHITECTURE.md, "Where a file goes"): functions of data. It may not
// import I/O, process spawning, the terminal or the imperative shell (any host/ folder, pipeline/, cli/), and
// errors.ts imports nothing at all.
// Read from the source text and found by path, so a new file anywhere in src/ is covered the day it lands.
import { readdirSync, readFileSync } from 'node:fs';
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
/** The layers above the core, by path (biome.jsonc, docs/ARCHITECTURE.md "Where a file goes"). */
const isAboveCore = (path: string) =>
  /^(cli|pipeline)(\/|$)/.test(path) || /(^|\/)host(\/|$)/.test(path) || /^api(-options)?\.(ts|js)$/.test(path);

/** Every .ts file of src/ that no host/ folder, cli/, pipeline/ or the library door holds: found, not listed. */
const PURE_FILES = readdirSync(SRC_DIR, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts') && !isAboveCore(f))
  .sort();

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
      "export { y } from '../backend/host/exec.js';",
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
        '../backend/host/exec.js',
        './z.js',
        'node:child_process',
        'node:net',
      ].sort(),
    );
  });
});

describe('pure core', () => {
  it('the core is found by path: the top of every subsystem, none of its host/ half', () => {
    expect(PURE_FILES.filter((f) => f.includes('host/'))).toEqual([]);
    expect(PURE_FILES).toEqual(
      expect.arrayContaining([
        'policy/derive/index.ts',
        'policy/derive/probe-plan.ts',
        'env/env.ts',
        'policy/sandbox-path.ts',
        'backend/bwrap/compile.ts',
        'backend/bwrap/status.ts',
        'backend/nsjail/compile.ts',
        'backend/landlock/compile.ts',
        'backend/shared/bridge.ts',
        'backend/launch.ts',
        'profile/parse.ts',
        'git/changes.ts',
        'network/egress.ts',
        'report/ending.ts',
        'host-state/host-state.ts',
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
      .filter(isAboveCore);
    expect(intoShell, 'imports of a host/ folder, cli/, pipeline/ or the library door').toEqual([]);
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

  it('control: the same reader flags the imperative loader (profile/host/load.ts reads files)', () => {
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'profile/host/load.ts'), 'utf8'))).toContain('node:fs');
  });

  it('errors.ts imports nothing but the Violation types (themselves import-free)', () => {
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'errors.ts'), 'utf8'))).toEqual(['./policy/violation.js']);
    expect(readFileSync(join(SRC_DIR, 'errors.ts'), 'utf8')).toMatch(
      /^import type \{ Violation, ViolationSource \} from '\.\/policy\/violation\.js';$/m,
    );
    expect(importSpecifiers(readFileSync(join(SRC_DIR, 'policy/violation.ts'), 'utf8'))).toEqual([]);
  });
});
