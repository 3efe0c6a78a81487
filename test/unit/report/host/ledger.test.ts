// The audit ledger on a real temp directory: one line per record, filters, rotation at its exact
// boundary (and the lock that guards it), corrupt and torn lines, secret redaction, private modes,
// over-long lines; and `sbx log`'s table and JSON over the same files. Concurrency across real
// processes is in test/integration/ledger/concurrency.test.ts.
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatLogTable, logCommand } from '../../../../src/cli/log.js';
import {
  appendAuditRecord,
  type AuditRecord,
  ledgerPath,
  MAX_LINE_BYTES,
  readAuditLedger,
  readAuditRecords,
  redactArgv,
} from '../../../../src/report/host/ledger.js';
import { makeTempDir } from '../../../helpers/tmp.js';
import { sbxErrorOf } from '../../../helpers/errors.js';

function run(sessionId: string, over: Partial<Extract<AuditRecord, { type: 'run' }>> = {}): AuditRecord {
  return {
    v: 1,
    time: '2025-03-01T10:00:00.000Z',
    type: 'run',
    sessionId,
    profile: 'default',
    policyHash: 'sha256:0123',
    backend: 'bwrap',
    argv: ['npm', 'test'],
    workspace: '/home/u/project',
    exitCode: 0,
    setBy: 'child',
    durationMs: 1234.5,
    violations: [],
    ...over,
  };
}

function approval(sessionId: string, over: Partial<Extract<AuditRecord, { type: 'approval' }>> = {}): AuditRecord {
  return {
    v: 1,
    time: '2025-03-01T10:00:01.000Z',
    type: 'approval',
    sessionId,
    profile: 'agent',
    fingerprint: 'f'.repeat(64),
    argv: ['git', 'push'],
    decision: 'once',
    by: 'user',
    ...over,
  };
}

function ledger(): string {
  return join(makeTempDir('sbx-ledger-'), 'state', 'sbx', 'audit.jsonl');
}

function lines(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n'), `${file} ends with a newline`).toBe(true);
  return text.slice(0, -1).split('\n');
}

const ids = (records: AuditRecord[]) => records.map((r) => r.sessionId);

describe('ledgerPath', () => {
  it('is $XDG_STATE_HOME/sbx/audit.jsonl, else ~/.local/state/sbx/audit.jsonl', () => {
    expect(ledgerPath({ XDG_STATE_HOME: '/s', HOME: '/h' })).toBe('/s/sbx/audit.jsonl');
    expect(ledgerPath({ HOME: '/h' })).toBe('/h/.local/state/sbx/audit.jsonl');
  });

  it('ignores a relative XDG_STATE_HOME (invalid per the XDG spec)', () => {
    expect(ledgerPath({ XDG_STATE_HOME: 'state', HOME: '/h' })).toBe('/h/.local/state/sbx/audit.jsonl');
  });

  it('SBX_AUDIT_FILE overrides both', () => {
    expect(ledgerPath({ SBX_AUDIT_FILE: '/var/log/sbx.jsonl', XDG_STATE_HOME: '/s', HOME: '/h' })).toBe(
      '/var/log/sbx.jsonl',
    );
  });
});

