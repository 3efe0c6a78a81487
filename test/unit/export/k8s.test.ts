// The Kubernetes export: every built-in profile × fixture host, validated offline against the
// Kubernetes OpenAPI schema (the validators kubernetes-models generates from it), pinned by golden
// files, and checked for what a reviewer looks for: non-root, read-only root, no capabilities, no
// privilege escalation, the seccomp profile, secrets by reference, a deny-all NetworkPolicy.
// biome-ignore-all lint/suspicious/noExplicitAny: manifests are plain JSON read back by path; the schema check types them.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SbxError } from '../../../src/errors.js';
import { exportK8s, type K8sOptions } from '../../../src/export/k8s.js';
import { expectGoldenText } from '../../helpers/golden.js';
import { builtinProfileNames, hostFixtureNames, runPipeline } from '../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../helpers/paths.js';

const CASES = builtinProfileNames().flatMap((profile) => hostFixtureNames().map((host) => ({ profile, host })));
const OPTIONS: K8sOptions = {
  name: 'sbx-test',
  image: 'sbx-host:latest',
  workspaceClaim: 'sbx-test-workspace',
  secretName: 'sbx-test-secrets',
  seccomp: 'localhost',
  localhostProfile: 'sbx/sbx-test.json',
  job: false,
  dir: '/var/lib/sbx-export/k',
  arch: 'x86_64',
  proxyImage: 'sbx-host:latest',
  proxyPort: 3128,
};

type Model = new (data: any) => { validate(): void };
const MODELS: Record<string, Model> = { Pod, Job, ConfigMap, NetworkPolicy };

function validate(manifest: Record<string, unknown>): void {
  const model = MODELS[manifest.kind as string];
  if (!model) throw new Error(`no schema for kind ${String(manifest.kind)}`);
  new model(manifest).validate();
}

async function exported(profile: string, host: string, options: Partial<K8sOptions> = {}) {
  const p = await runPipeline(profile, host);
  try {
    return { ...p, result: exportK8s(p.policy, { ...OPTIONS, ...options }) };
  } catch (e) {
    if (e instanceof SbxError && e.code === 'BACKEND_UNSUPPORTED') return { ...p, refused: e.message };
    throw e;
  }
}

describe.each(CASES)('$profile × $host', ({ profile, host }) => {
  it('validates against the Kubernetes schema and matches its golden manifests', async () => {
    const { result, refused } = await exported(profile, host);
    const file = join(GOLDEN_DIR, `${profile}.${host}.k8s.yaml`);
    if (refused !== undefined) {
      // danger: the host root; agent on alice and carol: its tools directory is a host path outside the workspace.
      expect(`${profile} × ${host}`).toMatch(/^danger × |^agent × (alice|carol)$/);
      expectGoldenText(file, `# refused (BACKEND_UNSUPPORTED): ${refused}\n`);
      return;
    }
    for (const m of result!.manifests) validate(m);
    const job = await exported(profile, host, { job: true });
    for (const m of job.result!.manifests) validate(m);
    expectGoldenText(file, result!.manifests.map((m) => stringify(m, { aliasDuplicateObjects: false })).join('---\n'));
  });

  it.skipIf(profile === 'danger' || (profile === 'agent' && host !== 'root'))(
    'keeps the security invariants',
    async () => {
      const { result, policy } = await exported(profile, host);
      const pod = result!.manifests.find((m) => m.kind === 'Pod') as { spec: Record<string, any> };
      const spec = pod.spec;
      const container = spec.containers[0];
      expect(spec.automountServiceAccountToken).toBe(false);
      expect(spec.hostUsers).toBe(false);
      expect(spec.securityContext.runAsNonRoot).toBe(true);
      expect(container.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: policy.identity.uid,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        privileged: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'Localhost', localhostProfile: 'sbx/sbx-test.json' },
      });
      expect(result!.files.map((f) => f.path)).toEqual(['/var/lib/sbx-export/k/sbx-test.json']);
      // Only the workspace (and nothing but it) from outside the pod; no hostPath anywhere.
      expect(JSON.stringify(result!.manifests)).not.toContain('hostPath');
      // Writable: the workspace (not in read-only mode), /tmp, /dev/shm, and HOME (not in read-only mode).
      // (Directories inside the workspace mounted again by subPath, the pinned parents of protected git
      // state, are the workspace itself.)
      const ws = policy.workspace.sandbox;
      const writable = container.volumeMounts
        .filter((v: any) => !v.readOnly && !v.mountPath.startsWith(`${ws}/`))
        .map((v: any) => v.mountPath);
      const readOnly = profile === 'read-only';
      expect(writable.sort()).toEqual(
        ['/dev/shm', '/tmp', ...(readOnly ? [] : [policy.env.vars.HOME, policy.workspace.sandbox])].sort(),
      );
      for (const v of spec.volumes.filter((v: any) => v.emptyDir)) expect(v.emptyDir.sizeLimit).toMatch(/^\d+$/);
      // Env: exactly the policy's values; secrets by reference only.
      expect(container.env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value])).toEqual(
        Object.keys(policy.env.vars)
          .sort()
          .map((k) => [k, policy.env.vars[k]]),
      );
      // network: none → a NetworkPolicy selecting the pod, denying ingress and egress.
      const np = result!.manifests.find((m) => m.kind === 'NetworkPolicy') as any;
      if (profile === 'network') expect(np).toBeUndefined();
      else
        expect(np.spec).toEqual({
          podSelector: { matchLabels: { 'sbx.dev/sandbox': 'sbx-test' } },
          policyTypes: ['Ingress', 'Egress'],
          ingress: [],
          egress: [],
        });
    },
  );
});

it('puts secrets in secretKeyRef, never a value', async () => {
  const p = await runPipeline('default', 'alice');
  const policy = { ...p.policy, env: { ...p.policy.env, secrets: ['GITHUB_TOKEN'] } };
  const { manifests } = exportK8s(policy, OPTIONS);
  const env = (manifests.find((m) => m.kind === 'Pod') as any).spec.containers[0].env;
  expect(env.filter((e: any) => e.name === 'GITHUB_TOKEN')).toEqual([
    { name: 'GITHUB_TOKEN', valueFrom: { secretKeyRef: { name: 'sbx-test-secrets', key: 'GITHUB_TOKEN' } } },
  ]);
  expect(JSON.stringify(manifests)).not.toContain(p.host.env.GITHUB_TOKEN!);
});

it('the schema check bites: a container without an image is refused', () => {
  expect(() =>
    validate({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x' },
      spec: { containers: [{ name: 'a', securityContext: { runAsNonRoot: 'yes' } }] },
    }),
  ).toThrow();
});

it('golden manifests exist only for current profile × host pairs (no orphans to review)', () => {
  const expected = CASES.map(({ profile, host }) => `${profile}.${host}.k8s.yaml`).sort();
  expect(
    readdirSync(GOLDEN_DIR)
      .filter((f) => f.endsWith('.k8s.yaml'))
      .sort(),
  ).toEqual(expected);
});
