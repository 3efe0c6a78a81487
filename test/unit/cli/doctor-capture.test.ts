// sbx doctor's capture check: which kernels read a connect made by any thread (PIDFD_THREAD, Linux 6.9).
import { describe, expect, it } from 'vitest';
import { hasThreadPidfds } from '../../../src/cli/doctor.js';

describe('hasThreadPidfds', () => {
  it('is true from Linux 6.9 on, false before', () => {
    for (const r of ['6.9.0', '6.18.44-fc-v657', '7.0.1', '6.12.0-amd64']) expect(hasThreadPidfds(r), r).toBe(true);
    for (const r of ['6.8.0-49-generic', '6.1.0-27-amd64', '5.15.0-122-generic', '4.19.0'])
      expect(hasThreadPidfds(r), r).toBe(false);
  });
});