describe('appendAuditRecord / readAuditRecords', () => {
  it('appends one JSON line per record, `v` first, and reads them back in order', () => {
    const file = ledger();
    const records = [run('s1'), approval('s1'), run('s2', { exitCode: 137, signal: 'SIGKILL', setBy: 'sbx' })];
    for (const r of records) appendAuditRecord(file, r);
    const written = lines(file);
    expect(written).toHaveLength(3);
    for (const line of written) expect(line.startsWith('{"v":1,')).toBe(true);
    expect(written.map((l) => JSON.parse(l) as unknown)).toEqual(records);
    expect(readAuditRecords(file)).toEqual(records);
  });

  it('keeps `v` first whatever the caller’s key order', () => {
    const file = ledger();
    const { v, ...rest } = run('s1');
    appendAuditRecord(file, { ...rest, v } as AuditRecord);
    expect(lines(file)[0]!.startsWith('{"v":1,"time":')).toBe(true);
  });

  it('creates the directories 0700 and the file 0600', () => {
    const file = ledger();
    appendAuditRecord(file, run('s1'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, '..')).mode & 0o777).toBe(0o700);
    expect(statSync(join(file, '..', '..')).mode & 0o777).toBe(0o700);
  });

  it('reads a missing ledger as empty', () => {
    expect(readAuditLedger(ledger())).toEqual({ records: [], corruptLines: 0 });
  });

  it('filters by session, profile and violation kind; limit keeps the newest, newest last', () => {
    const file = ledger();
    const timeout = {
      phase: 'runtime',
      kind: 'timeout',
      rule: 'limits.timeout',
      detail: 'ran longer than 1 s',
      limit: '1s',
    } as const;
    const network = {
      phase: 'runtime',
      kind: 'network',
      rule: 'network.deny',
      detail: 'example.com:443 refused',
      host: 'example.com',
      port: 443,
    } as const;
    appendAuditRecord(file, run('a', { violations: [timeout] }));
    appendAuditRecord(file, approval('a'));
    appendAuditRecord(file, run('b', { profile: 'agent', violations: [network, timeout] }));
    appendAuditRecord(file, run('c', { profile: 'agent' }));
    appendAuditRecord(file, run('d', { violations: [network] }));

    expect(ids(readAuditRecords(file, { session: 'a' }))).toEqual(['a', 'a']);
    expect(readAuditRecords(file, { session: 'a' }).map((r) => r.type)).toEqual(['run', 'approval']);
    expect(ids(readAuditRecords(file, { profile: 'agent' }))).toEqual(['a', 'b', 'c']);
    expect(ids(readAuditRecords(file, { violation: 'timeout' }))).toEqual(['a', 'b']);
    expect(ids(readAuditRecords(file, { violation: 'network', profile: 'default' }))).toEqual(['d']);
    expect(ids(readAuditRecords(file, { limit: 2 }))).toEqual(['c', 'd']);
    expect(ids(readAuditRecords(file, { profile: 'agent', limit: 1 }))).toEqual(['c']);
    expect(readAuditRecords(file, { session: 'zzz' })).toEqual([]);
    expect(readAuditRecords(file, { limit: 0 })).toEqual([]);
  });

  it('refuses a symlink at the ledger path (O_NOFOLLOW) and writes nothing through it', () => {
    const file = ledger();
    mkdirSync(join(file, '..'), { recursive: true });
    const target = join(file, '..', 'elsewhere');
    writeFileSync(target, '');
    symlinkSync(target, file);
    const error = sbxErrorOf(() => appendAuditRecord(file, run('s1')));
    expect(error.code).toBe('AUDIT_FILE');
    expect(error.message).toContain(file);
    expect(readFileSync(target, 'utf8')).toBe('');
  });

  it('refuses a FIFO at the ledger path without hanging', () => {
    const file = ledger();
    mkdirSync(join(file, '..'), { recursive: true });
    expect(spawnSync('mkfifo', [file]).status).toBe(0);
    expect(sbxErrorOf(() => appendAuditRecord(file, run('s1'))).code).toBe('AUDIT_FILE');
  });

  it('refuses nonsensical rotation settings', () => {
    expect(sbxErrorOf(() => appendAuditRecord(ledger(), run('s1'), { keep: 0 })).code).toBe('USAGE');
    expect(sbxErrorOf(() => appendAuditRecord(ledger(), run('s1'), { maxBytes: 0 })).code).toBe('USAGE');
  });
});

