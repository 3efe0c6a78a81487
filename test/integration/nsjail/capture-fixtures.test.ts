// Captures the nsjail logs test/unit/backend/nsjail/status.test.ts parses, from real runs of the argv
// compileNsjail produces: fixtures/root as root, fixtures/user as an unprivileged user. Runs only when
// asked (SBX_CAPTURE_NSJAIL_FIXTURES=1), since it rewrites committed files:
//   SBX_CAPTURE_NSJAIL_FIXTURES=1 npx vitest run test/integration/nsjail/capture-fixtures.test.ts
// then the same as an unprivileged user. Review the diff: the unit tests pin what each log means.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../../src/policy/types.js';
import { derive, findNsjail, makeFixture, runLaunch, type Fixture, type RunOptions } from './harness.js';

const CAPTURE = process.env.SBX_CAPTURE_NSJAIL_FIXTURES === '1';
const found = findNsjail();
const NSJAIL = 'path' in found ? found.path : '';
const IS_ROOT = process.getuid!() === 0;
const OUT = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'unit',
  'nsjail',
  'fixtures',
  IS_ROOT ? 'root' : 'user',
);

/** The first child of nsjail: the command (pid 1 of its namespace). */
function commandPid(nsjailPid: number): number {
  return Number(readFileSync(`/proc/${nsjailPid}/task/${nsjailPid}/children`, 'utf8').trim().split(/\s+/)[0]);
}

/** Sends the command `signal` once it printed "ready". */
function signalCommand(signal: NodeJS.Signals): RunOptions {
  return { onStdout: (t, child) => void (t === 'ready\n' && process.kill(commandPid(child.pid!), signal)) };
}

/** nsjail's argv with its seccomp policy replaced by `policy`. */
function withKafel(args: string[], policy: string): string[] {
  const kept = args.filter((a, i) => a !== '--seccomp_string' && args[i - 1] !== '--seccomp_string');
  const end = kept.indexOf('--');
  return [...kept.slice(0, end), '--seccomp_string', policy, ...kept.slice(end)];
}

interface Case {
  name: string;
  command: string[];
  request?: Parameters<typeof derive>[1];
  edit?: (policy: Policy) => void;
  opts?: RunOptions;
  rootOnly?: boolean;
}

const CASES: Case[] = [
  { name: 'exit-0', command: ['sh', '-c', 'exit 0'] },
  { name: 'exit-42', command: ['sh', '-c', 'exit 42'] },
  { name: 'exit-255', command: ['sh', '-c', 'exit 255'] },
  // The command is pid 1 of its namespace and cannot signal itself: the signal comes from outside.
  { name: 'killed-9', command: ['sh', '-c', 'echo ready; exec sleep 30'], opts: signalCommand('SIGKILL') },
  { name: 'timeout', command: ['sleep', '30'], request: { command: [], limits: { timeout: '1s' } } },
  // A Kafel KILL rule for getppid, which sh calls at start-up: the kernel kills it with SIGSYS.
  {
    name: 'sigsys',
    command: ['sh', '-c', 'true'],
    opts: { editArgs: (args) => withKafel(args, 'POLICY p { KILL { getppid } } USE p DEFAULT ALLOW') },
  },
  {
    name: 'sigterm',
    command: ['sh', '-c', 'echo ready; exec sleep 30'],
    opts: { onStdout: (t, child) => void (t === 'ready\n' && child.kill('SIGTERM')) },
  },
  {
    name: 'nsjail-killed',
    command: ['sh', '-c', 'echo ready; exec sleep 30'],
    opts: {
      onStdout: (t, child) => {
        if (t !== 'ready\n') return;
        const pid = commandPid(child.pid!);
        child.kill('SIGKILL');
        process.kill(pid, 'SIGKILL');
      },
    },
  },
  {
    name: 'missing-bind',
    command: ['true'],
    edit: (p) =>
      void p.mounts.splice(1, 0, {
        kind: 'bind',
        source: '/nonexistent/src',
        target: '/opt/missing',
        access: 'ro',
        optional: false,
        reason: 'capture',
      }),
  },
  { name: 'execve-enoent', command: ['/nonexistent/cmd'] },
  { name: 'execve-eacces', command: ['./hello.txt'] },
  {
    name: 'kafel-error',
    command: ['true'],
    rootOnly: true,
    opts: {
      editArgs: (args) => withKafel(args, 'POLICY p { KILL { nosuchsyscall } } USE p DEFAULT ALLOW'),
    },
  },
  { name: 'cwd-missing', command: ['true'], rootOnly: true, edit: (p) => void (p.cwd = '/nonexistent') },
];

describe.runIf(CAPTURE)('capture nsjail logs for the status parser', () => {
  it.each(CASES.filter((c) => IS_ROOT || !c.rootOnly))('$name', async (c) => {
    expect(NSJAIL, 'no nsjail binary').not.toBe('');
    const fx: Fixture = makeFixture();
    try {
      const { policy } = await derive(fx, { ...c.request, command: c.command });
      c.edit?.(policy);
      const r = await runLaunch(policy, fx, NSJAIL, c.opts);
      expect(r.log).not.toBe('');
      mkdirSync(OUT, { recursive: true });
      writeFileSync(join(OUT, `${c.name}.log`), r.log);
    } finally {
      fx.close();
    }
  });
});
