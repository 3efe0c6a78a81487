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

/** What a promise rejects with; a promise that resolves fails the test. */
export async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string; hint?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message: string; hint?: string };
  }
  throw new Error('expected a rejection');
}
