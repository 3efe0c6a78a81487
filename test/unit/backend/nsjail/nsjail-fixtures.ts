// The fixed NsjailHost the nsjail unit tests compile for (beside the fixture hosts and session of
// test/helpers/hosts.ts), and the pipeline through compileNsjail.
import type { Launch } from '../../../../src/backend/launch.js';
import { compileNsjail, type NsjailHost } from '../../../../src/backend/nsjail/compile.js';
import { FIXTURE_SESSION, runPipeline, type Pipeline } from '../../../helpers/hosts.js';

/** The fixture command is `sh -c 'echo hi'`; the runtime finds sh on the sandbox PATH. */
export const FIXTURE_EXEC = '/usr/bin/sh';

export function fixtureNsjailHost(uid: number, stdinIsTty = false): NsjailHost {
  return { path: '/usr/bin/nsjail', stdinIsTty, arch: 'x86_64', uid, execPath: FIXTURE_EXEC };
}

export async function nsjailPipeline(
  profile: string,
  host: string,
  options: Parameters<typeof runPipeline>[2] = {},
): Promise<Pipeline & { nsjail: Launch }> {
  const p = await runPipeline(profile, host, options);
  return { ...p, nsjail: compileNsjail(p.policy, FIXTURE_SESSION, fixtureNsjailHost(p.host.uid, p.host.stdinIsTty)) };
}