describe('rotation', () => {
  // Every record the same size, so the boundary is exact.
  const recordBytes = Buffer.byteLength(JSON.stringify(run('s00')) + '\n');
  const filesOf = (file: string) => readdirSync(join(file, '..')).sort();

  it('rotates only once the file is larger than maxBytes, after committing the record', () => {
    const file = ledger();
    const maxBytes = 3 * recordBytes;
    for (const id of ['s01', 's02', 's03']) appendAuditRecord(file, run(id), { maxBytes });
    expect(filesOf(file)).toEqual(['audit.jsonl']); // exactly maxBytes: not larger
    expect(statSync(file).size).toBe(maxBytes);
    appendAuditRecord(file, run('s04'), { maxBytes });
    expect(filesOf(file)).toEqual(['audit.jsonl.1']);
    expect(lines(`${file}.1`)).toHaveLength(4);
    appendAuditRecord(file, run('s05'), { maxBytes });
    expect(filesOf(file)).toEqual(['audit.jsonl', 'audit.jsonl.1']);
    expect(ids(readAuditRecords(file))).toEqual(['s01', 's02', 's03', 's04', 's05']);
  });

  it('keeps `keep` rotated files, drops the oldest, and reads across them newest last', () => {
    const file = ledger();
    // Each record alone exceeds maxBytes: every append rotates.
    const opts = { maxBytes: recordBytes - 1, keep: 3 };
    for (let i = 1; i <= 6; i++) appendAuditRecord(file, run(`s0${i}`), opts);
    expect(filesOf(file)).toEqual(['audit.jsonl.1', 'audit.jsonl.2', 'audit.jsonl.3']);
    expect(ids(readAuditRecords(file))).toEqual(['s04', 's05', 's06']);
    expect(ids(readAuditRecords(file, { limit: 2 }))).toEqual(['s05', 's06']);
    appendAuditRecord(file, run('s07'), { maxBytes: 10 * recordBytes, keep: 3 });
    expect(ids(readAuditRecords(file))).toEqual(['s04', 's05', 's06', 's07']);
  });

  it('reads only as many rotated files as the limit needs', () => {
    const file = ledger();
    const opts = { maxBytes: recordBytes - 1, keep: 5 };
    for (let i = 1; i <= 3; i++) appendAuditRecord(file, run(`s0${i}`), opts);
    writeFileSync(`${file}.3`, 'garbage\n'); // the oldest, s01
    expect(readAuditLedger(file, { limit: 2 })).toMatchObject({ corruptLines: 0 });
    expect(readAuditLedger(file, { limit: 3 })).toMatchObject({ corruptLines: 1 });
  });

  it('skips rotation while another process holds the lock, and still appends', () => {
    const file = ledger();
    appendAuditRecord(file, run('s01'));
    writeFileSync(`${file}.lock`, '1 2');
    appendAuditRecord(file, run('s02'), { maxBytes: 1 });
    expect(filesOf(file)).toEqual(['audit.jsonl', 'audit.jsonl.lock']);
    expect(readFileSync(`${file}.lock`, 'utf8')).toBe('1 2'); // not ours: left alone
    expect(ids(readAuditRecords(file))).toEqual(['s01', 's02']);
  });

  it('breaks a lock older than 10 s, rotates and releases', () => {
    const file = ledger();
    appendAuditRecord(file, run('s01'));
    writeFileSync(`${file}.lock`, '1 2');
    const old = new Date(Date.now() - 11_000);
    utimesSync(`${file}.lock`, old, old);
    appendAuditRecord(file, run('s02'), { maxBytes: 1 });
    expect(filesOf(file)).toEqual(['audit.jsonl.1']);
    expect(ids(readAuditRecords(file))).toEqual(['s01', 's02']);
  });
});

describe('corrupt lines', () => {
  it('skips and counts them; a torn line still yields the record appended after it', () => {
    const file = ledger();
    appendAuditRecord(file, run('s1'));
    appendFileSync(file, 'not json\n{"v":1,"type":"run"}\n[1,2]\n\n');
    const torn = JSON.stringify(run('lost')).slice(0, 40);
    appendFileSync(file, torn); // a short write: no newline
    appendAuditRecord(file, run('s2'));
    appendAuditRecord(file, approval('s3'));
    expect(readAuditLedger(file)).toEqual({ records: [run('s1'), run('s2'), approval('s3')], corruptLines: 4 });
  });

  it('does not count an unterminated last line (a write in progress)', () => {
    const file = ledger();
    appendAuditRecord(file, run('s1'));
    appendFileSync(file, JSON.stringify(run('s2')).slice(0, 30));
    expect(readAuditLedger(file)).toEqual({ records: [run('s1')], corruptLines: 0 });
  });

  it('cannot be fooled by a record-start lookalike inside a string', () => {
    const file = ledger();
    appendAuditRecord(file, run('s1', { argv: ['echo', '{"v":1,"time":"x"}'] }));
    expect(lines(file)[0]!.split('{"v":1,')).toHaveLength(2);
    expect(readAuditLedger(file)).toEqual({
      records: [run('s1', { argv: ['echo', '{"v":1,"time":"x"}'] })],
      corruptLines: 0,
    });
  });
});

describe('redactArgv', () => {
  it('replaces every occurrence of every secret inside each element', () => {
    expect(redactArgv(['curl', '-H', 'Authorization: Bearer s3cr3t', 's3cr3t:s3cr3t', 'plain'], ['s3cr3t'])).toEqual([
      'curl',
      '-H',
      'Authorization: Bearer <redacted>',
      '<redacted>:<redacted>',
      'plain',
    ]);
  });

  it('leaves no part of overlapping or nested secrets', () => {
    expect(redactArgv(['xabcdefghiy'], ['abcdef', 'defghi'])).toEqual(['x<redacted>y']);
    expect(redactArgv(['--token=abcd1234'], ['abcd', 'abcd1234'])).toEqual(['--token=<redacted>']);
    expect(redactArgv(['aaaaa'], ['aaaa'])).toEqual(['<redacted>']);
    expect(redactArgv(['abcdabcd'], ['abcd'])).toEqual(['<redacted>']);
  });

  it('ignores values shorter than 4 characters, and copies rather than mutates', () => {
    const argv = ['id', 'abc', 'xyz1'];
    expect(redactArgv(argv, ['abc', 'id'])).toEqual(['id', 'abc', 'xyz1']);
    expect(redactArgv(argv, ['xyz1'])).toEqual(['id', 'abc', '<redacted>']);
    expect(argv).toEqual(['id', 'abc', 'xyz1']);
  });
});

