// `sbx doctor`: can this host build the sandbox? Each check says what it found and how to fix it.
import { readFileSync } from 'node:fs';
import { execa } from 'execa';
import { probeBwrap, probeNsjail, type NsjailInfo } from '../host/host-probe.js';
import { probeHostFacts } from '../doctor/host/host-facts.js';
import { diagnoseHost, type Cause, type HostFacts } from '../doctor/host-diagnosis.js';
import { landlockHelperPath, profileSearch } from '../api.js';
import { judgeFix } from '../backend/landlock/network-judge.js';
import { isSbxError } from '../errors.js';
import { describePlan, planLimits } from '../limits/plan.js';
import { probeCgroupFacts } from '../limits/host/cgroup/probe.js';

interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail';
  detail: string;
  fix?: string;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function cgroupCheck(): Check {
  const mounts = read('/proc/self/mounts') ?? '';
  const v2 = mounts.split('\n').filter((l) => l.split(' ')[2] === 'cgroup2');
  const v1 = mounts.split('\n').filter((l) => l.split(' ')[2] === 'cgroup');
  const own = (read('/proc/self/cgroup') ?? '').trim();
  if (v1.length === 0 && v2.length > 0) {
    return {
      name: 'cgroups',
      status: 'ok',
      detail: `cgroup v2 (unified) at ${v2[0]!.split(' ')[1]}; this process is in ${own.replace(/^0::/, '')}`,
    };
  }
  if (v1.length > 0) {
    const controllers = v1.map((l) => l.split(' ')[1]!.split('/').pop()).join(', ');
    return {
      name: 'cgroups',
      status: 'ok',
      detail: `cgroup v1 controllers: ${controllers}${v2.length ? ` (and a v2 hierarchy at ${v2[0]!.split(' ')[1]})` : ''}`,
    };
  }
  return {
    name: 'cgroups',
    status: 'warn',
    detail: 'no cgroup filesystem mounted',
    fix: 'mount cgroup2 at /sys/fs/cgroup to enable memory/pids/cpu limits',
  };
}

/** Which mechanism each limit would get here, for a profile that sets them all (like `untrusted`). */
function limitsCheck(): Check {
  try {
    const plan = planLimits(
      {
        memoryBytes: 2 ** 31,
        pids: 512,
        cpus: 2,
        timeoutMs: 1_800_000,
        cpuTimeSec: 1200,
        fileSizeBytes: 2 ** 30,
        nofile: 4096,
        required: [],
      },
      probeCgroupFacts(),
    );
    const approximate = plan.limits.filter((l) => !l.exact);
    return {
      name: 'limits',
      status: approximate.length ? 'warn' : 'ok',
      detail: ['each limit would be enforced by:', ...describePlan(plan).map((l) => `  ${l}`)].join(
        '\n' + ' '.repeat(22),
      ),
      ...(approximate.length
        ? {
            fix: 'exact limits need cgroups: run as root, delegate a cgroup v2 subtree, or use systemd (systemd-run --user)',
          }
        : {}),
    };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return { name: 'limits', status: 'fail', detail: error.message, ...(error.hint ? { fix: error.hint } : {}) };
  }
}

function seccompCheck(): Check {
  const status = read('/proc/self/status') ?? '';
  const has = /^Seccomp:/m.test(status);
  return has
    ? { name: 'seccomp', status: 'ok', detail: 'the kernel supports seccomp filters' }
    : {
        name: 'seccomp',
        status: 'fail',
        detail: 'this kernel reports no seccomp support',
        fix: 'use a kernel built with CONFIG_SECCOMP_FILTER',
      };
}

/** Where sbx runs: a container, WSL, another sandbox. Informational: the user namespace check judges. */
function hostCheck(facts: HostFacts): Check {
  const where = [
    facts.container ? `a ${facts.container.kind} container (${facts.container.evidence})` : undefined,
    facts.wsl ? `WSL ${facts.wsl}` : undefined,
    facts.outerSbxSession !== undefined ? `inside sbx session ${facts.outerSbxSession}` : undefined,
    facts.inUserNamespace ? 'inside a user namespace' : undefined,
    facts.seccompMode === 2 ? `under ${facts.seccompFilters} seccomp filter(s)` : undefined,
    facts.noNewPrivs ? 'NoNewPrivs' : undefined,
  ].filter(Boolean);
  const detail = where.length ? where.join('; ') : 'not a container, not nested in a sandbox';
  return { name: 'host', status: 'ok', detail };
}

