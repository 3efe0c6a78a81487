// A kept host variable (`--keep-env NAME`, env.keep) may hold a credential: no export may put its value
// where other local users or readers of the manifests see it. Docker: a 0600 file, never the argv
// (/proc/PID/cmdline is world-readable); k8s: a credential-shaped name from the Secret; OCI: config.json 0600.
import { describe, expect, it } from 'vitest';
import { exportDocker } from '../../../src/export/docker.js';
import { exportK8s } from '../../../src/export/k8s.js';
import { exportOci } from '../../../src/export/oci.js';
import { runPipeline } from '../../helpers/hosts.js';

const DIR = '/var/lib/sbx-export/e';
const SECRET = 'sbx-test-secrets';

async function keeping(names: string[], env: Record<string, string> = {}) {
  const p = await runPipeline('default', 'alice', {
    request: { keepEnv: names },
    mutateHost: (h) => Object.assign(h.env, env),
  });
  return p.policy;
}

describe('kept variables in exports', () => {
  it('docker: values in a 0600 env file beside the export, none on the argv', async () => {
    const policy = await keeping(['GITHUB_TOKEN'], { GITHUB_TOKEN: 'ghp_SECRETVALUE' });
    expect(policy.env.vars.GITHUB_TOKEN).toBe('ghp_SECRETVALUE');
    const d = exportDocker(policy, { image: 'debian:stable-slim', dir: DIR, arch: 'x86_64' });
    expect(d.argv.filter((a) => a.includes('ghp_SECRETVALUE'))).toEqual([]);
    expect(d.argv).not.toContain('--env');
    const i = d.argv.indexOf('--env-file');
    expect(d.argv[i + 1]).toBe(`${DIR}/env`);
    const file = d.files.find((f) => f.path === `${DIR}/env`);
    expect(file).toMatchObject({ kind: 'file', mode: 0o600 });
    expect((file as { content: string }).content).toContain('GITHUB_TOKEN=ghp_SECRETVALUE\n');
  });

  it('docker: refuses a value its env file cannot hold', async () => {
    const policy = await keeping(['MULTI'], { MULTI: 'a\nB=injected' });
    expect(() => exportDocker(policy, { image: 'debian:stable-slim', dir: DIR, arch: 'x86_64' })).toThrow(
      /env\.vars: MULTI: a line break/,
    );
  });

  it('k8s: a credential-shaped name comes from the Secret, any other kept value stays a value', async () => {
    const policy = await keeping(['GITHUB_TOKEN', 'MY_SETTING'], {
      GITHUB_TOKEN: 'ghp_SECRETVALUE',
      MY_SETTING: 'plain',
    });
    const k = exportK8s(policy, {
      name: 'sbx-test',
      image: 'debian:stable-slim',
      workspaceClaim: 'sbx-test-workspace',
      secretName: SECRET,
      seccomp: 'localhost',
      localhostProfile: 'sbx/sbx-test.json',
      job: false,
      dir: DIR,
      arch: 'x86_64',
      proxyImage: 'sbx-host:latest',
      proxyPort: 3128,
    });
    expect(JSON.stringify(k.manifests)).not.toContain('ghp_SECRETVALUE');
    const pod = k.manifests.find((m) => m.kind === 'Pod') as { spec: { containers: { env: unknown[] }[] } };
    const env = pod.spec.containers[0]!.env;
    expect(env).toContainEqual({
      name: 'GITHUB_TOKEN',
      valueFrom: { secretKeyRef: { name: SECRET, key: 'GITHUB_TOKEN' } },
    });
    expect(env).toContainEqual({ name: 'MY_SETTING', value: 'plain' });
    expect(k.gaps).toContainEqual(
      expect.objectContaining({ key: 'env.vars', detail: expect.stringContaining(SECRET) }),
    );
  });

  it('oci: config.json, which holds the values, is written 0600', async () => {
    const policy = await keeping(['GITHUB_TOKEN'], { GITHUB_TOKEN: 'ghp_SECRETVALUE' });
    const o = exportOci(policy, { dir: DIR, hostUid: 1000, hostGid: 1000, arch: 'x86_64' });
    expect(o.files.find((f) => f.path === `${DIR}/config.json`)).toMatchObject({ mode: 0o600 });
  });
});
