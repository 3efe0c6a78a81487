// The warm hook's wire (cli/warm/warm-wire.ts), as native/sbx-warm.c writes it: a call read back whole
// from any prefix only once complete, anything malformed or oversized refused rather than waited on, and
// the environment read as Node reads environ. test/integration/warm/hook-warm.test.ts runs both ends.
import { describe, expect, it } from 'vitest';
import {
  encodeCall,
  encodeInput,
  encodeExit,
  encodeLaunching,
  encodeReply,
  encodeRunGo,
  encodeStderr,
  encodeStdout,
  type WarmCall,
  MAX_CALL_BYTES,
  parseCall,
  parseInput,
  parseSignals,
} from '../../../src/cli/warm/warm-wire.js';

const call: WarmCall = {
  pid: 4242,
  build: '0123456789abcdef',
  node: '/usr/bin/node',
  cwd: '/home/u/project',
  ttys: 5,
  args: ['hook', 'claude-code', '--warm', '-p', 'mine'],
  env: { HOME: '/home/u', PATH: '/usr/bin:/bin', EMPTY: '', 'WITH=EQ': 'x' },
};

describe('the warm hook wire', () => {
  it('reads a call back, and every shorter prefix as incomplete', () => {
    const bytes = encodeCall(call);
    expect(parseCall(bytes)).toEqual({
      ...call,
      env: { HOME: '/home/u', PATH: '/usr/bin:/bin', EMPTY: '', WITH: 'EQ=x' },
    });
    for (let n = 0; n < bytes.length; n++) expect(parseCall(bytes.subarray(0, n)), `prefix ${n}`).toBe('more');
  });

  it('reads the environment as Node does: an entry without "=" is none, the first of a name wins', () => {
    const raw = Buffer.concat([
      encodeCall({ ...call, env: {} }).subarray(0, -4),
      u32(3),
      str('NOEQ'),
      str('A=1'),
      str('A=2'),
    ]);
    expect(parseCall(raw)).toMatchObject({ env: { A: '1' } });
  });

  it('refuses a wrong magic at once, bytes after the call, and a call past the bound', () => {
    expect(parseCall(Buffer.from('SBX2'))).toBe('bad');
    expect(parseCall(Buffer.from('X'))).toBe('bad');
    expect(parseCall(Buffer.concat([encodeCall(call), Buffer.from('!')]))).toBe('bad');
    expect(parseCall(Buffer.alloc(MAX_CALL_BYTES + 1))).toBe('bad');
  });

  it('reads the input whole, refuses one past the limit before it arrives', () => {
    const input = Buffer.from('{"tool_name":"Bash"}');
    expect(parseInput(encodeInput(input), 100)).toEqual(input);
    expect(parseInput(encodeInput(input).subarray(0, 10), 100)).toBe('more');
    expect(parseInput(u32(101), 100)).toBe('bad');
    expect(parseInput(Buffer.concat([encodeInput(input), Buffer.from('x')]), 100)).toBe('bad');
  });

  it('encodes a reply as the client reads it: magic, status, stdout, the text for a failed stdout', () => {
    expect(encodeReply(0, 'ok\n', 'why')).toEqual(
      Buffer.concat([Buffer.from('SBX1'), u32(0), u32(3), Buffer.from('ok\n'), u32(3), Buffer.from('why')]),
    );
  });
});

describe("the warm wire's run messages", () => {
  it('encodes them as native/sbx-warm.c reads them: a type byte, then lengths and bytes', () => {
    expect(encodeRunGo('/c/sbx/.run-ab.sock')).toEqual(Buffer.concat([Buffer.from('Y'), str('/c/sbx/.run-ab.sock')]));
    expect(encodeStderr('sbx: x\n')).toEqual(Buffer.concat([Buffer.from('E'), str('sbx: x\n')]));
    expect(encodeStdout(Buffer.from('{}\n'), { before: 'b(', after: ')\n' })).toEqual(
      Buffer.concat([Buffer.from('O'), str('{}\n'), str('b('), str(')\n')]),
    );
    expect(encodeLaunching()).toEqual(Buffer.from('L'));
    expect(encodeExit(130)).toEqual(Buffer.concat([Buffer.from('X'), u32(130)]));
  });

  it("reads the client's signals two bytes each, keeps a half message, refuses anything else", () => {
    expect(parseSignals(Buffer.from([0x53, 2, 0x53, 15]))).toEqual({ signals: [2, 15], used: 4 });
    expect(parseSignals(Buffer.from([0x53, 2, 0x53]))).toEqual({ signals: [2], used: 2 });
    expect(parseSignals(Buffer.alloc(0))).toEqual({ signals: [], used: 0 });
    expect(parseSignals(Buffer.from('X'))).toBe('bad');
    expect(parseSignals(Buffer.from([0x53, 2, 0x41, 1]))).toBe('bad');
  });
});

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}

function str(s: string): Buffer {
  return Buffer.concat([u32(Buffer.byteLength(s)), Buffer.from(s)]);
}
