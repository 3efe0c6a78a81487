// 500 real sandboxed runs appending to one ledger at once: 20 processes (the O_APPEND guarantee is
// between processes) × 25 concurrent library runs each. Afterwards every line is one whole JSON
// record and every run is there exactly once. (Rotation under concurrency: ledger/concurrency.test.ts.)
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIST_API,
  makeTestHost,
  requireIntegrationPrerequisites,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

const PROCESSES = 20;
const RUNS_EACH = 25;
let t: TestHost;

// Each worker runs RUNS_EACH sandboxes concurrently with an argv naming it, and prints how many ran.
const WORKER = `
const { run } = await import(process.argv[1]);
const [file, worker, count] = process.argv.slice(2);
const outcomes = await Promise.all(Array.from({ length: Number(count) }, (_, i) =>
  run({ command: ['true', 'w' + worker + '-' + i], stdio: 'ignore', audit: { file } })));
process.stdout.write(String(outcomes.filter((o) => o.exitCode === 0).length));
`;

function worker(file: string, index: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', WORKER, DIST_API, file, String(index), String(RUNS_EACH)],
      {
        cwd: t.workspace,
        env: t.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`worker ${index} exited ${code}: ${err}`)),
    );
  });
}

describe.skipIf(SKIP_INTEGRATION)('audit ledger under 500 concurrent sandboxed runs', () => {
  beforeAll(() => {
    requireIntegrationPrerequisites();
    t = makeTestHost('ledger');
  });
  afterAll(() => t?.cleanup());

  it('every line is valid JSON and every run is recorded exactly once', { timeout: 180_000 }, async () => {
    const dir = join(t.root, 'state');
    const file = join(dir, 'audit.jsonl');
    const ran = await Promise.all(Array.from({ length: PROCESSES }, (_, i) => worker(file, i)));
    expect(ran.map(Number)).toEqual(Array(PROCESSES).fill(RUNS_EACH));
    const lines = readdirSync(dir)
      .filter((f) => f.startsWith('audit.jsonl'))
      .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean));
    const records = lines.map((line) => JSON.parse(line) as { type: string; argv: string[]; exitCode: number });
    expect(records).toHaveLength(PROCESSES * RUNS_EACH);
    const tags = records.map((r) => r.argv[1]).sort();
    expect(new Set(tags).size).toBe(PROCESSES * RUNS_EACH);
    expect(records.every((r) => r.type === 'run' && r.exitCode === 0)).toBe(true);
  });
});
