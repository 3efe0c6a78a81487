// The run's options are defaulted once, where the pipeline starts (pipeline/options.ts): the values the
// stages read are the ones RunOptions' doc comments promise, and a caller's explicit value is kept.
import { describe, expect, it } from 'vitest';
import { compileSettings, DEFAULT_CAPTURE_LIMIT_BYTES, runSettings } from '../../../src/pipeline/options.js';

describe('run settings', () => {
  it('fill each documented default: inherit stdio, 16 KiB capture, no denylist override, no signal forwarding', () => {
    expect(runSettings({ command: ['true'] })).toEqual({
      command: ['true'],
      allowDenylistedCommands: false,
      stdio: 'inherit',
      captureLimitBytes: DEFAULT_CAPTURE_LIMIT_BYTES,
      forwardSignals: false,
    });
    expect(DEFAULT_CAPTURE_LIMIT_BYTES).toBe(16 * 1024);
  });

  it("keep the caller's values, false included", () => {
    const given = {
      allowDenylistedCommands: true,
      stdio: 'capture' as const,
      captureLimitBytes: 1,
      forwardSignals: true,
    };
    expect(runSettings(given)).toEqual(given);
    expect(compileSettings({ allowDenylistedCommands: false, profile: 'x' })).toEqual({
      allowDenylistedCommands: false,
      profile: 'x',
    });
  });
});
