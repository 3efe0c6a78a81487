// Asking instead of failing, end to end: sbx's library runs curl inside real bwrap behind the egress
// proxy, and a name the profile's network.allow does not list is put to the run's onNetworkRequest while
// the connection waits. Names resolve through the harness's map to loopback upstreams (allow_private
// names exactly their ports); nothing leaves the machine. Each answer is checked in the command's
// result, the report's violations, the audit ledger and the user's approvals store, beside the
// control: the same request without an asker fails as it always did.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAMES, startUpstreams, type Upstreams } from './harness.js';

const root = new URL('../../../', import.meta.url).pathname;
const api = join(root, 'dist', 'api.js');
const skip = process.env.SBX_SKIP_INTEGRATION === '1';

type Api = typeof import('../../../src/api.js');
type RunOptions = import('../../../src/api.js').RunOptions;
type NetworkRequest = import('../../../src/api.js').NetworkRequest;
let run: Api['run'];
let compile: Api['compile'];
let up: Upstreams;
let work: string;
let ws: string;
let ledger: string;
let env: Record<string, string>;
let profileFile: string;

const resolve = async (host: string) => NAMES[host] ?? [];

function sh(script: string, extra: Partial<RunOptions> = {}) {
  return run({
    command: ['sh', '-c', script],
    profile: profileFile,
    cwd: ws,
    stdio: 'capture',
    hostEnv: env,
    resolve,
    audit: { file: ledger },
    ...extra,
  });
}

/** `curl` printing only the status code (000 when no HTTP answer came), then a space. */
const status = (host: string, port: number) => `curl -s -o /dev/null -w '%{http_code} ' http://${host}:${port}/hello`;

interface LedgerApproval {
  type: string;
  sessionId: string;
  profile: string;
  argv: string[];
  decision: string;
  by: string;
  network?: { host: string; port: number };
}

function approvals(sessionId: string): LedgerApproval[] {
  if (!existsSync(ledger)) return [];
  return readFileSync(ledger, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LedgerApproval)
    .filter((r) => r.type === 'approval' && r.sessionId === sessionId);
}

/** Resolves once `name` exists in the workspace (watched, no polling). */
function appears(name: string): Promise<void> {
  return new Promise((done) => {
    const check = () => {
      if (!existsSync(join(ws, name))) return;
      watcher.close();
      done();
    };
    const watcher = watch(ws, check);
    check();
  });
}

function storeFile(): string {
  return join(env.XDG_STATE_HOME!, 'sbx', 'approvals.json');
}

/** `sbx run` under a pseudo-terminal (util-linux `script`), `typed` already waiting on it; resolves with everything the terminal showed. */
function onTerminal(sbxArgs: string[], typed: string): Promise<string> {
  const line = [process.execPath, join(root, 'bin', 'sbx.js'), ...sbxArgs]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(' ');
  const child = spawn('script', ['-qec', line, '/dev/null'], { cwd: ws, env, stdio: ['pipe', 'pipe', 'inherit'] });
  let shown = '';
  child.stdout.on('data', (d: Buffer) => (shown += d.toString()));
  child.stdin.end(typed);
  return new Promise((done) => child.once('close', () => done(shown)));
}

