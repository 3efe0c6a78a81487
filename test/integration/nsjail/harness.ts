// Runs real nsjail with the argv compileNsjail produces for a Policy derived (as src/api.ts prepare()
// does) from real probed host facts: a temp HOME with planted secrets, a temp workspace, a fake host
// environment full of credentials. Spawned with node:child_process, descriptors numbered as the
// runtime numbers them (3 log, 4 config, 5 seccomp).
import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  realpathSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Session } from '../../../src/backend/launch.js';
import { compileNsjail, type NsjailHost } from '../../../src/backend/nsjail/compile.js';
import { parseNsjailStatus, type NsjailStatus } from '../../../src/backend/nsjail/status.js';
import { derivePolicy } from '../../../src/policy/derive/index.js';
import { probePlanOf } from '../../../src/policy/derive/probe-plan.js';
import type { RunRequest } from '../../../src/policy/derive/request.js';
import { requestedWorkspace } from '../../../src/policy/derive/workspace.js';
import type { Host } from '../../../src/policy/host.js';
import { hostStatePaths } from '../../../src/host-state/host-state.js';
import { pathChain } from '../../../src/host/path-chain.js';
import type { Policy } from '../../../src/policy/types.js';
import { loadProfile } from '../../../src/profile/host/load.js';
import { hostPathOf } from '../../../src/policy/sandbox-path.js';
import { probePath, probePaths, scanRootOnly } from '../../../src/host/host-probe.js';
import { hostSeccompArch } from '../../../src/seccomp/index.js';
import { BUILTIN_PROFILES_DIR } from '../../helpers/paths.js';

const BUILT = join(process.env.HOME ?? '/root', '.cache', 'sbx-test', 'nsjail', 'nsjail', 'nsjail');

/** The nsjail binary to test with, or why there is none. */
export function findNsjail(): { path: string } | { missing: string } {
  const candidates = [process.env.SBX_NSJAIL, BUILT, '/root/.cache/sbx-test/nsjail/nsjail/nsjail'].filter(
    (p): p is string => Boolean(p),
  );
  const path = candidates.find((p) => existsSync(p));
  return path
    ? { path }
    : {
        missing: `no nsjail binary (looked at ${candidates.join(', ')}); build one from https://github.com/google/nsjail and set SBX_NSJAIL to it`,
      };
}

/** Host secrets the sandbox must never see. */
export const SECRET_ENV = {
  AWS_SECRET_ACCESS_KEY: 'nsjail-test-aws-secret-0123456789',
  GITHUB_TOKEN: 'ghp_nsjailTestToken0123456789',
  SBX_TEST_PLAIN_SECRET: 'nsjail-plain-secret-value',
};

export interface Fixture {
  root: string;
  home: string;
  workspace: string;
  /** A directory outside the workspace the sandbox must not write to. */
  outside: string;
  session: Session;
  close(): void;
}