describe('line bound', () => {
  const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  it('truncates a long argv element with a marker instead of failing', () => {
    const file = ledger();
    const script = 'x'.repeat(4095) + '😀' + 'y'.repeat(200_000);
    appendAuditRecord(file, run('s1', { argv: ['sh', '-c', script] }));
    const [line] = lines(file);
    expect(Buffer.byteLength(line! + '\n')).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const { argv } = readAuditRecords(file)[0]!;
    expect(argv.slice(0, 2)).toEqual(['sh', '-c']);
    expect(argv[2]).toBe('x'.repeat(4095) + `<truncated: ${script.length - 4095} more chars>`);
    expect(loneSurrogate.test(argv[2]!)).toBe(false);
  });

  it('drops trailing arguments, counting them, when there are too many', () => {
    const file = ledger();
    const argv = ['xargs', ...Array.from({ length: 20_000 }, (_, i) => `file-${i}.txt`)];
    appendAuditRecord(file, run('s1', { argv }));
    expect(Buffer.byteLength(lines(file)[0]! + '\n')).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const kept = readAuditRecords(file)[0]!.argv;
    const marker = /^<truncated: (\d+) more arguments>$/.exec(kept.at(-1)!);
    expect(marker).not.toBeNull();
    expect(kept.slice(0, -1)).toEqual(argv.slice(0, kept.length - 1));
    expect(kept.length - 1 + Number(marker![1])).toBe(argv.length);
    expect(kept.length).toBeGreaterThan(1000);
  });

  it('keeps a line of exactly the bound untouched', () => {
    const file = ledger();
    const base = Buffer.byteLength(JSON.stringify(run('s1', { argv: ['a', ''] })) + '\n');
    const argv = ['a', 'b'.repeat(MAX_LINE_BYTES - base)];
    appendAuditRecord(file, run('s1', { argv }));
    expect(Buffer.byteLength(lines(file)[0]! + '\n')).toBe(MAX_LINE_BYTES);
    expect(readAuditRecords(file)[0]!.argv).toEqual(argv);
  });

  it('keeps a record too long even without its arguments, its long fields cut with markers', () => {
    const file = ledger();
    const workspace = '/w'.repeat(40_000);
    appendAuditRecord(file, run('s1', { workspace, error: { code: 'X', message: 'm'.repeat(100_000) } }));
    expect(Buffer.byteLength(lines(file)[0]! + '\n')).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const [kept] = readAuditRecords(file) as Extract<AuditRecord, { type: 'run' }>[];
    expect(kept!.sessionId).toBe('s1');
    expect(kept!.workspace).toBe(`${workspace.slice(0, 512)}<truncated: ${workspace.length - 512} more chars>`);
    expect(kept!.argv).toEqual(['npm', 'test']);
  });

  it('keeps a run refused thousands of distinct hosts: leading violations, the rest counted by kind', () => {
    const file = ledger();
    const refused = (i: number) => ({
      phase: 'runtime' as const,
      kind: 'network' as const,
      rule: 'network.deny',
      detail: `connection to host-${i}.example.com:443 refused`,
      host: `host-${i}.example.com`,
      port: 443,
    });
    const violations = [
      { phase: 'runtime' as const, kind: 'timeout' as const, rule: 'limits.timeout', detail: 'timed out' },
      ...Array.from({ length: 5000 }, (_, i) => refused(i)),
      { phase: 'runtime' as const, kind: 'oom' as const, rule: 'limits.memory', detail: 'h'.repeat(50_000) },
    ];
    const argv = ['xargs', ...Array.from({ length: 20_000 }, (_, i) => `file-${i}.txt`)];
    const record = run('s1', { violations, argv });
    // The control: this record is over the bound as it is.
    expect(Buffer.byteLength(JSON.stringify(record))).toBeGreaterThan(MAX_LINE_BYTES);
    appendAuditRecord(file, record);
    expect(Buffer.byteLength(lines(file)[0]! + '\n')).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const [kept] = readAuditRecords(file) as Extract<AuditRecord, { type: 'run' }>[];
    expect(kept!.sessionId).toBe('s1');
    expect(kept!.violations.length).toBeGreaterThan(100);
    expect(kept!.violations).toEqual(violations.slice(0, kept!.violations.length));
    const left = violations.length - kept!.violations.length;
    expect(kept!.violationsOmitted).toEqual({ network: left - 1, oom: 1 });
    expect(kept!.argv.length).toBeGreaterThan(100);
    expect(kept!.argv.at(-1)).toBe(`<truncated: ${argv.length - kept!.argv.length + 1} more arguments>`);
    expect(formatLogTable([kept!])[1]).toContain('timeout,network,oom');
    expect(readAuditRecords(file, { violation: 'network' })).toHaveLength(1);
  });
});

