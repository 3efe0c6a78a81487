// 500 records appended by 50 real processes at once through the built library (dist/api.js), with
// rotation forced small so it happens many times mid-flight. Afterwards: every line of every file is
// one whole record, none lost, none duplicated, each process's records in its own order, and no
// rotated file was rotated twice (each one was already larger than maxBytes when it was renamed).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIST_API } from '../../helpers/sbx-cli.js';
import { makeTempDir } from '../../helpers/tmp.js';

const PROCESSES = 50;
const APPENDS = 10;
/** A few records per file. Appenders skip rotation while another process rotates, so the count varies (7-25 seen). */
const MAX_BYTES = 1024;
/** More rotated files than rotations, so none is dropped and every record can be counted. */
const KEEP = 200;

// Each child imports the library, says "ready", and appends only once the parent says "go" on stdin,
// so the appends of all 50 overlap instead of following each process's start-up.
const CHILD = `
const { appendAuditRecord } = await import(process.env.LEDGER_API);
const [file, proc, appends, maxBytes, keep] = [process.env.LEDGER_FILE, process.env.LEDGER_PROC, ...['LEDGER_APPENDS', 'LEDGER_MAX', 'LEDGER_KEEP'].map((k) => Number(process.env[k]))];
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  for (let i = 0; i < appends; i++) {
    appendAuditRecord(file, {
      v: 1, time: new Date().toISOString(), type: 'run', sessionId: proc + '-' + i, profile: 'default',
      policyHash: 'sha256:test', backend: 'bwrap', argv: ['sh', '-c', 'echo ' + 'x'.repeat(100)], workspace: '/w',
      exitCode: 0, setBy: 'child', durationMs: 1, violations: [],
    }, { maxBytes, keep });
  }
  process.exit(0);
});
`;

function startAppender(
  file: string,
  proc: number,
): { child: ChildProcess; ready: Promise<void>; exited: Promise<[number | null, string]> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    env: {
      PATH: process.env.PATH,
      LEDGER_API: pathToFileURL(DIST_API).href,
      LEDGER_FILE: file,
      LEDGER_PROC: `p${String(proc).padStart(2, '0')}`,
      LEDGER_APPENDS: String(APPENDS),
      LEDGER_MAX: String(MAX_BYTES),
      LEDGER_KEEP: String(KEEP),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = once(child, 'exit').then(([code]) => [code as number | null, stderr] as [number | null, string]);
  const ready = (async () => {
    for await (const line of createInterface({ input: child.stdout! })) if (line === 'ready') return;
    throw new Error(`appender ${proc} ended before it was ready: ${stderr}`);
  })();
  return { child, ready, exited };
}

describe('audit ledger: concurrent appenders across processes', () => {
  beforeAll(() => {
    if (!existsSync(DIST_API)) throw new Error(`${DIST_API} is missing: run \`npm run build\` first`);
  });

  it(`${PROCESSES} processes × ${APPENDS} appends with rotation: every record exactly once, whole lines, no double rotation`, {
    timeout: 60_000,
  }, async () => {
    const dir = makeTempDir('sbx-ledger-');
    const file = join(dir, 'audit.jsonl');
    const appenders = Array.from({ length: PROCESSES }, (_, i) => startAppender(file, i));
    await Promise.all(appenders.map((a) => a.ready));
    for (const a of appenders) a.child.stdin!.end('go\n');
    const results = await Promise.all(appenders.map((a) => a.exited));
    expect(results.filter(([code]) => code !== 0)).toEqual([]);

    // The chain is contiguous: audit.jsonl, .1 … .N and nothing else (no lock or stale lock left).
    const names = readdirSync(dir);
    const rotated = names.filter((n) => n !== 'audit.jsonl').map((n) => Number(/^audit\.jsonl\.(\d+)$/.exec(n)?.[1]));
    expect(rotated.every((n) => Number.isInteger(n))).toBe(true);
    const oldest = Math.max(...rotated);
    expect(rotated.sort((a, b) => a - b)).toEqual(Array.from({ length: oldest }, (_, i) => i + 1));
    expect(oldest, 'rotations').toBeGreaterThanOrEqual(3);
    expect(oldest, 'rotations').toBeLessThan(KEEP);

    // Oldest file first: the order records were committed in.
    const files = [
      ...Array.from({ length: oldest }, (_, i) => `${file}.${oldest - i}`),
      ...(names.includes('audit.jsonl') ? [file] : []),
    ];
    const sessions: string[] = [];
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      expect(text.endsWith('\n'), `${f} ends with a whole line`).toBe(true);
      for (const line of text.slice(0, -1).split('\n')) {
        const record = JSON.parse(line) as { v: number; sessionId: string };
        expect(record.v).toBe(1);
        sessions.push(record.sessionId);
      }
      // Renamed only when larger than maxBytes: a file rotated twice would be a small fresh one.
      if (f !== file) expect(statSync(f).size, `${f} size`).toBeGreaterThan(MAX_BYTES);
    }

    expect(sessions).toHaveLength(PROCESSES * APPENDS);
    expect(new Set(sessions).size).toBe(PROCESSES * APPENDS);
    for (let p = 0; p < PROCESSES; p++) {
      const proc = `p${String(p).padStart(2, '0')}`;
      const own = sessions.filter((s) => s.startsWith(`${proc}-`));
      expect(own, proc).toEqual(Array.from({ length: APPENDS }, (_, i) => `${proc}-${i}`));
    }

    // The library's reader agrees, across all the rotated files.
    const { readAuditRecords } = (await import(pathToFileURL(DIST_API).href)) as typeof import('../../../src/api.js');
    expect(readAuditRecords(file).map((r) => r.sessionId)).toEqual(sessions);
  });
});