async function userNamespaceCheck(bwrap: string | undefined, uid: number, causes: Cause[]): Promise<Check> {
  const [cause] = causes.filter((c) => c.kind !== 'no-bwrap');
  if (!bwrap) {
    return cause
      ? { name: 'user namespaces', status: 'fail', detail: cause.message, fix: cause.fix }
      : { name: 'user namespaces', status: 'warn', detail: 'not tested: no bwrap' };
  }
  // bwrap has the last word: the facts only explain its failure.
  const r = await execa(
    bwrap,
    ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'],
    { reject: false, env: {}, extendEnv: false, timeout: 10000 },
  );
  const name = 'user namespaces';
  if (r.exitCode === 0) return { name, status: 'ok', detail: `bwrap can create user and pid namespaces as uid ${uid}` };
  const failed = `bwrap failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`;
  if (cause)
    return { name, status: 'fail', detail: `${failed}\n${' '.repeat(22)}cause: ${cause.message}`, fix: cause.fix };
  const fix = 'nothing visible blocks user namespaces: run `sbx explain -- true` and try its bwrap command by hand';
  return { name, status: 'fail', detail: failed, fix };
}

/** The optional backend: found, runs, has the mount API sbx compiles for, and can build a sandbox here. */
async function nsjailCheck(): Promise<Check> {
  let info: NsjailInfo;
  try {
    info = probeNsjail(process.env);
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return {
      name: 'nsjail',
      status: 'warn',
      detail: `${error.message} (optional: --backend nsjail)`,
      ...(error.hint ? { fix: error.hint } : {}),
    };
  }
  const r = await execa(
    info.path,
    ['-Mo', '--quiet', '--experimental_mnt', 'new', '--chroot', '/', '--user', '0', '--group', '0', '--', '/bin/true'],
    { reject: false, env: {}, extendEnv: false, timeout: 10000 },
  );
  return r.exitCode === 0
    ? {
        name: 'nsjail',
        status: 'ok',
        detail: `${info.version} at ${info.path}; it can build a sandbox as uid ${process.getuid?.() ?? 0}`,
      }
    : {
        name: 'nsjail',
        status: 'warn',
        detail: `${info.path} could not build a sandbox: ${r.stderr.trim().split('\n').pop() || `exit ${r.exitCode}`}`,
        fix: 'enable unprivileged user namespaces, or run it as root',
      };
}

/** The backend for hosts without user namespaces: its helper was built and the kernel's Landlock is recent enough. */
async function landlockCheck(): Promise<Check> {
  const { probeLandlock, probeNetworkJudge } = await import('../backend/landlock/host/landlock-probe.js');
  try {
    const info = probeLandlock(landlockHelperPath());
    const detail = `${info.version} at ${info.path}; --backend landlock (auto picks it where bwrap cannot work)`;
    const judgeUnavailable = probeNetworkJudge(info.path);
    if (judgeUnavailable) {
      const why = `; allow-list networks are refused here (${judgeUnavailable})`;
      return { name: 'landlock', status: 'warn', detail: detail + why, fix: judgeFix(judgeUnavailable) };
    }
    return { name: 'landlock', status: 'ok', detail };
  } catch (error) {
    if (!isSbxError(error)) throw error;
    const detail = `${error.message} (optional: --backend landlock)`;
    return { name: 'landlock', status: 'warn', detail, ...(error.hint ? { fix: error.hint } : {}) };
  }
}

/**
 * Transparent capture (an allow list for clients that ignore the proxy variables): the network judge
 * was built and its mechanism works here (the probe runs it on this host; under bwrap it runs inside
 * the sandbox, with the same kernel and the same outer seccomp profile).
 */
