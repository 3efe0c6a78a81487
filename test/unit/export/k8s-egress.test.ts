// The Kubernetes export of an allow-list network: the egress proxy in a pod of its own (Deployment,
// Service, NetworkPolicy) and the workload's NetworkPolicy letting it reach only that pod. Validated
// offline against the Kubernetes schema (kubernetes-models), pinned by golden files in which every
// field the allow-list adds carries its reason (REASONS), and checked for what keeps a workload from
// going around the proxy.
// biome-ignore-all lint/suspicious/noExplicitAny: manifests are plain JSON read back by path; the schema check types them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { describe, expect, it } from 'vitest';
import { Document, isScalar } from 'yaml';
import { SbxError } from '../../../src/errors.js';
import { exportK8s, type K8sOptions } from '../../../src/export/k8s.js';
import { proxyRulesOf } from '../../../src/network/proxy-rules.js';
import type { Profile } from '../../../src/profile/schema.js';
import { expectGoldenText } from '../../helpers/golden.js';
import { runPipeline } from '../../helpers/hosts.js';
import { GOLDEN_DIR, REPO_ROOT } from '../../helpers/paths.js';

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
  proxyImage: 'sbx-proxy:latest',
  proxyPort: 3128,
};

const NETWORK: Profile['network'] = {
  allow: ['registry.npmjs.org:443', '*.github.com:443'],
  deny: ['gist.github.com'],
  allow_private: ['10.0.0.5:5432'],
};

type Model = new (data: any) => { validate(): void };
const MODELS: Record<string, Model> = { Pod, Job, ConfigMap, NetworkPolicy, Service, Deployment };

function validate(manifest: Record<string, unknown>): void {
  const model = MODELS[manifest.kind as string];
  if (!model) throw new Error(`no schema for kind ${String(manifest.kind)}`);
  new model(manifest).validate();
}

async function exported(host: string, network: Profile['network'] = NETWORK, options: Partial<K8sOptions> = {}) {
  const p = await runPipeline('default', host, { profile: { network } });
  return { policy: p.policy, ...exportK8s(p.policy, { ...OPTIONS, ...options }) };
}

const find = (manifests: any[], kind: string, name: string) =>
  manifests.find((m) => m.kind === kind && m.metadata.name === name);

/** Why each field the allow-list adds is there: `kind/name` → path → reason (a comment in the golden). */
const REASONS: Record<string, [(string | number)[], string][]> = {
  'Service/sbx-test-proxy': [
    [['spec', 'selector'], 'the proxy pods only: never the workload, which the label sbx.dev/sandbox marks'],
    [['spec', 'ports', 0, 'port'], "--proxy-port: what the workload's proxy variables name"],
  ],
  'Deployment/sbx-test-proxy': [
    [['spec', 'replicas'], 'one proxy; a Deployment so a crashed or evicted proxy comes back'],
    [
      ['spec', 'template', 'metadata', 'labels'],
      'sbx.dev/egress-proxy, never sbx.dev/sandbox: the two NetworkPolicies must not select each other',
    ],
    [['spec', 'template', 'spec', 'automountServiceAccountToken'], 'no Kubernetes API credential in the proxy'],
    [['spec', 'template', 'spec', 'enableServiceLinks'], 'the proxy needs no Service address'],
    [['spec', 'template', 'spec', 'securityContext', 'runAsUser'], 'nobody: the proxy needs no file of its own'],
    [
      ['spec', 'template', 'spec', 'securityContext', 'seccompProfile'],
      "the runtime's default: the proxy is sbx's own code, not the workload",
    ],
    [
      ['spec', 'template', 'spec', 'containers', 0, 'image'],
      '--proxy-image (default --image): it must have sbx on PATH',
    ],
    [
      ['spec', 'template', 'spec', 'containers', 0, 'command'],
      "sbx proxy with the Policy's compiled rules as written, on its argv: no profile file to find or trust; pods of the sbx-test label reach it through the NetworkPolicy",
    ],
    [['spec', 'template', 'spec', 'containers', 0, 'env'], 'SBX_NO_CACHE: nothing written on the read-only root'],
    [
      ['spec', 'template', 'spec', 'containers', 0, 'readinessProbe'],
      'the Service sends nothing before the port is bound',
    ],
    [
      ['spec', 'template', 'spec', 'containers', 0, 'securityContext'],
      'no capabilities, no privilege gain, read-only root: the port is above 1024',
    ],
    [
      ['spec', 'template', 'spec', 'containers', 0, 'resources'],
      'bounded, requests = limits: the proxy cannot starve the node',
    ],
  ],
  'NetworkPolicy/sbx-test-proxy': [
    [['spec', 'ingress'], 'only the workload pods, only the proxy port'],
    [['spec', 'egress', 0], 'DNS: the proxy resolves the names it is asked for'],
    [
      ['spec', 'egress', 1, 'to'],
      'public addresses: cluster, node and metadata ranges excepted unless allow_private lists one',
    ],
    [['spec', 'egress', 1, 'ports'], 'every network.allow entry names a port: only those'],
    [['spec', 'egress', 2], 'network.allow_private 10.0.0.5:5432'],
  ],
  'NetworkPolicy/sbx-test': [
    [['spec', 'ingress'], 'nothing reaches the workload'],
    [['spec', 'egress'], 'only the proxy pods, only the proxy port: no DNS, no other address'],
  ],
  'Pod/sbx-test': [
    [
      ['spec', 'enableServiceLinks'],
      'the kubelet sets SBX_TEST_PROXY_SERVICE_HOST, which the proxy variables expand (the workload has no DNS)',
    ],
  ],
};

