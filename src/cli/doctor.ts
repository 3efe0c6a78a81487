// `sbx doctor`: can this host build the sandbox? Each check says what it found and how to fix it.
import { readFileSync } from 'node:fs';
import { execa } from 'execa';
import { probeBwrap, probeNsjail, userNamespaceBlocker, type NsjailInfo } from '../runtime/host.js';
import { profileSearch } from '../api.js';
import { isSbxError } from '../errors.js';
import { describePlan, planLimits } from '../limits/plan.js';
import { probeCgroupFacts } from '../runtime/cgroup/probe.js';

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
    return { name: 'cgroups', status: 'ok', detail: `cgroup v2 (unified) at ${v2[0]!.split(' ')[1]}; this process is in ${own.replace(/^0::/, '')}` };
  }
  if (v1.length > 0) {
    const controllers = v1.map((l) => l.split(' ')[1]!.split('/').pop()).join(', ');
    return { name: 'cgroups', status: 'ok', detail: `cgroup v1 controllers: ${controllers}${v2.length ? ` (and a v2 hierarchy at ${v2[0]!.split(' ')[1]})` : ''}` };
  }
  return { name: 'cgroups', status: 'warn', detail: 'no cgroup filesystem mounted', fix: 'mount cgroup2 at /sys/fs/cgroup to enable memory/pids/cpu limits' };
}

/** Which mechanism each limit would get here, for a profile that sets them all (like `untrusted`). */
function limitsCheck(): Check {
  try {
    const plan = planLimits(
      { memoryBytes: 2 ** 31, pids: 512, cpus: 2, timeoutMs: 1_800_000, cpuTimeSec: 1200, fileSizeBytes: 2 ** 30, nofile: 4096, required: [] },
      probeCgroupFacts(),
    );
    const approximate = plan.limits.filter((l) => !l.exact);
    return {
      name: 'limits',
      status: approximate.length ? 'warn' : 'ok',
      detail: ['each limit would be enforced by:', ...describePlan(plan).map((l) => `  ${l}`)].join('\n' + ' '.repeat(22)),
      ...(approximate.length ? { fix: 'exact limits need cgroups: run as root, delegate a cgroup v2 subtree, or use systemd (systemd-run --user)' } : {}),
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
    : { name: 'seccomp', status: 'fail', detail: 'this kernel reports no seccomp support', fix: 'use a kernel built with CONFIG_SECCOMP_FILTER' };
}

async function userNamespaceCheck(bwrap: string | undefined): Promise<Check> {
  const uid = process.getuid?.() ?? 0;
  const blocker = userNamespaceBlocker(uid);
  if (blocker) return { name: 'user namespaces', status: 'fail', detail: blocker, fix: 'sysctl -w user.max_user_namespaces=15000 (and kernel.unprivileged_userns_clone=1 on older Debian)' };
  if (!bwrap) return { name: 'user namespaces', status: 'warn', detail: 'not tested: no bwrap' };
  const r = await execa(bwrap, ['--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', 'true'], { reject: false, env: {}, extendEnv: false, timeout: 10000 });
  return r.exitCode === 0
    ? { name: 'user namespaces', status: 'ok', detail: `bwrap can create user and pid namespaces as uid ${uid}` }
    : {
        name: 'user namespaces',
        status: 'fail',
        detail: `bwrap failed: ${r.stderr.trim() || `exit ${r.exitCode}`}`,
        fix: 'enable unprivileged user namespaces (on Ubuntu 24.04+ AppArmor must allow bwrap: install the distribution bwrap package)',
      };
}

/** The optional backend: found, runs, has the mount API sbx compiles for, and can build a sandbox here. */
async function nsjailCheck(): Promise<Check> {
  let info: NsjailInfo;
  try {
    info = probeNsjail(process.env);
  } catch (error) {
    if (!isSbxError(error)) throw error;
    return { name: 'nsjail', status: 'warn', detail: `${error.message} (optional: --backend nsjail)`, ...(error.hint ? { fix: error.hint } : {}) };
  }
  const r = await execa(info.path, ['-Mo', '--quiet', '--experimental_mnt', 'new', '--chroot', '/', '--user', '0', '--group', '0', '--', '/bin/true'], { reject: false, env: {}, extendEnv: false, timeout: 10000 });
  return r.exitCode === 0
    ? { name: 'nsjail', status: 'ok', detail: `${info.version} at ${info.path}; it can build a sandbox as uid ${process.getuid?.() ?? 0}` }
    : { name: 'nsjail', status: 'warn', detail: `${info.path} could not build a sandbox: ${r.stderr.trim().split('\n').pop() || `exit ${r.exitCode}`}`, fix: 'enable unprivileged user namespaces, or run it as root' };
}

export async function doctorCommand(flags: { json?: boolean }): Promise<void> {
  const checks: Check[] = [];
  let bwrapPath: string | undefined;
  try {
    const info = probeBwrap(process.env, profileSearch(process.cwd(), process.env).cacheDir);
    bwrapPath = info.path;
    const missing = [!info.features.tmpfsSize && 'sized tmpfs (0.7)', !info.features.disableUserns && '--disable-userns (0.8)'].filter(Boolean);
    checks.push({
      name: 'bubblewrap',
      status: missing.length ? 'warn' : 'ok',
      detail: `${info.version} at ${info.path}${missing.length ? `; lacks ${missing.join(', ')}` : ''}`,
      ...(missing.length ? { fix: 'upgrade bubblewrap to 0.8 or newer' } : {}),
    });
  } catch (error) {
    if (!isSbxError(error)) throw error;
    checks.push({ name: 'bubblewrap', status: 'fail', detail: error.message, ...(error.hint ? { fix: error.hint } : {}) });
  }
  checks.push(await userNamespaceCheck(bwrapPath), cgroupCheck(), limitsCheck(), seccompCheck(), await nsjailCheck());
  if (flags.json) {
    process.stdout.write(JSON.stringify(checks, null, 2) + '\n');
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
