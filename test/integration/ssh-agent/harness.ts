// A real ssh-agent, real keys and (for git push) a real sshd on 127.0.0.1, each started by the test in
// a temp directory of its own and stopped after it. Nothing here listens beyond loopback. OpenSSH's
// tools are optional host tools: `missingTools` names what to install, and the tests skip visibly.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { SAFETY_MS } from '../../helpers/sbx-cli.js';

export const SSHD = '/usr/sbin/sshd';

/** Why these tests cannot run here (the apt package CI must install), or '' when they can. */
export function missingTools(tools: readonly string[]): string {
  const missing = tools.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0 && !existsSync(t));
  if (missing.length === 0) return '';
  const pkg = missing.includes(SSHD) ? 'openssh-server' : 'openssh-client';
  return `${missing.join(', ')} not installed (apt-get install ${pkg})`;
}

/** Runs a tool to completion; throws with its stderr when it fails. */
export function must(command: string, args: readonly string[], env: Record<string, string> = {}): string {
  const r = spawnSync(command, args, { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

export interface TestKey {
  /** The private key file (outside every sandbox). */
  file: string;
  pub: string;
  comment: string;
  /** As `ssh-add -l` prints it. */
  fingerprint: string;
}

export function makeKey(dir: string, name: string, comment: string): TestKey {
  const file = join(dir, name);
  must('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file]);
  const fingerprint = must('ssh-keygen', ['-lf', `${file}.pub`]).split(' ')[1]!;
  return { file, pub: `${file}.pub`, comment, fingerprint };
}

/** Resolves once what `child` wrote to `stream` matches `re`; rejects if it exits or the safety net fires. */
function readyOn(child: ChildProcess, stream: 'stdout' | 'stderr', re: RegExp, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${what} not ready after ${SAFETY_MS} ms: ${text}`)), SAFETY_MS);
    child[stream]!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (re.test(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before it was ready: ${text}`));
    });
  });
}

export interface Agent {
  socket: string;
  /** `ssh-add ARGS` against this agent, unsandboxed: the control and the check after a run. */
  add(args: readonly string[], env?: Record<string, string>): { status: number | null; out: string; err: string };
  stop(): void;
}

/** `ssh-agent -D`: in the foreground; it prints SSH_AUTH_SOCK once its socket listens. */
export async function startAgent(dir: string, name = 'agent.sock'): Promise<Agent> {
  const socket = join(dir, name);
  const child = spawn('ssh-agent', ['-D', '-a', socket], { stdio: ['ignore', 'pipe', 'ignore'] });
  await readyOn(child, 'stdout', /SSH_AUTH_SOCK=/, 'ssh-agent');
  return {
    socket,
    add(args, env = {}) {
      const r = spawnSync('ssh-add', args, {
        encoding: 'utf8',
        input: '',
        env: { PATH: '/usr/bin:/bin', SSH_AUTH_SOCK: socket, ...env },
      });
      return { status: r.status, out: r.stdout, err: r.stderr };
    },
    stop: () => void child.kill('SIGKILL'),
  };
}

/** A port nothing listens on now (127.0.0.1 only). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Sshd {
  port: number;
  stop(): void;
}

/**
 * sshd on 127.0.0.1 with its own host key and config in `dir`, letting in `authorizedKeys` only, as
 * the user running the test (sshd not run by root can log in only as its own user).
 */
export async function startSshd(dir: string, authorizedKeys: string): Promise<Sshd> {
  const hostKey = join(dir, 'host_ed25519');
  must('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  // Root's sshd insists on its privilege separation directory, which the package's service creates.
  if (process.getuid?.() === 0 && !existsSync('/run/sshd')) must('mkdir', ['-m', '0755', '/run/sshd']);
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  const lines = [
    'ListenAddress 127.0.0.1',
    `Port ${port}`,
    `HostKey ${hostKey}`,
    `AuthorizedKeysFile ${authorizedKeys}`,
    'PidFile none',
    'StrictModes no',
    'UsePAM no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PubkeyAuthentication yes',
    'PermitRootLogin prohibit-password',
    'LogLevel VERBOSE',
  ];
  writeFileSync(config, lines.map((l) => l + '\n').join(''));
  const child = spawn(SSHD, ['-f', config, '-D', '-e'], { stdio: ['ignore', 'ignore', 'pipe'] });
  await readyOn(child, 'stderr', /Server listening on 127\.0\.0\.1 port/, 'sshd');
  return { port, stop: () => void child.kill('SIGKILL') };
}

/** The user name sshd logs the test in as: the one running it. */
/**
 * A shell line that writes, at `path`, an askpass program printing a fixed lock password: `ssh-add
 * -x`/`-X` read none from stdin, and the agent refuses an empty one.
 */
export function askpassScript(path: string): string {
  return `printf '#!/bin/sh\\necho sbx-test-lock\\n' > ${path} && chmod 700 ${path}`;
}

/** The environment that makes ssh-add ask `askpass` for the password. */
export const askpassEnv = (askpass: string) => ({ SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force' });

export function userName(): string {
  const uid = process.getuid?.();
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[2] === String(uid));
  if (!line) throw new Error(`uid ${uid} has no /etc/passwd entry: sshd cannot log it in`);
  return line.split(':')[0]!;
}
