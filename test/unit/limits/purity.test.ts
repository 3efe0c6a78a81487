// src/limits is pure core (docs/ARCHITECTURE.md): host facts come in as HostLimitFacts, nothing is
// read or spawned. Globbed, so a new file is covered the day it lands.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SRC_DIR } from '../../helpers/paths.js';

const FILES = readdirSync(join(SRC_DIR, 'limits')).filter((f) => f.endsWith('.ts'));
const FORBIDDEN = /^(node:)?(fs|fs\/promises|child_process|net|os|process|worker_threads)$|^(execa|chalk)$/;

function code(file: string): string {
  return readFileSync(join(SRC_DIR, 'limits', file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
}

function specifiers(source: string): string[] {
  return [
    ...source.matchAll(
      /\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]|\brequire\s*\(\s*['"]([^'"]+)['"]/g,
    ),
  ].map((m) => m[1] ?? m[2] ?? m[3]!);
}

describe('src/limits is pure', () => {
  it('has the modules this suite expects', () => {
    expect(FILES).toEqual(expect.arrayContaining(['units.ts', 'plan.ts', 'parse-limits.ts']));
  });

  it.each(FILES)('%s imports no I/O and nothing from a host/ folder, pipeline/ or cli/', (file) => {
    const imports = specifiers(code(file));
    expect(imports.filter((s) => FORBIDDEN.test(s))).toEqual([]);
    expect(imports.filter((s) => /(^|\/)(host|pipeline|cli)\//.test(s))).toEqual([]);
  });

  it.each(FILES)('%s reads no ambient state', (file) => {
    expect(code(file).match(/\bprocess\.\w+|\bDate\.now\(|\bnew Date\(|\bMath\.random\(/g) ?? []).toEqual([]);
  });

  it('control: the reader sees the I/O in the host/ half', () => {
    const probe = readFileSync(join(SRC_DIR, 'limits/host/cgroup/probe.ts'), 'utf8');
    expect(specifiers(probe)).toContain('node:fs');
    expect(probe).toMatch(/process\.env/);
  });
});