async function captureCheck(): Promise<Check> {
  const { existsSync } = await import('node:fs');
  const { probeNetworkJudge } = await import('../backend/landlock/host/landlock-probe.js');
  const helper = landlockHelperPath();
  const name = 'capture';
  if (!existsSync(helper)) {
    const detail = `off: the network judge ${helper} was not built; allow lists carry proxy-aware clients only`;
    return {
      name,
      status: 'warn',
      detail,
      fix: 'install a C compiler (apt-get install gcc) and rebuild sbx (npm run build)',
    };
  }
  const unavailable = probeNetworkJudge(helper);
  if (unavailable) {
    const detail = `the network judge cannot work here (${unavailable}): allow-list runs fail`;
    return { name, status: 'warn', detail, fix: judgeFix(unavailable) };
  }
  const { release } = await import('node:os');
  if (!hasThreadPidfds(release()))
    return {
      name,
      status: 'warn',
      detail:
        'on, but this kernel (before Linux 6.9) has no per-thread pidfds: only connects made by a ' +
        "process's main thread are captured; a client that connects from another thread (Java, Go) finds no route",
      fix: 'a Linux 6.9 or later kernel; or clients that honour the proxy variables',
    };
  const detail = 'on under bwrap, nsjail and landlock: allow lists carry every TCP client';
  return { name, status: 'ok', detail };
}

/** `--warm` (hook and run): whether its native client was built, and whether this user's server of this build runs. */
async function hookWarmCheck(): Promise<Check> {
  const { existsSync } = await import('node:fs');
  const { warmSocketPath, listening, nativeClient } = await import('./warm/warm-server.js');
  const name = 'warm server';
  const client = nativeClient();
  if (!existsSync(client))
    return {
      name,
      status: 'warn',
      detail: `${client} was not built: --warm changes nothing, sbx hook and sbx run start Node.js for each call`,
      fix: 'install a C compiler (apt-get install gcc) and rebuild sbx (npm run build)',
    };
  const path = warmSocketPath(process.env);
  if (!path)
    return {
      name,
      status: 'warn',
      detail: 'no socket path fits in 107 bytes under this HOME or XDG_CACHE_HOME: --warm calls start Node.js',
      fix: 'a shorter XDG_CACHE_HOME',
    };
  const up = await listening(path);
  return {
    name,
    status: 'ok',
    detail: `the native client is built; ${up ? `a warm server of this build listens on ${path}` : `no warm server runs now (the next --warm call starts one on ${path})`}`,
  };
}

/** Linux 6.9 added PIDFD_THREAD, which the judge needs to read a connect made by any thread (native/sbx-landlock-net.c). */
export function hasThreadPidfds(kernelRelease: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  if (!m) return true;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 6 || (major === 6 && minor >= 9);
}

export async function doctorCommand(flags: { json?: boolean }): Promise<void> {
  const checks: Check[] = [];
  let bwrapPath: string | undefined;
  try {
    const info = probeBwrap(process.env, profileSearch(process.cwd(), process.env, process.getuid?.() ?? 0).cacheDir);
    bwrapPath = info.path;
    const missing = [
      !info.features.tmpfsSize && 'sized tmpfs (0.7)',
      !info.features.disableUserns && '--disable-userns (0.8)',
    ].filter(Boolean);
    checks.push({
      name: 'bubblewrap',
      status: missing.length ? 'warn' : 'ok',
      detail: `${info.version} at ${info.path}${missing.length ? `; lacks ${missing.join(', ')}` : ''}`,
      ...(missing.length ? { fix: 'upgrade bubblewrap to 0.8 or newer' } : {}),
    });
  } catch (error) {
    if (!isSbxError(error)) throw error;
    checks.push({
      name: 'bubblewrap',
      status: 'fail',
      detail: error.message,
      ...(error.hint ? { fix: error.hint } : {}),
    });
  }
  const uid = process.getuid?.() ?? 0;
  const facts = probeHostFacts({ uid, bwrap: bwrapPath, env: process.env });
  const causes = diagnoseHost(facts);
  checks.push(hostCheck(facts), await userNamespaceCheck(bwrapPath, uid, causes));
  checks.push(
    cgroupCheck(),
    limitsCheck(),
    seccompCheck(),
    await nsjailCheck(),
    await landlockCheck(),
    await captureCheck(),
    await hookWarmCheck(),
  );
  if (flags.json) {
    process.stdout.write(JSON.stringify({ checks, host: facts, causes }, null, 2) + '\n');
  } else {
    const { default: chalk } = await import('chalk');
    const mark = { ok: chalk.green('ok  '), warn: chalk.yellow('warn'), fail: chalk.red('FAIL') };
    for (const c of checks) {
      process.stdout.write(`${mark[c.status]} ${c.name.padEnd(16)} ${c.detail}\n`);
      if (c.fix && c.status !== 'ok') process.stdout.write(`     ${''.padEnd(16)} fix: ${c.fix}\n`);
    }
  }
  if (checks.some((c) => c.status === 'fail')) process.exitCode = 1;
}
