// `sbx export docker|oci|k8s`: the profile's Policy compiled for another engine (src/export/, pure),
// then the files it names written and the result printed. Runs nothing.
import { existsSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
// Static: a dynamic import('yaml') of the bundled CommonJS build yields no named exports (as in profiles.ts).
import { stringify } from 'yaml';
import { derive, SbxError } from '../../api.js';
import type { Gap } from '../../backend/shared/gap.js';
import { DEFAULT_PROXY_PORT } from '../../network/proxy-rules.js';
import { isWithin } from '../../path-within.js';
import type { Policy } from '../../policy/types.js';
import { xdgDirs } from '../../policy/user-dirs.js';
import { hostSeccompArch } from '../../seccomp/index.js';
import { refuseForeignDir, writeExportFiles } from './export-write.js';
import { toRunOptions, type RunFlags } from '../run-flags.js';
import { shellJoin } from '../quote.js';

export interface ExportFlags extends RunFlags {
  json?: boolean;
  image?: string;
  out?: string;
  envFile?: string;
  job?: boolean;
  seccomp?: 'localhost' | 'runtime-default';
  name?: string;
  workspaceClaim?: string;
  secretName?: string;
  proxyImage?: string;
  proxyPort?: string;
}

/** Where the export's files go unless --out names a place: sbx's own state, which every sandbox is kept out of. */
function defaultOutDir(profile: string): string {
  const { stateHome } = xdgDirs(process.env, homedir());
  return resolve(stateHome, 'sbx', 'export', profile.replace(/[^A-Za-z0-9._-]/g, '_'));
}

/** The path as the kernel resolves it: its nearest existing ancestor's realpath, the rest as written. */
function realPathOf(path: string): string {
  let at = resolve(path);
  const rest: string[] = [];
  while (!existsSync(at)) {
    rest.unshift(at.slice(dirname(at).length + 1));
    at = dirname(at);
  }
  return resolve(realpathSync(at), ...rest);
}

/**
 * A file the engine reads later as policy (the seccomp profile, a bundle's config.json, the secrets
 * file) may not lie where a sandbox of this policy can write: a command would rewrite its next
 * sandbox.
 */
function refuseWritableByPolicy(policy: Policy, path: string, flag: string): void {
  const real = realPathOf(path);
  const writable = policy.mounts.flatMap((m) => (m.kind === 'bind' && m.access === 'rw' ? [m.source] : []));
  const inside = writable.find((root) => isWithin(real, root));
  if (inside === undefined) return;
  throw new SbxError('USAGE', `${flag} ${path} lies in ${inside}, which the sandbox can write`, {
    hint: `name a ${flag} outside the workspace and every writable bind (default: sbx's state directory)`,
  });
}

function printGaps(gaps: readonly Gap[]): void {
  for (const g of gaps) process.stderr.write(`sbx export: ${g.effect} ${g.key}: ${g.detail}\n`);
}

async function policyOf(command: string[], flags: ExportFlags): Promise<{ profile: string; policy: Policy }> {
  if (command.length === 0 && flags.shell === undefined)
    throw new SbxError('USAGE', 'no command given', { hint: 'sbx export docker -p NAME -- COMMAND [ARGS...]' });
  const { profile, policy } = await derive(toRunOptions(flags, command));
  return { profile: profile.name, policy };
}

export async function exportDockerCommand(command: string[], flags: ExportFlags): Promise<void> {
  const { profile, policy } = await policyOf(command, flags);
  const dir = resolve(flags.out ?? defaultOutDir(profile));
  refuseWritableByPolicy(policy, dir, '--out');
  refuseForeignDir(dir, '--out');
  if (flags.envFile !== undefined) refuseWritableByPolicy(policy, flags.envFile, '--env-file');
  const { exportDocker } = await import('../../export/docker.js');
  const result = exportDocker(policy, {
    image: flags.image ?? 'debian:stable-slim',
    dir,
    ...(flags.envFile === undefined ? {} : { envFile: resolve(flags.envFile) }),
    arch: hostSeccompArch(process.arch),
  });
  writeExportFiles(result.files);
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ argv: result.argv, files: result.files.map((f) => f.path), gaps: result.gaps }, null, 2)}\n`,
    );
    return;
  }
  printGaps(result.gaps);
  process.stdout.write(`${shellJoin(result.argv)}\n`);
}

export async function exportOciCommand(dir: string, command: string[], flags: ExportFlags): Promise<void> {
  const { policy } = await policyOf(command, flags);
  const bundle = resolve(dir);
  refuseWritableByPolicy(policy, bundle, 'the bundle directory');
  refuseForeignDir(bundle, 'the bundle directory');
  const { exportOci } = await import('../../export/oci.js');
  const result = exportOci(policy, {
    dir: bundle,
    hostUid: process.getuid?.() ?? 0,
    hostGid: process.getgid?.() ?? 0,
    arch: hostSeccompArch(process.arch),
  });
  writeExportFiles(result.files);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ bundle, config: result.config, gaps: result.gaps }, null, 2)}\n`);
    return;
  }
  printGaps(result.gaps);
  process.stdout.write(`${shellJoin(['runc', 'run', '--bundle', bundle, 'sbx'])}\n`);
}

export async function exportK8sCommand(command: string[], flags: ExportFlags): Promise<void> {
  const { profile, policy } = await policyOf(command, flags);
  const name =
    flags.name ??
    `sbx-${profile}`
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 63)
      .replace(/-+$/, '');
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name) || name.length > 52)
    throw new SbxError('USAGE', `--name ${JSON.stringify(name)} is not a DNS label of at most 52 characters`, {
      hint: 'e.g. --name build-42 (lower case letters, digits and -)',
    });
  const proxyPort = Number(flags.proxyPort ?? DEFAULT_PROXY_PORT);
  if (!Number.isInteger(proxyPort) || proxyPort < 1024 || proxyPort > 65535)
    throw new SbxError('USAGE', `--proxy-port ${flags.proxyPort} is not a port from 1024 to 65535`, {
      hint: `the proxy pod runs without capabilities, so no port below 1024 (default ${DEFAULT_PROXY_PORT})`,
    });
  const dir = resolve(flags.out ?? defaultOutDir(profile));
  refuseWritableByPolicy(policy, dir, '--out');
  refuseForeignDir(dir, '--out');
  const { exportK8s } = await import('../../export/k8s.js');
  const image = flags.image ?? 'debian:stable-slim';
  const result = exportK8s(policy, {
    name,
    image,
    proxyImage: flags.proxyImage ?? image,
    proxyPort,
    workspaceClaim: flags.workspaceClaim ?? `${name}-workspace`,
    secretName: flags.secretName ?? `${name}-secrets`,
    seccomp: flags.seccomp ?? 'localhost',
    localhostProfile: `sbx/${name}.json`,
    job: flags.job ?? false,
    dir,
    arch: hostSeccompArch(process.arch),
  });
  writeExportFiles(result.files);
  if (flags.json) {
    const out = { manifests: result.manifests, files: result.files.map((f) => f.path), gaps: result.gaps };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  printGaps(result.gaps);
  for (const f of result.files)
    process.stderr.write(
      `sbx export: copy ${f.path} to /var/lib/kubelet/seccomp/sbx/ on every node that may run the pod\n`,
    );
  process.stdout.write(result.manifests.map((m) => stringify(m, { aliasDuplicateObjects: false })).join('---\n'));
}
