// The layers of docs/ARCHITECTURE.md ("Pure core, imperative shell") are enforced by Biome's
// noRestrictedImports rules in biome.jsonc, run by `npm run lint`. This proves each layer's rule bites: a copy
// of biome.jsonc lints a throw-away tree whose files sit where the layers are and each import one module
// per line, and every line is refused or passed as the layers say.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';
import { writeTree } from '../../helpers/tmp.js';

type Verdict = 'refused' | 'allowed';

/** [importing file, specifier, verdict]: one case per layer rule, and a legal import beside each. */
const CASES: [string, string, Verdict][] = [
  // Nothing imports cli/, a file in no layer included; cli/ imports every layer below it.
  ['src/api.ts', './cli/run-command.js', 'refused'],
  ['src/new-module.ts', './cli/run-command.js', 'refused'],
  ['src/cli/x.ts', '../api.js', 'allowed'],
  ['src/cli/x.ts', '../pipeline/run.js', 'allowed'],
  ['src/cli/x.ts', '../runtime/exec.js', 'allowed'],
  ['src/api.ts', './pipeline/run.js', 'allowed'],
  // Only cli/ imports the library door.
  ['src/pipeline/x.ts', '../api.js', 'refused'],
  ['src/pipeline/x.ts', '../api-options.js', 'refused'],
  ['src/pipeline/x.ts', '../cli/run-command.js', 'refused'],
  ['src/pipeline/x.ts', '../runtime/exec.js', 'allowed'],
  ['src/pipeline/x.ts', '../report/report.js', 'allowed'],
  ['src/pipeline/x.ts', 'node:fs', 'allowed'],
  // The shell does not call back into pipeline/.
  ['src/runtime/x.ts', '../pipeline/run.js', 'refused'],
  ['src/runtime/network/x.ts', '../../pipeline/run.js', 'refused'],
  ['src/report/x.ts', '../pipeline/run.js', 'refused'],
  ['src/profile/load.ts', '../pipeline/run.js', 'refused'],
  ['src/runtime/x.ts', '../report/ledger.js', 'allowed'],
  ['src/report/x.ts', '../runtime/invoking-user.js', 'allowed'],
  ['src/runtime/x.ts', '../policy/types.js', 'allowed'],
  // The pure core imports neither the shell nor I/O.
  ['src/policy/x.ts', '../runtime/exec.js', 'refused'],
  ['src/policy/x.ts', '../report/ledger.js', 'refused'],
  ['src/backend/x.ts', '../profile/load.js', 'refused'],
  ['src/profile/x.ts', './load.js', 'refused'],
  ['src/errors.ts', './runtime/exec.js', 'refused'],
  ['src/limits/x.ts', '../pipeline/run.js', 'refused'],
  ['src/policy/x.ts', 'node:fs', 'refused'],
  ['src/policy/x.ts', 'node:fs/promises', 'refused'],
  ['src/seccomp/x.ts', 'node:child_process', 'refused'],
  ['src/policy/x.ts', 'execa', 'refused'],
  ['src/policy/x.ts', './types.js', 'allowed'],
  ['src/policy/x.ts', '../report/ending.js', 'allowed'],
  ['src/profile/x.ts', './schema.js', 'allowed'],
  ['src/backend/x.ts', '../seccomp/index.js', 'allowed'],
  // A backend's units and registry are the shell (they probe and read results); its compilers stay pure.
  ['src/backend/bwrap/compile.ts', './backend.js', 'refused'],
  ['src/backend/bwrap/compile.ts', '../unit.js', 'refused'],
  ['src/backend/bwrap/compile.ts', '../registry.js', 'refused'],
  ['src/backend/bwrap/compile.ts', '../../runtime/exec.js', 'refused'],
  ['src/backend/bwrap/compile.ts', 'node:fs', 'refused'],
  ['src/backend/bwrap/compile.ts', '../shared/bridge.js', 'allowed'],
  ['src/backend/bwrap/compile.ts', '../launch.js', 'allowed'],
  ['src/policy/x.ts', '../backend/registry.js', 'refused'],
  ['src/policy/x.ts', '../backend/nsjail/backend.js', 'refused'],
  ['src/export/x.ts', '../backend/shared/gap.js', 'allowed'],
  ['src/backend/bwrap/backend.ts', '../../runtime/host-probe.js', 'allowed'],
  ['src/backend/bwrap/backend.ts', '../../pipeline/run.js', 'refused'],
  ['src/backend/registry.ts', '../runtime/exec.js', 'allowed'],
  ['src/backend/unit.ts', '../runtime/exec.js', 'allowed'],
  ['src/policy/x.ts', 'node:path', 'allowed'],
  // policy/derive/, one level down, is the same pure core.
  ['src/policy/derive/x.ts', '../../runtime/pins.js', 'refused'],
  ['src/policy/derive/x.ts', '../../pipeline/policy-stage.js', 'refused'],
  ['src/policy/derive/x.ts', 'node:fs', 'refused'],
  ['src/policy/derive/x.ts', '../host.js', 'allowed'],
  ['src/policy/derive/x.ts', '../../profile/schema.js', 'allowed'],
  // report/ending.ts, the one pure file in report/, imports the core only.
  ['src/report/ending.ts', 'node:fs', 'refused'],
  ['src/report/ending.ts', './ledger.js', 'refused'],
  ['src/report/ending.ts', '../runtime/exec.js', 'refused'],
  ['src/report/ending.ts', '../profile/load.js', 'refused'],
  ['src/report/ending.ts', '../backend/launch.js', 'allowed'],
  ['src/report/ending.ts', '../errors.js', 'allowed'],
  // src/git/: the auditor's model is pure, its host/ half the shell.
  ['src/git/x.ts', './host/walk.js', 'refused'],
  ['src/git/x.ts', 'node:fs', 'refused'],
  ['src/git/x.ts', '../runtime/exec.js', 'refused'],
  ['src/git/x.ts', '../policy/git-config.js', 'allowed'],
  ['src/policy/x.ts', '../git/host/auditor.js', 'refused'],
  ['src/git/host/x.ts', 'node:fs', 'allowed'],
  ['src/git/host/x.ts', '../changes.js', 'allowed'],
  ['src/git/host/x.ts', '../../pipeline/run.js', 'refused'],
  ['src/pipeline/x.ts', '../git/host/auditor.js', 'allowed'],
  // Tests import anything.
  ['test/unit/x.test.ts', '../../src/runtime/exec.js', 'allowed'],
];