describe.skipIf(skip)('asking instead of failing: onNetworkRequest at the egress proxy', () => {
  beforeAll(async () => {
    if (!existsSync(api)) throw new Error(`${api} is missing: run npm run build first (or SBX_SKIP_INTEGRATION=1)`);
    for (const tool of ['bwrap', 'curl']) {
      if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0)
        throw new Error(`${tool} is not installed (apt-get install ${tool === 'bwrap' ? 'bubblewrap' : tool})`);
    }
    ({ run, compile } = (await import(api)) as Api);
    up = await startUpstreams();
    work = mkdtempSync(join(tmpdir(), 'sbx-ask-'));
    const home = join(work, 'home');
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      XDG_RUNTIME_DIR: join(work, 'run'),
      XDG_CACHE_HOME: join(work, 'cache'),
      XDG_CONFIG_HOME: join(work, 'config'),
      XDG_STATE_HOME: join(work, 'state'),
    };
    for (const d of [home, env.XDG_RUNTIME_DIR!]) spawnSync('mkdir', ['-p', '-m', '700', d]);
    ws = join(work, 'ws');
    spawnSync('mkdir', ['-p', ws]);
    ledger = join(work, 'audit.jsonl');
    // Outside the workspace: an `always` must land in the user's store, never next to the project.
    profileFile = join(work, 'ask.yaml');
    writeFileSync(
      profileFile,
      [
        'extends: default',
        'network:',
        '  allow: [allowed.test]',
        '  deny: [denied.test]',
        `  allow_private: ["127.0.0.1:${up.httpPort}"]`,
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await up?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('control: without an asker a name not in network.allow is refused as ever', async () => {
    const o = await sh(status('other.test', up.httpPort));
    expect(o.stdout.toString()).toBe('403 ');
    expect(o.violations).toEqual([
      expect.objectContaining({
        kind: 'network',
        rule: 'network.allow',
        host: 'other.test',
        port: up.httpPort,
        detail: `other.test:${up.httpPort} is not in network.allow`,
      }),
    ]);
    expect(approvals(o.sessionId)).toEqual([]);
  });

  it('once: the connection waits for the answer and goes through; asked once for the whole run', async () => {
    const asked: NetworkRequest[] = [];
    const o = await sh(`${status('other.test', up.httpPort)}; ${status('other.test', up.httpPort)}`, {
      onNetworkRequest: (request) => {
        asked.push(request);
        return 'once';
      },
    });
    expect(o.stdout.toString()).toBe('200 200 ');
    expect(o.violations).toEqual([]);
    expect(asked).toEqual([{ host: 'other.test', port: up.httpPort }]);
    expect(approvals(o.sessionId)).toEqual([
      expect.objectContaining({
        decision: 'once',
        by: 'user',
        network: { host: 'other.test', port: up.httpPort },
        argv: ['sh', '-c', expect.stringContaining('other.test')],
      }),
    ]);
    // Nothing remembered: the next run without an asker is refused again.
    const next = await sh(status('other.test', up.httpPort));
    expect(next.stdout.toString()).toBe('403 ');
  });

  it('under landlock (the proxy on the host loopback) the same question: once through, deny refused', async () => {
    const asked: NetworkRequest[] = [];
    const once = await sh(status('other.test', up.httpPort), {
      backend: 'landlock',
      onNetworkRequest: (request) => {
        asked.push(request);
        return 'once';
      },
    });
    expect(once.stdout.toString()).toBe('200 ');
    expect(once.violations).toEqual([]);
    const denied = await sh(status('other.test', up.httpPort), { backend: 'landlock', onNetworkRequest: () => 'deny' });
    expect(denied.stdout.toString()).toBe('403 ');
    expect(denied.violations[0]?.detail).toContain('asked, and denied for this run');
    expect(asked).toEqual([{ host: 'other.test', port: up.httpPort }]);
  });

  it('deny: refused for the rest of the run (asked once), the violation says it was asked', async () => {
    let asks = 0;
    const o = await sh(`${status('other.test', up.httpPort)}; ${status('other.test', up.httpPort)}`, {
      onNetworkRequest: async () => {
        asks++;
        return 'deny';
      },
    });
    expect(o.stdout.toString()).toBe('403 403 ');
    expect(asks).toBe(1);
    expect(o.violations[0]).toMatchObject({
      rule: 'network.allow',
      host: 'other.test',
      detail: `other.test:${up.httpPort} is not in network.allow; asked, and denied for this run`,
    });
    expect(approvals(o.sessionId)).toEqual([
      expect.objectContaining({ decision: 'deny', by: 'user', network: { host: 'other.test', port: up.httpPort } }),
    ]);
  });

  it('concurrent: connections to one destination share one question, and an allowed name is not held up by it', async () => {
    const asked: NetworkRequest[] = [];
    // The answer comes only after the command reached allowed.test (and wrote a file) while the
    // question was still open: the proxy served it meanwhile.
    const o = await sh(
      [
        `${status('other.test', up.httpPort)} > a.out &`,
        `${status('other.test', up.httpPort)} > b.out &`,
        `curl -sS http://allowed.test:${up.httpPort}/hello > allowed.out && touch allowed.done`,
        'wait',
        'cat a.out b.out allowed.out',
      ].join('\n'),
      {
        onNetworkRequest: async (request) => {
          asked.push(request);
          await appears('allowed.done');
          return 'once';
        },
      },
    );
    expect(o.stdout.toString()).toBe(`200 200 http hello from allowed.test:${up.httpPort}\n`);
    expect(asked).toEqual([{ host: 'other.test', port: up.httpPort }]);
    expect(o.violations).toEqual([]);
  });

  it('timeout: a question nobody answers is a denial that says so, and the asker is told to stop', async () => {
    let stopped = false;
    const o = await sh(status('other.test', up.httpPort), {
      networkRequestTimeoutMs: 1000,
      onNetworkRequest: (_request, { signal }) =>
        new Promise((done) =>
          signal.addEventListener('abort', () => {
            stopped = true;
            done('once');
          }),
        ),
    });
    expect(o.stdout.toString()).toBe('403 ');
    expect(stopped).toBe(true);
    expect(o.violations[0]?.detail).toBe(
      `other.test:${up.httpPort} is not in network.allow; asked, and no answer came within 1 s (denied)`,
    );
    expect(approvals(o.sessionId)).toEqual([
      expect.objectContaining({
        decision: 'refused',
        by: 'timeout',
        network: { host: 'other.test', port: up.httpPort },
      }),
    ]);
  });

  it('a deny-list hit and a private address are never asked: they stay refusals', async () => {
    const asked: NetworkRequest[] = [];
    const o = await sh(`${status('denied.test', up.httpPort)}; ${status('meta.test', up.httpPort)}`, {
      onNetworkRequest: (request) => {
        asked.push(request);
        return 'once';
      },
    });
    expect(o.stdout.toString()).toBe('403 403 ');
    // meta.test is not in allow: asked, allowed by name, then refused by its address (169.254.169.254).
    expect(asked).toEqual([{ host: 'meta.test', port: up.httpPort }]);
    expect(o.violations.map((v) => v.rule)).toEqual(['network.deny', 'network.private']);
  });

  it('always: remembered in the user approvals store (not the project) and honoured by later runs without an asker, for that port only', async () => {
    const before = readdirSync(ws).sort();
    const o = await sh(status('other.test', up.httpPort), { onNetworkRequest: () => 'always' });
    expect(o.stdout.toString()).toBe('200 ');
    expect(approvals(o.sessionId)).toEqual([
      expect.objectContaining({ decision: 'always', by: 'user', network: { host: 'other.test', port: up.httpPort } }),
    ]);
    const store = JSON.parse(readFileSync(storeFile(), 'utf8')) as {
      decisions: { profile: string; decision: string; network?: unknown }[];
    };
    expect(store.decisions).toEqual([
      expect.objectContaining({
        profile: profileFile,
        decision: 'always',
        network: { host: 'other.test', port: up.httpPort },
      }),
    ]);
    // Nothing written beside the project: the workspace holds what it held (and the empty `.sbx` any
    // first run makes, to hold it read-only: src/host-state/host/own-dirs.ts), and no profile file changed.
    expect(readdirSync(ws).sort()).toEqual([...new Set([...before, '.sbx'])].sort());
    expect(readdirSync(join(ws, '.sbx'))).toEqual([]);
    expect(readFileSync(profileFile, 'utf8')).not.toContain('other.test');

    const later = await sh(`${status('other.test', up.httpPort)}; ${status('other.test', up.httpsPort)}`);
    expect(later.stdout.toString()).toBe('200 403 ');
    expect(later.violations.map((v) => `${v.rule} ${v.host}:${v.port}`)).toEqual([
      `network.allow other.test:${up.httpsPort}`,
    ]);
    // The deny list still wins over a remembered answer: denied.test stays refused whatever was said.
    expect((await sh(status('denied.test', up.httpPort))).stdout.toString()).toBe('403 ');

    // What the model and the user read says so too: compile() lists it, and `sbx explain` names it.
    const compiled = await compile({ command: ['true'], profile: profileFile, cwd: ws, hostEnv: env });
    expect(compiled.remembered).toEqual([{ host: 'other.test', port: up.httpPort }]);
    const explained = spawnSync(
      process.execPath,
      [join(root, 'bin', 'sbx.js'), 'explain', '-p', profileFile, '--', 'true'],
      {
        cwd: ws,
        env,
        encoding: 'utf8',
      },
    );
    expect(explained.status, explained.stderr).toBe(0);
    expect(explained.stdout).toContain(`remembered other.test:${up.httpPort}: answered "always" in earlier runs`);
  });

  describe('on the terminal: sbx run --capture with a terminal on stdin', () => {
    beforeAll(() => {
      if (spawnSync('sh', ['-c', 'command -v script']).status !== 0)
        throw new Error('script (util-linux) is not installed: it gives the test a pseudo-terminal');
    });
    // 127.0.0.1 by its literal: the CLI resolves with the system resolver. NO_PROXY lists it, so curl names the proxy.
    const fetch = () => [
      'run',
      '--no-audit',
      '-p',
      profileFile,
      '--shell',
      `curl -s -o /dev/null -w 'status=%{http_code}' --noproxy '' --proxy "$HTTP_PROXY" http://127.0.0.1:${up.httpPort}/hello`,
    ];

    it('with --capture the question is put on the terminal; o lets the command through', async () => {
      const shown = await onTerminal(['run', '--capture', ...fetch().slice(1)], 'o\n');
      expect(shown).toContain(`sbx: the sandboxed command asks to connect to 127.0.0.1:${up.httpPort}`);
      expect(shown).toContain('status=200');
    });

    it('d denies, and the report says it was asked', async () => {
      const shown = await onTerminal(['run', '--capture', ...fetch().slice(1)], 'd\n');
      expect(shown).toContain('status=403');
      expect(shown).toContain('asked, and denied for this run');
    });

    it('control: without --capture the command owns the terminal, so nothing is asked and the refusal stands', async () => {
      const shown = await onTerminal(fetch(), 'o\n');
      expect(shown).not.toContain('asks to connect');
      expect(shown).toContain('status=403');
    });
  });
});
