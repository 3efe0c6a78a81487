// Every refusal names the profile line of its rule, through real bwrap (`node bin/sbx.js run`): a
// network refusal by the egress proxy (a deny entry, and nothing in network.allow), a command rule, a
// path guard, a limit that fires (from the profile, and from a flag), a setup refusal from a writable
// root. Each asserts `source` in the JSON report and `file:line` in the stderr summary, beside a
// control that the same probe passes where no rule stops it. Traffic stays on loopback.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReport } from '../../helpers/report.js';
import {
  makeTestHost,
  requireIntegrationPrerequisites,
  runHost,
  runSbx,
  runSbxRaw,
  SKIP_INTEGRATION,
  type TestHost,
} from '../../helpers/sbx-cli.js';

let t: TestHost;
let server: Server;
const sockets = new Set<Socket>();
let port: number;
let reports: string;
const opts = () => ({ env: t.env, cwd: t.workspace });

/** A profile beside the workspace (a file the sandbox cannot write), and the line of each marker in it. */
function profile(name: string, lines: string[]): { file: string; line: (marker: string) => number } {
  const file = join(t.root, `${name}.yaml`);
  writeFileSync(file, lines.join('\n') + '\n', { mode: 0o644 });
  return { file, line: (marker) => lines.findIndex((l) => l.includes(marker)) + 1 };
}

let n = 0;
/** sbx run with a report file; the report and stderr. */
async function run(args: string[]) {
  const report = join(reports, `r${n++}.json`);
  const r = await runSbx(['--report-file', report, ...args], opts());
  return { ...r, report: readReport(report) };
}