/** YAML with each reason as a comment above its field; a reason whose field is missing fails. */
function withReasons(manifest: any): string {
  const doc = new Document(manifest, { aliasDuplicateObjects: false });
  for (const [path, reason] of REASONS[`${manifest.kind}/${manifest.metadata.name}`] ?? []) {
    const node = doc.getIn(path, true) as any;
    if (node === undefined)
      throw new Error(`REASONS: no ${path.join('.')} in ${manifest.kind}/${manifest.metadata.name}`);
    if (isScalar(node)) node.comment = ` ${reason}`;
    else node.commentBefore = ` ${reason}`;
  }
  return doc.toString();
}

describe.each(['alice', 'root'])('an allow-list on %s', (host) => {
  it('validates against the Kubernetes schema and matches its golden manifests', async () => {
    const { manifests } = await exported(host);
    for (const m of manifests) validate(m);
    for (const m of (await exported(host, NETWORK, { job: true })).manifests) validate(m);
    expect(manifests.map((m) => `${m.kind}/${(m.metadata as any).name}`)).toEqual([
      'ConfigMap/sbx-test-files',
      'Service/sbx-test-proxy',
      'Deployment/sbx-test-proxy',
      'NetworkPolicy/sbx-test-proxy',
      'NetworkPolicy/sbx-test',
      'Pod/sbx-test',
    ]);
    expectGoldenText(join(GOLDEN_DIR, `allow-list.${host}.k8s-egress.yaml`), manifests.map(withReasons).join('---\n'));
  });
});

