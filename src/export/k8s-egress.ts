// An allow-list network on Kubernetes: sbx's egress proxy (`sbx proxy`, with the Policy's rules on its
// argv) as a Deployment of its own behind a Service, and two NetworkPolicies. Pure.
//
// Why not a sidecar: a NetworkPolicy selects pods, not containers. A sidecar shares the pod's network
// namespace, so whatever egress the pod is given for the proxy's sake, the workload has too: it could
// connect past the proxy to any address and port the proxy may reach. In a pod of its own the proxy has
// its own policy (egress to public addresses on the allowed ports, and DNS: it resolves the names), and
// the workload's allows one destination: the proxy pod's port. Nothing else leaves the workload pod,
// DNS included (under `sbx run` the sandbox resolves nothing either: the proxy does): it learns the
// proxy's address from the Service variables the kubelet sets (enableServiceLinks) and Kubernetes'
// `$(VAR)` expansion in env values.
import { proxyEnv } from '../backend/shared/proxy-env.js';
import type { EgressRules, HostPattern } from '../network/egress.js';
import { proxyRuleArgs } from '../network/proxy-rules.js';
import type { NetworkPolicy } from '../policy/types.js';
import type { GapList } from './export-gaps.js';

type Json = Record<string, unknown>;
type Filtered = Extract<NetworkPolicy, { kind: 'filtered' }>;

export interface EgressProxyOptions {
  /** The workload's name (its label value); the proxy's objects are NAME-proxy. */
  name: string;
  /** An image with `sbx` on PATH. */
  image: string;
  port: number;
}

export interface EgressProxyObjects {
  /** The proxy's Service, Deployment and NetworkPolicy, and the workload's NetworkPolicy. */
  manifests: Json[];
  /** The workload container's proxy variables (they replace policy variables of the same names). */
  env: { name: string; value: string }[];
}

export const SANDBOX_LABEL = 'sbx.dev/sandbox';
const PROXY_LABEL = 'sbx.dev/egress-proxy';
/** The proxy pod's user: nobody, a user no file of the image belongs to. */
const PROXY_UID = 65534;

// Non-public blocks the proxy pod may not reach unless allow_private names an address in them: the
// cluster's own pods and services, the node, cloud metadata (network/egress.ts classifies the same ranges
// and the proxy refuses them itself; this holds even if the proxy did not).
const PRIVATE_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
];
const PRIVATE_V6 = ['fc00::/7', 'fe80::/10'];

/** Every allowed port, or undefined when some allow entry has none (then every port). */
function allowedPorts(allow: readonly HostPattern[]): number[] | undefined {
  if (allow.some((p) => p.port === undefined)) return undefined;
  return [...new Set(allow.map((p) => p.port as number))].sort((a, b) => a - b);
}

function proxyEgress(rules: EgressRules): Json[] {
  const ports = allowedPorts(rules.allow);
  const tcp = (port: number) => ({ protocol: 'TCP', port });
  return [
    // DNS: the proxy resolves each name it is asked for (the workload never does).
    { ports: [{ protocol: 'UDP', port: 53 }, tcp(53)] },
    {
      to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE_V4 } }, { ipBlock: { cidr: '::/0', except: PRIVATE_V6 } }],
      ...(ports === undefined ? {} : { ports: ports.map(tcp) }),
    },
    ...rules.allowPrivate.map((a) => ({
      to: [{ ipBlock: { cidr: `${a.ip}/${a.ip.includes(':') ? 128 : 32}` } }],
      ...(a.port === undefined ? {} : { ports: [tcp(a.port)] }),
    })),
  ];
}

/** The Service variable the kubelet sets for Service `service`: upper case, dashes as underscores. */
function serviceHostVar(service: string): string {
  return `${service.toUpperCase().replace(/-/g, '_')}_SERVICE_HOST`;
}

