// Golden Policy IR: every built-in profile × every fixture host, through the real loader and
// derivePolicy. The argv goldens pin what one backend makes of a Policy; this pins the Policy itself,
// the one input every backend and exporter compiles, so a refactor of the derivation (policy/derive/)
// that changes nothing must leave these files byte-identical.
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { expectGoldenText } from '../../../helpers/golden.js';
import { builtinProfileNames, hostFixtureNames, runPipeline } from '../../../helpers/hosts.js';
import { GOLDEN_DIR } from '../../../helpers/paths.js';

const CASES = builtinProfileNames().flatMap((profile) => hostFixtureNames().map((host) => ({ profile, host })));

describe.each(CASES)('$profile × $host', ({ profile, host }) => {
  it('matches its golden Policy', async () => {
    const { policy } = await runPipeline(profile, host);
    expectGoldenText(join(GOLDEN_DIR, `${profile}.${host}.policy.json`), `${JSON.stringify(policy, null, 2)}\n`);
  });
});