describe('the workload cannot go around the proxy', () => {
  it('its NetworkPolicy allows egress to the proxy pods on the proxy port only, and nothing in', async () => {
    const { manifests } = await exported('alice');
    expect(find(manifests, 'NetworkPolicy', 'sbx-test').spec).toEqual({
      podSelector: { matchLabels: { 'sbx.dev/sandbox': 'sbx-test' } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        {
          to: [{ podSelector: { matchLabels: { 'sbx.dev/egress-proxy': 'sbx-test' } } }],
          ports: [{ protocol: 'TCP', port: 3128 }],
        },
      ],
    });
  });

  it("no policy selects both: the proxy's wide egress never applies to the workload", async () => {
    const { manifests } = await exported('alice');
    const podLabels = find(manifests, 'Pod', 'sbx-test').metadata.labels;
    const proxyLabels = find(manifests, 'Deployment', 'sbx-test-proxy').spec.template.metadata.labels;
    const selects = (np: any, labels: Record<string, string>) =>
      Object.entries(np.spec.podSelector.matchLabels).every(([k, v]) => labels[k] === v);
    const proxyPolicy = find(manifests, 'NetworkPolicy', 'sbx-test-proxy');
    const workloadPolicy = find(manifests, 'NetworkPolicy', 'sbx-test');
    expect([selects(proxyPolicy, proxyLabels), selects(proxyPolicy, podLabels)]).toEqual([true, false]);
    expect([selects(workloadPolicy, podLabels), selects(workloadPolicy, proxyLabels)]).toEqual([true, false]);
    const service = find(manifests, 'Service', 'sbx-test-proxy');
    expect(Object.entries(service.spec.selector).every(([k, v]) => podLabels[k] === v)).toBe(false);
  });

  it('the proxy pod shares no volume with the workload, holds no API token and no capability', async () => {
    const { manifests } = await exported('alice');
    const spec = find(manifests, 'Deployment', 'sbx-test-proxy').spec.template.spec;
    expect(spec.volumes).toBeUndefined();
    expect(spec.containers[0].volumeMounts).toBeUndefined();
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.containers[0].securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
  });

  it("the proxy's argv compiles back to exactly the Policy's rules", async () => {
    const { manifests, policy } = await exported('alice');
    const command: string[] = find(manifests, 'Deployment', 'sbx-test-proxy').spec.template.spec.containers[0].command;
    expect(command.slice(0, 6)).toEqual(['sbx', 'proxy', '--listen', '0.0.0.0:3128', '--allow-remote', '--json-log']);
    const values = (flag: string) => command.flatMap((a, i) => (command[i - 1] === flag ? [a] : []));
    const rules = proxyRulesOf(undefined, undefined, {
      allowDomains: values('--allow-domain'),
      denyDomains: values('--deny-domain'),
      allowPrivate: values('--allow-private'),
    });
    expect(policy.network.kind === 'filtered' && policy.network.rules).toEqual(rules);
  });

  it("the workload's proxy variables are bridge.cjs's, pointing at the proxy's Service; sbx run's bridge is not mounted", async () => {
    const { manifests } = await exported('alice');
    const pod = find(manifests, 'Pod', 'sbx-test');
    const env: { name: string; value: string }[] = pod.spec.containers[0].env;
    const bridge = readFileSync(join(REPO_ROOT, 'src/network/host/bridge.cjs'), 'utf8');
    const body = /function proxyEnv\([^)]*\) \{[\s\S]*?return \{([\s\S]*?)\};/.exec(bridge)?.[1] ?? '';
    const bridgeNames = [...body.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]).sort();
    expect(bridgeNames.length).toBeGreaterThan(10);
    expect(
      env
        .filter((e) => bridgeNames.includes(e.name))
        .map((e) => e.name)
        .sort(),
    ).toEqual(bridgeNames);
    expect(env.find((e) => e.name === 'HTTPS_PROXY')?.value).toBe('http://$(SBX_TEST_PROXY_SERVICE_HOST):3128');
    expect(env.find((e) => e.name === 'ALL_PROXY')?.value).toBe('socks5h://$(SBX_TEST_PROXY_SERVICE_HOST):3128');
    expect(pod.spec.enableServiceLinks).toBe(true);
    expect(JSON.stringify(pod)).not.toContain('/run/sbx');
  });

  it('allow entries without a port open every port to public addresses, never the private ranges', async () => {
    const { manifests } = await exported('alice', { allow: ['pypi.org', 'files.pythonhosted.org:443'] });
    const egress = find(manifests, 'NetworkPolicy', 'sbx-test-proxy').spec.egress;
    expect(egress).toHaveLength(2);
    expect(egress[1].ports).toBeUndefined();
    expect(egress[1].to[0].ipBlock.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '169.254.0.0/16']));
  });

  it('refuses host_ports and publish by name: ports of the exporting host', async () => {
    const p = await runPipeline('default', 'alice', {
      profile: { network: { allow: ['x.test'], host_ports: [5432] } },
    });
    expect(() => exportK8s(p.policy, OPTIONS)).toThrow(SbxError);
    expect(() => exportK8s(p.policy, OPTIONS)).toThrow(/network\.host_ports/);
  });

  it("refuses a --name the proxy's Service cannot carry (a DNS-1035 label starts with a letter)", async () => {
    const p = await runPipeline('default', 'alice', { profile: { network: NETWORK } });
    expect(() => exportK8s(p.policy, { ...OPTIONS, name: '42-build' })).toThrow(/42-build-proxy: a Service's name/);
  });
});
