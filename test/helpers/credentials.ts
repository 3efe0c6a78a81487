// A run with a credential, as the backend and exporter tests derive it: GITHUB_TOKEN for
// api.github.com over an allow-list, on a fixture host that has the egress bridge and a system CA bundle.
import type { runPipeline } from './hosts.js';

export const BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export const WITH_CREDENTIALS: NonNullable<Parameters<typeof runPipeline>[2]> = {
  profile: {
    network: { allow: ['api.github.com'] },
    credentials: { GITHUB_TOKEN: { from: { env: 'GITHUB_TOKEN' }, hosts: ['api.github.com'] } },
  },
  mutateHost: (h) => {
    h.bridge = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs' };
    h.paths[BUNDLE] = { exists: true, real: BUNDLE, type: 'file', uid: 0 };
  },
};