describe.skipIf(SKIP_INTEGRATION)('each refusal names its profile line (real bwrap via bin/sbx.js)', () => {
  beforeAll(async () => {
    requireIntegrationPrerequisites();
    t = makeTestHost('sources');
    reports = join(t.root, 'reports');
    mkdirSync(reports);
    writeFileSync(join(t.workspace, 'notes.txt'), 'hello\n');
    server = createServer((s) => {
      sockets.add(s.on('close', () => sockets.delete(s)));
      s.end('HTTP/1.1 200 OK\r\ncontent-length: 3\r\nconnection: close\r\n\r\nok\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    // The proxy may hold its half of a connection open: end them, or close() would wait for it.
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    t?.cleanup();
  });

  it('network: the deny entry that refused, and the network.allow line when nothing in it matched', async () => {
    const p = profile('net', [
      'extends: default',
      '# loopback only: the test server, by address',
      'network:',
      `  allow: ["127.0.0.1:${port}", "*.example"]`,
      '  deny:',
      '    - other.example',
      '    - blocked.example',
      `  allow_private: ["127.0.0.1:${port}"]`,
    ]);
    // --noproxy '': through the proxy even for 127.0.0.1, which NO_PROXY lists.
    const curl = (url: string) => [
      '-p',
      p.file,
      '--',
      'curl',
      '-fsS',
      '--noproxy',
      '',
      '--max-time',
      '5',
      '-o',
      '/dev/null',
      url,
    ];
    // Control: the allowed destination is reached through the same proxy.
    const ok = await run(curl(`http://127.0.0.1:${port}/`));
    expect(ok.code, ok.err).toBe(0);
    expect(ok.report.violations).toEqual([]);

    const denied = await run(curl('http://blocked.example/'));
    expect(denied.code).not.toBe(0);
    expect(denied.report.violations).toContainEqual(
      expect.objectContaining({
        rule: 'network.deny',
        source: { key: 'network.deny[1]', file: p.file, line: p.line('- blocked.example'), col: 7, origin: 'profile' },
      }),
    );
    expect(denied.err).toContain(`(../net.yaml:${p.line('- blocked.example')}:7 network.deny[1])`);

    const unlisted = await run(curl('http://unlisted.test/'));
    expect(unlisted.report.violations).toContainEqual(
      expect.objectContaining({
        rule: 'network.allow',
        source: { key: 'network.allow', file: p.file, line: p.line('allow: ['), col: 3, origin: 'profile' },
      }),
    );
    expect(unlisted.err).toMatch(
      new RegExp(
        `unlisted\\.test:80 is not in network\\.allow \\(\\.\\./net\\.yaml:${p.line('allow: [')}:3 network\\.allow\\)`,
      ),
    );
  });

  it('a command rule: the deny entry, in the error line and the report; a built-in default by name', async () => {
    const p = profile('cmd', ['extends: default', 'commands:', '  deny:', '    - wget', '    - ls']);
    const host = await runHost(['ls', 'notes.txt'], opts());
    expect(host.code).toBe(0);
    const allowed = await run(['-p', p.file, '--', 'cat', 'notes.txt']);
    expect(allowed.code).toBe(0);

    const r = await run(['-p', p.file, '--', 'ls', 'notes.txt']);
    expect(r.code).toBe(126);
    expect(r.report.violations).toEqual([
      expect.objectContaining({
        rule: 'commands.deny',
        source: { key: 'commands.deny[1]', file: p.file, line: 5, col: 7, origin: 'profile' },
      }),
    ]);
    expect(r.err).toMatch(
      /^sbx: error: ls is on the profile's deny list \(\.\.\/cmd\.yaml:5:7 commands\.deny\[1\]\)$/m,
    );
    // explain --json names the same line, without running anything.
    const explained = await runSbxRaw(['explain', '--json', '-p', p.file, '--', 'ls', 'notes.txt'], opts());
    expect(JSON.parse(explained.out).commandDecision.violations[0].source).toEqual(r.report.violations[0]!.source);

    // The built-in agent profile denies @network: the built-in file, shown as builtin:agent.
    const agent = await run(['-p', 'builtin:agent', '--', 'curl', 'http://x.test/']);
    expect(agent.code).toBe(126);
    const source = agent.report.violations.find((v) => v.rule === 'commands.deny')?.source;
    expect(source).toMatchObject({ key: 'commands.deny[0]', origin: 'profile' });
    expect(source?.file).toMatch(/\/profiles\/agent\.yaml$/);
    expect(agent.err).toMatch(new RegExp(`\\(builtin:agent:${source?.line}:${source?.col} commands\\.deny\\[0\\]\\)`));
  });

  it('a path guard: commands.paths', async () => {
    const p = profile('paths', ['extends: default', 'commands:', '  paths: workspace']);
    const inside = await run(['-p', p.file, '--', 'cat', 'notes.txt']);
    expect(inside.code).toBe(0);
    const r = await run(['-p', p.file, '--', 'cat', '/etc/hostname']);
    expect(r.code).toBe(126);
    expect(r.report.violations).toEqual([
      expect.objectContaining({
        kind: 'path',
        source: { key: 'commands.paths', file: p.file, line: 3, col: 3, origin: 'profile' },
      }),
    ]);
    expect(r.err).toContain('(../paths.yaml:3:3 commands.paths)');
  });

  it('a limit that fires: limits.timeout from the profile, --timeout from the flag', async () => {
    const p = profile('slow', ['extends: default', 'limits:', '  timeout: 1s']);
    const quick = await run(['-p', p.file, '--', 'true']);
    expect(quick.code).toBe(0);
    const r = await run(['-p', p.file, '--', 'sleep', '30']);
    expect(r.code).toBe(124);
    expect(r.report.violations).toEqual([
      expect.objectContaining({
        rule: 'limits.timeout',
        source: { key: 'limits.timeout', file: p.file, line: 3, col: 3, origin: 'profile' },
      }),
    ]);
    expect(r.err).toMatch(
      /^sbx: {3}runtime timeout \(limits\.timeout\): .* \(\.\.\/slow\.yaml:3:3 limits\.timeout\)$/m,
    );

    const flag = await run(['-p', p.file, '--timeout', '1s', '--', 'sleep', '30']);
    expect(flag.code).toBe(124);
    expect(flag.report.violations[0]?.source).toEqual({ key: '--timeout', origin: 'flag' });
    expect(flag.err).toContain('(flag --timeout)');
  });

  it('a setup refusal: the writable_roots entry that would hand over host state', async () => {
    const p = profile('home', ['extends: default', 'writable_roots:', `  - ${t.workspace}/out`, `  - ${t.home}`]);
    mkdirSync(join(t.workspace, 'out'), { recursive: true });
    const r = await run(['-p', p.file, '--', 'true']);
    expect(r.code).toBe(125);
    expect(r.report.error).toMatchObject({
      code: 'HOST_STATE_WRITABLE',
      source: { key: 'writable_roots[1]', file: p.file, line: 4, col: 5, origin: 'profile' },
    });
    expect(r.err).toMatch(/^sbx: error: writable_roots\[1\]: .* \(\.\.\/home\.yaml:4:5 writable_roots\[1\]\)$/m);
  });
});