/** A private tree: HOME with ~/.ssh/id_rsa, a workspace, an outside dir, a session dir with its empty file. */
export function makeFixture(): Fixture {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'sbx-nsjail-')));
  const home = join(root, 'home');
  const workspace = join(root, 'ws');
  const outside = join(root, 'outside');
  const sessionDir = join(root, 'session');
  for (const d of [home, join(home, '.ssh'), workspace, outside, sessionDir])
    mkdirSync(d, { recursive: true, mode: 0o755 });
  writeFileSync(join(home, '.ssh', 'id_rsa'), '-----BEGIN OPENSSH PRIVATE KEY----- planted\n', { mode: 0o600 });
  writeFileSync(join(workspace, 'hello.txt'), 'hello\n');
  const emptyFile = join(sessionDir, 'empty');
  writeFileSync(emptyFile, '', { mode: 0o444 });
  return {
    root,
    home,
    workspace,
    outside,
    session: { id: 'nsjail-test', dir: sessionDir, emptyFile },
    close: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** derivePolicy over real host facts, as src/api.ts prepare() gathers them. */
export async function derive(
  fx: Fixture,
  request: Partial<RunRequest> & { command: string[] },
  profileName = 'default',
): Promise<{ policy: Policy; host: Host }> {
  const uid = process.getuid!();
  const gid = process.getgid!();
  const empty = mkdtempSync(join(tmpdir(), 'sbx-nsjail-profiles-'));
  try {
    const resolved = await loadProfile(
      profileName,
      { cwd: empty, configHome: empty, builtinDir: BUILTIN_PROFILES_DIR, cacheDir: undefined },
      'test',
    );
    const env: Record<string, string> = {
      HOME: fx.home,
      PATH: '/usr/local/bin:/usr/bin:/bin',
      LANG: 'C.UTF-8',
      ...SECRET_ENV,
    };
    const baseVars = { home: fx.home, cwd: fx.workspace, session: fx.session.id };
    const req: RunRequest = { workspace: fx.workspace, ...request };
    const workspace = requestedWorkspace(resolved.profile, req, baseVars);
    const wsFact = probePath(workspace);
    const vars = { ...baseVars, workspace: wsFact.exists ? wsFact.real : workspace };
    const plan = probePlanOf(resolved.profile, req, vars, env);
    const keepsRoot = uid === 0 && resolved.profile.user !== 'root' && resolved.profile.mode !== 'danger';
    const host: Host = {
      uid,
      gid,
      home: fx.home,
      cwd: fx.workspace,
      stdinIsTty: false,
      env,
      paths: probePaths(plan.paths),
      hostState: hostStatePaths([fx.home], env).map((s) => ({ ...s, chain: pathChain(s.path) })),
      chains: Object.fromEntries([fx.workspace, realpathSync(fx.workspace)].map((p) => [p, pathChain(p)])),
      rootOnly: keepsRoot ? scanRootOnly(plan.rootOnlyRoots) : [],
      sensitiveFiles: { masks: [], protect: [], views: [] },
      bridge: { node: realpathSync(process.execPath), script: '/nonexistent/bridge.cjs' },
    };
    const policy = derivePolicy({
      profileName: resolved.name,
      profileHash: resolved.hash,
      profile: resolved.profile,
      request: req,
      host,
      plan,
    });
    return { policy, host };
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}

/** The command's absolute path inside the sandbox, found on its PATH (what the runtime passes as execPath). */
export function execPathOf(policy: Policy): string | undefined {
  const name = policy.command[0]!;
  if (name.includes('/')) return undefined;
  for (const dir of (policy.env.vars.PATH ?? '').split(':').filter(Boolean)) {
    const inside = join(dir, name);
    const host = hostPathOf(policy.mounts, inside);
    if (host && existsSync(host)) return inside;
  }
  return undefined;
}

export function nsjailHost(nsjail: string, policy: Policy): NsjailHost {
  const execPath = execPathOf(policy);
  return {
    path: nsjail,
    stdinIsTty: false,
    arch: hostSeccompArch(process.arch),
    uid: process.getuid!(),
    ...(execPath ? { execPath } : {}),
  };
}

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  log: string;
  status: NsjailStatus;
}

export interface RunOptions {
  input?: string;
  /** Called once nsjail is spawned, and with every chunk of the command's stdout. */
  onStart?: (child: ChildProcess) => void;
  onStdout?: (text: string, child: ChildProcess) => void;
  /** Rewrites nsjail's argv before the spawn (to provoke failures compileNsjail never emits). */
  editArgs?: (args: string[]) => string[];
}

/**
 * A data descriptor as a regular file nsjail can reopen through /proc/self/fd/N: written in the
 * private session dir, opened read-only, unlinked before the sandbox exists.
 */
function fileDescriptor(dir: string, name: string, data: Uint8Array): number {
  const path = join(dir, name);
  writeFileSync(path, data, { mode: 0o600, flag: 'wx' });
  try {
    return openSync(path, 'r');
  } finally {
    unlinkSync(path);
  }
}

/** Spawn the compiled launch (descriptors numbered from 3 as src/backend/host/exec.ts does); resolve when nsjail exits. */
export function runLaunch(policy: Policy, fx: Fixture, nsjail: string, opts: RunOptions = {}): Promise<Run> {
  const launch = compileNsjail(policy, fx.session, nsjailHost(nsjail, policy));
  const files = launch.fds.map((fd, i) =>
    fd.purpose === 'status' ? undefined : fileDescriptor(fx.session.dir, `fd${i + 3}`, fd.data),
  );
  let child: ChildProcess;
  try {
    child = spawn(launch.file, opts.editArgs ? opts.editArgs(launch.args) : launch.args, {
      env: launch.env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...files.map((f) => f ?? 'pipe')],
    });
  } finally {
    for (const f of files) if (f !== undefined) closeSync(f);
  }
  let log = '';
  launch.fds.forEach((fd, i) => {
    if (fd.purpose !== 'status') return;
    const stream = child.stdio[3 + i] as Readable;
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (log += c));
  });
  if (opts.input !== undefined) child.stdin!.end(opts.input);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    opts.onStdout?.(stdout, child);
  });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  opts.onStart?.(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, log, status: parseNsjailStatus({ code, signal }, log) }),
    );
  });
}
