// The layers of docs/ARCHITECTURE.md ("Where a file goes"), told by path alone, are enforced by Biome's
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
  ['src/cli/x.ts', '../backend/host/exec.js', 'allowed'],
  ['src/cli/mcp/x.ts', '../../api.js', 'allowed'],
  ['src/api.ts', './pipeline/run.js', 'allowed'],
  // Only cli/ imports the library door.
  ['src/pipeline/x.ts', '../api.js', 'refused'],
  ['src/pipeline/x.ts', '../api-options.js', 'refused'],
  ['src/pipeline/x.ts', '../cli/run-command.js', 'refused'],
  ['src/pipeline/x.ts', '../backend/host/exec.js', 'allowed'],
  ['src/pipeline/x.ts', '../report/report.js', 'allowed'],
  ['src/pipeline/x.ts', 'node:fs', 'allowed'],
  // A host/ folder, at any depth, is the shell: it does not call back into pipeline/ or up.
  ['src/host/x.ts', '../pipeline/run.js', 'refused'],
  ['src/network/host/x.ts', '../../pipeline/run.js', 'refused'],
  ['src/limits/host/cgroup/x.ts', '../../../pipeline/run.js', 'refused'],
  ['src/report/host/x.ts', '../../pipeline/run.js', 'refused'],
  ['src/profile/host/load.ts', '../../pipeline/run.js', 'refused'],
  ['src/git/host/x.ts', '../../api.js', 'refused'],
  ['src/host/x.ts', '../report/host/ledger.js', 'allowed'],
  ['src/report/host/x.ts', '../../host/invoking-user.js', 'allowed'],
  ['src/host/x.ts', '../policy/types.js', 'allowed'],
  ['src/git/host/x.ts', 'node:fs', 'allowed'],
  ['src/git/host/x.ts', '../changes.js', 'allowed'],
  ['src/limits/host/cgroup/x.ts', '../../plan.js', 'allowed'],
  // Everything else is the pure core: it imports neither a host/ folder nor I/O.
  ['src/policy/x.ts', '../backend/host/exec.js', 'refused'],
  ['src/policy/x.ts', '../report/host/ledger.js', 'refused'],
  ['src/backend/x.ts', '../profile/host/load.js', 'refused'],
  ['src/profile/x.ts', './host/load.js', 'refused'],
  ['src/git/x.ts', './host/walk.js', 'refused'],
  ['src/network/x.ts', './host/proxy.js', 'refused'],
  ['src/errors.ts', './host/pins.js', 'refused'],
  ['src/new-subsystem/x.ts', './host/probe.js', 'refused'],
  ['src/limits/x.ts', '../pipeline/run.js', 'refused'],
  ['src/report/x.ts', '../pipeline/run.js', 'refused'],
  ['src/report/x.ts', './host/ledger.js', 'refused'],
  ['src/policy/x.ts', 'node:fs', 'refused'],
  ['src/policy/x.ts', 'node:fs/promises', 'refused'],
  ['src/seccomp/x.ts', 'node:child_process', 'refused'],
  ['src/new-subsystem/x.ts', 'node:net', 'refused'],
  ['src/policy/x.ts', 'execa', 'refused'],
  ['src/policy/x.ts', './types.js', 'allowed'],
  ['src/policy/x.ts', '../report/ending.js', 'allowed'],
  ['src/policy/x.ts', '../host-state/host-state.js', 'allowed'],
  ['src/policy/x.ts', './host.js', 'allowed'],
  ['src/profile/x.ts', './schema.js', 'allowed'],
  ['src/backend/x.ts', '../seccomp/index.js', 'allowed'],
  ['src/report/x.ts', './ledger-line.js', 'allowed'],
  ['src/policy/x.ts', 'node:path', 'allowed'],
  // A backend's units, registry and exec are its host/ half; its compilers stay pure.
  ['src/backend/bwrap/compile.ts', './host/backend.js', 'refused'],
  ['src/backend/bwrap/compile.ts', '../host/unit.js', 'refused'],
  ['src/backend/bwrap/compile.ts', '../host/registry.js', 'refused'],
  ['src/backend/bwrap/compile.ts', 'node:fs', 'refused'],
  ['src/backend/bwrap/compile.ts', '../shared/bridge.js', 'allowed'],
  ['src/backend/bwrap/compile.ts', '../launch.js', 'allowed'],
  ['src/policy/x.ts', '../backend/nsjail/host/backend.js', 'refused'],
  ['src/export/x.ts', '../backend/shared/gap.js', 'allowed'],
  ['src/backend/bwrap/host/backend.ts', '../../../host/host-probe.js', 'allowed'],
  ['src/backend/bwrap/host/backend.ts', '../compile.js', 'allowed'],
  ['src/backend/bwrap/host/backend.ts', '../../../pipeline/run.js', 'refused'],
  ['src/backend/host/registry.ts', './exec.js', 'allowed'],
  // policy/derive/, one level down, is the same pure core.
  ['src/policy/derive/x.ts', '../../host/pins.js', 'refused'],
  ['src/policy/derive/x.ts', '../../pipeline/policy-stage.js', 'refused'],
  ['src/policy/derive/x.ts', 'node:fs', 'refused'],
  ['src/policy/derive/x.ts', '../host.js', 'allowed'],
  ['src/policy/derive/x.ts', '../../profile/schema.js', 'allowed'],
  ['src/pipeline/x.ts', '../git/host/auditor.js', 'allowed'],
  // Tests import anything.
  ['test/unit/x.test.ts', '../../src/backend/host/exec.js', 'allowed'],
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
