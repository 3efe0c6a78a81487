// The run context is the one place a run reads its process (pipeline/context-stage.ts): no stage, and no
// module a stage reaches, reads process.env, process.cwd(), process.stdin, process.execPath,
// process.arch, process.getuid or process.getgid. Two stages reading such a fact each would be free to
// disagree (the limits were once probed with process.env but applied with the caller's hostEnv).
// The modules checked are every src/ file src/pipeline/*.ts reaches by static or dynamic import.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');
const AMBIENT = /process\.(?:env|cwd|stdin|execPath|arch|getuid|getgid)\b/g;

/**
 * The reads allowed, by file and expression, each with why. A read listed here that is gone fails the
 * test too, so the list never outlives its reason.
 */
const ALLOWED: Record<string, { reads: string[]; why: string }> = {
  'src/pipeline/context-stage.ts': {
    reads: [
      'process.env',
      'process.cwd',
      'process.getuid',
      'process.getgid',
      'process.stdin',
      'process.arch',
      'process.execPath',
    ],
    why: 'stage 1: the run context is built from them, once',
  },
  'src/limits/host/cgroup/probe.ts': {
    reads: ['process.getuid', 'process.env'],
    why:
      "the env default serves sbx doctor and explain, which call it directly (the pipeline passes the context's: " +
      'test/unit/pipeline/limits-env.test.ts); getuid is the uid whose write access to a cgroup is checked, ' +
      "this process's own, which no option can set and so cannot differ from the context's",
  },
  'src/limits/host/cgroup/apply.ts': {
    reads: ['process.env', 'process.getuid'],
    why: "defaults for direct callers (tests); the pipeline passes the context's env and uid (limits-env.test.ts)",
  },
  'src/host/host-probe.ts': {
    reads: ['process.getuid'],
    why: "the owner sbx's own bwrap-version cache must have: this process's uid, which no option can set",
  },
  'src/sensitive/host/rules-cache.ts': {
    reads: ['process.getuid'],
    why: "the owner sbx's own compiled-rules cache must have: this process's uid, which no option can set",
  },
  'src/profile/host/load.ts': {
    reads: ['process.getuid'],
    why: 'the owner a profile file must have (also for the CLI commands that load profiles outside a run): this process’s uid, which no option can set',
  },
};

/** Every src/ file the pipeline reaches, by relative import (static or `import()`). */
function reachedFromPipeline(): string[] {
  const seen = new Set<string>();
  const stack = readdirSync(join(ROOT, 'src/pipeline'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(ROOT, 'src/pipeline', f));
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+)\.js'/g)) {
      const target = join(dirname(file), `${m[1]}.ts`);
      if (existsSync(target)) stack.push(target);
    }
  }
  return [...seen].map((f) => relative(ROOT, f)).sort();
}

/** The ambient reads of a file's code (comments left out: they may name what the code must not do). */
function ambientReads(file: string): string[] {
  const code = readFileSync(join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  return [...code.matchAll(AMBIENT)].map((m) => m[0]);
}

describe('ambient process state', () => {
  const files = reachedFromPipeline();

  it('reaches the stages and the runtime modules they call (the check is not vacuous)', () => {
    for (const f of [
      'src/pipeline/run.ts',
      'src/pipeline/policy-stage.ts',
      'src/backend/host/exec.ts',
      'src/limits/host/cgroup/probe.ts',
    ])
      expect(files).toContain(f);
  });

  it('is read only where the allow-list says, and why', () => {
    const found: Record<string, string[]> = {};
    for (const file of files) {
      const reads = [...new Set(ambientReads(file))];
      if (reads.length > 0) found[file] = reads.sort();
    }
    const allowed = Object.fromEntries(Object.entries(ALLOWED).map(([f, a]) => [f, [...a.reads].sort()]));
    expect(found).toEqual(allowed);
  });

  it('sees a read in code, not in a comment (control)', () => {
    expect(ambientReads('src/pipeline/context-stage.ts')).toContain('process.stdin');
    expect(ambientReads('src/pipeline/run.ts')).toEqual([]);
  });
});