export function egressProxyObjects(net: Filtered, options: EgressProxyOptions, gaps: GapList): EgressProxyObjects {
  for (const [key, list] of [
    ['network.host_ports', net.hostPorts],
    ['network.publish', net.publish],
    ['network.unix_sockets', net.unixSockets],
  ] as const)
    if (list.length > 0) gaps.add(key, 'refused', 'a port or socket of the exporting host: a pod cannot reach it');
  const { name, port } = options;
  const proxyName = `${name}-proxy`;
  if (!/^[a-z]/.test(name))
    gaps.add('name', 'refused', `${proxyName}: a Service's name must start with a letter (RFC 1035); choose --name`);
  const proxyLabels = { [PROXY_LABEL]: name, 'app.kubernetes.io/managed-by': 'sbx' };
  const selector = { matchLabels: { [PROXY_LABEL]: name } };
  const tcp = { protocol: 'TCP', port };
  gaps.add(
    'network.allow',
    'equivalent',
    `sbx proxy with the same rules (on its argv) in Deployment ${proxyName}, behind Service ${proxyName}; the image (--proxy-image) must have sbx on PATH. The workload pod may reach only that pod's port ${port}: a NetworkPolicy selects pods, not containers, so a sidecar would share its egress with the workload`,
  );
  gaps.add(
    'network.enforcement',
    'weaker',
    "the NetworkPolicies hold only where the cluster's network plugin enforces NetworkPolicy (Calico, Cilium, ...); elsewhere the workload connects past the proxy",
  );
  gaps.add(
    'network.dns',
    'equivalent',
    `the workload has no DNS (the proxy resolves names, as under sbx run); it finds the proxy by $(${serviceHostVar(proxyName)}), which the kubelet sets (enableServiceLinks) only if the Service existed when the pod started: otherwise the proxy variables stay unexpanded and nothing connects (apply the Service first: it comes first)`,
  );
  gaps.add(
    'env.vars',
    'weaker',
    "enableServiceLinks: the kubelet adds *_SERVICE_HOST and *_PORT variables for every Service of the namespace (addresses, no values), how the workload learns the proxy's",
  );
  if (net.rules.allowPrivate.length > 0)
    gaps.add(
      'network.allow_private',
      'weaker',
      "an ipBlock egress rule of the proxy pod per address (whether it covers pod IPs depends on the network plugin); a loopback address is the proxy pod's own, not the exporting host's",
    );
  const service: Json = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: proxyName, labels: proxyLabels },
    spec: { selector: { [PROXY_LABEL]: name }, ports: [{ name: 'proxy', ...tcp, targetPort: port }] },
  };
  const limits = { cpu: '250m', memory: '256Mi' };
  const deployment: Json = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: proxyName, labels: proxyLabels },
    spec: {
      replicas: 1,
      selector,
      template: {
        metadata: { labels: proxyLabels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: PROXY_UID,
            runAsGroup: PROXY_UID,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'egress-proxy',
              image: options.image,
              command: [
                'sbx',
                'proxy',
                '--listen',
                `0.0.0.0:${port}`,
                '--allow-remote',
                '--json-log',
                ...proxyRuleArgs(net.rules),
              ],
              // No compile cache: the root filesystem is read-only, and sbx proxy writes nothing else.
              env: [{ name: 'SBX_NO_CACHE', value: '1' }],
              ports: [{ name: 'proxy', containerPort: port, protocol: 'TCP' }],
              readinessProbe: { tcpSocket: { port } },
              securityContext: {
                runAsNonRoot: true,
                readOnlyRootFilesystem: true,
                allowPrivilegeEscalation: false,
                privileged: false,
                capabilities: { drop: ['ALL'] },
              },
              resources: { limits, requests: limits },
            },
          ],
        },
      },
    },
  };
  const proxyPolicy: Json = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: proxyName, labels: proxyLabels },
    spec: {
      podSelector: selector,
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { [SANDBOX_LABEL]: name } } }], ports: [tcp] }],
      egress: proxyEgress(net.rules),
    },
  };
  const workloadPolicy: Json = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name },
    spec: {
      podSelector: { matchLabels: { [SANDBOX_LABEL]: name } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [{ to: [{ podSelector: selector }], ports: [tcp] }],
    },
  };
  return {
    manifests: [service, deployment, proxyPolicy, workloadPolicy],
    env: Object.entries(proxyEnv(`$(${serviceHostVar(proxyName)})`, port, port)).map(([name, value]) => ({
      name,
      value,
    })),
  };
}