const BIOME = join(REPO_ROOT, 'node_modules', '.bin', 'biome');
/** `file:line` of a refused import → Biome's message. */
const refused = new Map<string, string>();
let root = '';

/** Each case with its `file:line`: a file holds its cases' imports one a line, in table order. */
function located(): (readonly [string, string, Verdict, string])[] {
  const lines = new Map<string, number>();
  return CASES.map(([file, specifier, verdict]) => {
    const line = (lines.get(file) ?? 0) + 1;
    lines.set(file, line);
    return [file, specifier, verdict, `${file}:${line}`] as const;
  });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'sbx-boundaries-'));
  copyFileSync(join(REPO_ROOT, 'biome.jsonc'), join(root, 'biome.jsonc'));
  const files: Record<string, string> = {};
  CASES.forEach(([file, specifier], i) => {
    files[file] = `${files[file] ?? ''}import { m${i} } from '${specifier}';\n`;
  });
  writeTree(root, files);
  const lint = spawnSync(BIOME, ['lint', '--reporter=github', '--max-diagnostics=none', '.'], {
    cwd: root,
    encoding: 'utf8',
  });
  for (const match of lint.stdout.matchAll(
    /^::error title=lint\/style\/noRestrictedImports,file=([^,]+),line=(\d+),.*?::(.*)$/gm,
  )) {
    refused.set(`${relative(root, match[1]!)}:${match[2]}`, match[3]!);
  }
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('import boundaries (biome.jsonc)', () => {
  it.each(located())('%s: import %s is %s', (_file, _specifier, verdict, location) => {
    expect(refused.has(location), refused.get(location) ?? 'not refused').toBe(verdict === 'refused');
  });
});