describe('sbx log', () => {
  let out = '';
  let err = '';
  function capture(): void {
    out = '';
    err = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((out += String(chunk)), true));
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((err += String(chunk)), true));
  }
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const denied = { phase: 'preflight', kind: 'command', rule: 'commands.deny', detail: 'rm is denied' } as const;

  it('prints an aligned table: runs and approvals, exit/signal/error, duration, violation kinds, quoted argv', () => {
    const table = formatLogTable([
      run('lx1-aa', { argv: ['sh', '-c', 'echo $HOME'], durationMs: 12.4 }),
      run('lx2-bb', { backend: 'nsjail', exitCode: 137, signal: 'SIGKILL', setBy: 'sbx', durationMs: undefined }),
      run('lx3-cc', {
        exitCode: 126,
        setBy: 'sbx',
        error: { code: 'COMMAND_DENIED', message: 'rm is denied' },
        violations: [denied, denied],
      }),
      approval('lx4-dd', { decision: 'always', by: 'stored' }),
    ]);
    expect(table).toEqual([
      'TIME                  SESSION  PROFILE  BACKEND  EXIT                      DURATION  VIOLATIONS  COMMAND',
      "2025-03-01 10:00:00Z  lx1-aa   default  bwrap    0                         12 ms     -           sh -c 'echo $HOME'",
      '2025-03-01 10:00:00Z  lx2-bb   default  nsjail   137 SIGKILL               -         -           npm test',
      '2025-03-01 10:00:00Z  lx3-cc   default  bwrap    126 COMMAND_DENIED        1.2 s     command     npm test',
      '2025-03-01 10:00:01Z  lx4-dd   agent    -        approved always (stored)  -         -           git push',
    ]);
  });

  it('escapes control characters in every column', () => {
    const [, row] = formatLogTable([run('s\x1b[2J', { profile: 'p\x9b1m', argv: ['echo', 'a\x1bb'] })]);
    expect(row).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect(row).toContain("echo $'a\\x1bb'");
  });

  it('shows the last 20 by default, or -n N; --json prints the records as JSON lines', async () => {
    const file = ledger();
    for (let i = 0; i < 25; i++) appendAuditRecord(file, run(`s${String(i).padStart(2, '0')}`));
    capture();
    await logCommand({ file });
    const rows = out.trimEnd().split('\n');
    expect(rows).toHaveLength(21);
    expect(rows[1]).toContain(' s05 ');
    expect(rows[20]).toContain(' s24 ');
    capture();
    await logCommand({ file, json: true, limit: '2', profile: 'default' });
    expect(
      out
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([run('s23'), run('s24')]);
    expect(err).toBe('');
  });

  it('notes an empty ledger (or no match) on stderr and prints nothing', async () => {
    const file = ledger();
    capture();
    await logCommand({ file });
    expect([out, err]).toEqual(['', `sbx: no audit records in ${file}\n`]);
    appendAuditRecord(file, run('s1'));
    appendFileSync(file, 'junk\n');
    capture();
    await logCommand({ file, violation: 'oom' });
    expect([out, err]).toEqual([
      '',
      `sbx: skipped 1 corrupt line in ${file} (or its rotated files)\nsbx: no audit records match in ${file}\n`,
    ]);
  });

  it('refuses a limit that is not a positive whole number', async () => {
    for (const limit of ['0', '-1', '2x', '1.5', '']) {
      await expect(logCommand({ file: ledger(), limit })).rejects.toMatchObject({ code: 'USAGE' });
    }
  });

  it('reads SBX_AUDIT_FILE when --file is absent', async () => {
    const file = ledger();
    appendAuditRecord(file, approval('via-env'));
    vi.stubEnv('SBX_AUDIT_FILE', file);
    try {
      capture();
      await logCommand({ json: true });
      expect((JSON.parse(out) as AuditRecord).sessionId).toBe('via-env');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
