// Transparent capture as the backends with a network namespace start it (src/backend/shared/bridge.ts):
// the network judge in front of the bridge, and the warning when capture is off.
import { describe, expect, it } from 'vitest';
import { captureWarning, commandOf } from '../../../../src/backend/shared/bridge.js';
import { runPipeline } from '../../../helpers/hosts.js';

const JUDGE = { node: '/usr/bin/node', script: '/opt/sbx/dist/bridge.cjs', judge: '/opt/sbx/dist/sbx-landlock' };
const allowList = (bridge: { node: string; script: string; judge?: string }) =>
  runPipeline('default', 'alice', {
    request: { allowDomains: ['example.com'] },
    mutateHost: (h) => {
      h.bridge = bridge;
    },
  });

describe('commandOf under capture', () => {
  it('puts the judge in front of the bridge, with its descriptors, and the bridge announces its port', async () => {
    const { policy } = await allowList(JUDGE);
    const fds = { seccomp: 5, status: 6, announce: 3 };
    expect(commandOf(policy, fds).slice(0, 10)).toEqual([
      '/run/sbx/sbx-landlock',
      '--judge',
      '5',
      '6',
      '3',
      '--',
      '/run/sbx/node',
      '/run/sbx/bridge.cjs',
      '--announce',
      '3',
    ]);
    expect(commandOf(policy, { ...fds, seccomp: undefined }).slice(2, 3)).toEqual(['-']);
  });

  it('without descriptors, or without the judge, the bridge alone', async () => {
    const captured = await allowList(JUDGE);
    expect(commandOf(captured.policy)[0]).toBe('/run/sbx/node');
    const off = await allowList({ node: JUDGE.node, script: JUDGE.script });
    expect(commandOf(off.policy, { seccomp: 5, status: 6, announce: 3 })[0]).toBe('/run/sbx/node');
  });
});

describe('captureWarning', () => {
  it('on: none; off (the judge was not built): why, and that only proxy-aware clients connect', async () => {
    const on = await allowList(JUDGE);
    expect(captureWarning(on.policy)).toEqual([]);
    const off = await allowList({ node: JUDGE.node, script: JUDGE.script });
    expect(captureWarning(off.policy)).toEqual([
      expect.stringMatching(
        /^transparent capture is off \(the network judge .* was not built.*\): only clients that honour/,
      ),
    ]);
  });

  it('no allow list: nothing to capture, nothing said', async () => {
    const { policy } = await runPipeline('default', 'alice');
    expect(captureWarning(policy)).toEqual([]);
  });
});
