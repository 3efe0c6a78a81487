// What the engines add that sbx's policy does not have, and what no export carries: /sys (Docker and
// Kubernetes mount the host's sysfs read-only by default; sbx mounts none) and a filtered network (only
// the Kubernetes export carries one: k8s-egress.test.ts).
import { describe, expect, it } from 'vitest';
import { exportDocker } from '../../../src/export/docker.js';
import { exportK8s } from '../../../src/export/k8s.js';
import { exportOci } from '../../../src/export/oci.js';
import type { Policy } from '../../../src/policy/types.js';
import { runPipeline } from '../../helpers/hosts.js';

const DIR = '/var/lib/sbx-export/s';
const DOCKER = { image: 'debian:stable-slim', dir: DIR, arch: 'x86_64' } as const;

describe('engine defaults in exports', () => {
  it('docker covers /sys with an empty read-only tmpfs', async () => {
    const { policy } = await runPipeline('default', 'alice');
    expect(policy.mounts.some((m) => m.target === '/sys')).toBe(false);
    const { argv } = exportDocker(policy, DOCKER);
    const tmpfs = argv.flatMap((a, i) => (a === '--tmpfs' ? [argv[i + 1]!] : []));
    expect(tmpfs).toContainEqual(expect.stringMatching(/^\/sys:ro,noexec,nosuid,nodev,/));
  });

  it("k8s reports the node's /sys as a weaker gap", async () => {
    const { policy } = await runPipeline('default', 'alice');
    const { gaps } = exportK8s(policy, {
      name: 'sbx-test',
      image: 'debian:stable-slim',
      workspaceClaim: 'w',
      secretName: 's',
      seccomp: 'localhost',
      localhostProfile: 'sbx/sbx-test.json',
      job: false,
      dir: DIR,
      arch: 'x86_64',
      proxyImage: 'sbx-host:latest',
      proxyPort: 3128,
    });
    expect(gaps).toContainEqual(expect.objectContaining({ key: 'mounts.sys', effect: 'weaker' }));
  });

  it('docker and oci refuse a filtered network by its key, pointing at the exports that carry it', async () => {
    const { policy } = await runPipeline('default', 'alice');
    const filtered = { ...policy, network: { ...policy.network, kind: 'filtered' } } as Policy;
    expect(() => exportDocker(filtered, DOCKER)).toThrow(/network\.allow: an allow-list.*sbx export k8s/);
    const oci = { dir: DIR, hostUid: 1000, hostGid: 1000, arch: 'x86_64' } as const;
    expect(() => exportOci(filtered, oci)).toThrow(/network\.allow: an allow-list.*sbx export k8s/);
  });
});
