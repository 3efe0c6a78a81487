// The SbxError a call throws: anything else thrown (or nothing) fails the test.
import { SbxError } from '../../src/errors.js';

export function sbxErrorOf(fn: () => unknown): SbxError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SbxError) return error;
    throw error;
  }
  throw new Error('expected an SbxError');
}
