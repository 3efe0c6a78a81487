// Issue 30: which of sbx's supervising processes share the command's rlimits, read from the host's
// /proc while the command waits. The rule: no helper of sbx's shares a limit with the command it
// watches, where the launcher can set the command's alone (docs/SECURITY.md "Landlock: the command's
// limits, SysV IPC and kernel state"). landlock: the helper's monitor keeps sbx's own limits, the
// command has the profile's. nsjail: its parent no longer runs under CPU, FSIZE and NOFILE, which it
// sets on the command itself. bwrap: its monitor runs under them (kept, and pinned here: bwrap cannot
// set an rlimit on the command alone; if one kills it, the sandbox goes with it). The control in each:
// the command itself has the profile's limits. landlock and nsjail were seen failing before the fix
// (their launcher had the profile's CPU time).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/paths.js';
import {
  makeTestHost,
  pidsWithArgv,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  startSbx,
  type TestHost,
} from '../../helpers/sbx-cli.js';
import { findNsjail } from '../nsjail/harness.js';

const NSJAIL = findNsjail();
if ('missing' in NSJAIL) console.warn(`[supervisors] nsjail case SKIPPED: ${NSJAIL.missing}`);
const HAS_LANDLOCK = existsSync(join(REPO_ROOT, 'dist', 'sbx-landlock'));
const LIMITS = ['--cpu-time', '7s', '--nofile', '77', '--file-size', '3MiB'];
/** The command: says it is ready, then waits for its stdin to close. Its argv is unique to this test process. */
const SCRIPT = `echo ready; read line; : ${process.pid}`;

let t: TestHost;

beforeAll(() => {
  if (SKIP_INTEGRATION) return;
  requireIntegrationPrerequisites();
  t = makeTestHost('supervisors');
});
afterAll(() => t?.cleanup());

/** Rows of /proc/PID/limits this test reads: [soft, hard]. */
function limitsOf(pid: number): Record<string, string[]> {
  const text = readFileSync(`/proc/${pid}/limits`, 'utf8');
  const rows = ['Max cpu time', 'Max open files', 'Max file size'];
  return Object.fromEntries(
    rows.map((row) => {
      const m = new RegExp(`^${row}\\s+(\\S+)\\s+(\\S+)`, 'm').exec(text);
      return [row, m ? [m[1]!, m[2]!] : []];
    }),
  );
}

function childrenOf(pid: number): number[] {
  const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
  return text === '' ? [] : text.split(/\s+/).map(Number);
}

const OWN = () => limitsOf(process.pid);
const PROFILE = {
  'Max open files': ['77', '77'],
  'Max file size': [String(3 * 1024 ** 2), String(3 * 1024 ** 2)],
};

describe.skipIf(SKIP_INTEGRATION).each([
  // [backend, available, what the launcher runs under: sbx's own limits, or the command's]
  ['landlock', HAS_LANDLOCK, 'own'],
  ['nsjail', 'path' in NSJAIL, 'own'],
  ['bwrap', true, 'profile'],
] as const)('--backend %s with --cpu-time 7s --nofile 77 --file-size 3MiB', (backend, available, launcherHas) => {
  it.skipIf(!available)(
    `the command has the profile's limits; the launcher ${launcherHas === 'own' ? "keeps sbx's own" : 'has them too (kept, see SECURITY.md)'}`,
    async () => {
      const nsjail = 'path' in NSJAIL ? { SBX_NSJAIL: NSJAIL.path } : {};
      const started = startSbx(['--backend', backend, ...LIMITS, '--', 'sh', '-c', SCRIPT], {
        env: { ...t.env, ...nsjail },
        cwd: t.workspace,
        stdin: 'pipe',
      });
      try {
        await started.line(/^ready$/);
        // sbx → the launcher (no wrapper left for landlock; the trampoline exec'd it for the others).
        const [launcher] = childrenOf(started.child.pid!);
        expect(launcher).toBeDefined();
        const [command] = pidsWithArgv(['sh', '-c', SCRIPT]);
        expect(command).toBeDefined();
        const commandLimits = limitsOf(command!);
        // nsjail sets soft = hard; the plan's RLIMIT_CPU is SIGXCPU at 7 s, SIGKILL a second later.
        expect(commandLimits).toEqual({
          'Max cpu time': backend === 'nsjail' ? ['7', '7'] : ['7', '8'],
          ...PROFILE,
        });
        const launcherLimits = limitsOf(launcher!);
        if (launcherHas === 'own') expect(launcherLimits).toEqual(OWN());
        else expect(launcherLimits).toEqual({ 'Max cpu time': ['7', '8'], ...PROFILE });
      } finally {
        started.stdin!.end();
      }
      const r = await started.done;
      expect([r.code, r.out]).toEqual([0, 'ready\n']);
    },
  );
});
