// The ssh-agent filter's decisions (src/ssh-agent/ssh-agent.ts) on bytes, and what `ssh_agent` puts in the
// Policy and each backend's launch. The sockets and a real agent are test/integration/ssh-agent/.
import { describe, expect, it } from 'vitest';
import { compileBwrap, expandArgsFd } from '../../../src/backend/bwrap/compile.js';
import { compileLandlock } from '../../../src/backend/landlock/compile.js';
import { compileNsjail } from '../../../src/backend/nsjail/compile.js';
import { ExitCode, SbxError } from '../../../src/errors.js';
import {
  AGENT_FAILURE_FRAME,
  AGENT_MAX_MESSAGE_BYTES,
  type AgentKey,
  encodeIdentities,
  filterIdentities,
  judgeRequest,
  keyId,
  lengthPrefixed,
  parseIdentities,
  SSH_AGENT_SANDBOX_SOCKET,
  selectKeys,
  splitFrames,
} from '../../../src/ssh-agent/ssh-agent.js';
import { widenings } from '../../../src/profile/widen.js';
import { sbxErrorOf } from '../../helpers/errors.js';
import { deriveOnFixture, FIXTURE_BWRAP, FIXTURE_SESSION } from '../../helpers/hosts.js';
import { fixtureNsjailHost } from '../backend/nsjail/nsjail-fixtures.js';

const text = (s: string) => new TextEncoder().encode(s);
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
const uint32 = (n: number) => {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, n);
  return out;
};

// Blobs shaped like ssh-ed25519 keys: the filter compares bytes, so their content is arbitrary.
const ALLOWED: AgentKey = {
  blob: concat(lengthPrefixed(text('ssh-ed25519')), new Uint8Array(36).fill(1)),
  comment: 'me@laptop',
};
const OTHER: AgentKey = {
  blob: concat(lengthPrefixed(text('ssh-ed25519')), new Uint8Array(36).fill(2)),
  comment: 'ci@server',
};
const allowed = new Set([keyId(ALLOWED.blob)]);

function signRequest(blob: Uint8Array, trailing = new Uint8Array(0)): Uint8Array {
  return concat(Uint8Array.of(13), lengthPrefixed(blob), lengthPrefixed(text('session data')), uint32(0), trailing);
}

describe('splitFrames', () => {
  it('returns each complete message and keeps the start of the next', () => {
    const stream = concat(
      lengthPrefixed(Uint8Array.of(11)),
      lengthPrefixed(Uint8Array.of(11)),
      uint32(9),
      Uint8Array.of(13),
    );
    const split = splitFrames(stream);
    if ('malformed' in split) throw new Error(split.malformed);
    expect(split.messages).toEqual([Uint8Array.of(11), Uint8Array.of(11)]);
    expect(split.rest).toEqual(concat(uint32(9), Uint8Array.of(13)));
  });

  it('waits for a length that has not fully arrived', () => {
    expect(splitFrames(Uint8Array.of(0, 0))).toEqual({ messages: [], rest: Uint8Array.of(0, 0) });
  });

  it('refuses an empty message and one announced past the bound, before its bytes arrive', () => {
    expect(splitFrames(uint32(0))).toEqual({ malformed: 'an empty message' });
    expect(splitFrames(uint32(AGENT_MAX_MESSAGE_BYTES + 1))).toHaveProperty('malformed');
    expect(splitFrames(uint32(0xffffffff))).toHaveProperty('malformed');
    expect(splitFrames(uint32(AGENT_MAX_MESSAGE_BYTES))).not.toHaveProperty('malformed');
  });
});

describe('judgeRequest', () => {
  it('asks the agent for its keys on a bare key list request', () => {
    expect(judgeRequest(Uint8Array.of(11), allowed)).toEqual({ kind: 'list' });
    expect(judgeRequest(Uint8Array.of(11, 0), allowed).kind).toBe('malformed');
  });

  it('forwards a signature only with an allowed key, compared by blob', () => {
    expect(judgeRequest(signRequest(ALLOWED.blob), allowed)).toEqual({ kind: 'sign' });
    expect(judgeRequest(signRequest(OTHER.blob), allowed).kind).toBe('refuse');
    // The same comment on another blob is another key.
    expect(judgeRequest(signRequest(concat(ALLOWED.blob, Uint8Array.of(0))), allowed).kind).toBe('refuse');
  });

  it('closes on a signature request that does not parse whole (truncated, or with bytes after it)', () => {
    const whole = signRequest(ALLOWED.blob);
    expect(judgeRequest(whole.subarray(0, whole.length - 1), allowed).kind).toBe('malformed');
    expect(judgeRequest(signRequest(ALLOWED.blob, Uint8Array.of(0)), allowed).kind).toBe('malformed');
    expect(judgeRequest(concat(Uint8Array.of(13), uint32(0xffffffff)), allowed).kind).toBe('malformed');
  });

  // draft-miller-ssh-agent 5.1: add (17, 25), remove (18, 19), smartcards (20, 21, 26), lock (22, 23),
  // extension (27: session-bind@openssh.com, query), and the protocol 1 requests (1, 3, 7, 8, 9).
  it.each([1, 3, 7, 8, 9, 17, 18, 19, 20, 21, 22, 23, 25, 26, 27, 0, 12, 14, 255])(
    'refuses message type %i without asking the agent',
    (type) => {
      expect(judgeRequest(concat(Uint8Array.of(type), lengthPrefixed(text('payload'))), allowed).kind).toBe('refuse');
    },
  );

  it('answers a refusal with SSH_AGENT_FAILURE in a frame of its own', () => {
    expect(AGENT_FAILURE_FRAME).toEqual(lengthPrefixed(Uint8Array.of(5)));
  });
});

describe('the key list', () => {
  it('parses what it encodes', () => {
    expect(parseIdentities(encodeIdentities([ALLOWED, OTHER]))).toEqual([ALLOWED, OTHER]);
    expect(parseIdentities(encodeIdentities([]))).toEqual([]);
  });

  it('narrows the agent’s answer to the allowed keys, comments as the agent has them', () => {
    const answer = encodeIdentities([OTHER, { ...ALLOWED, comment: 'renamed' }]);
    expect(parseIdentities(filterIdentities(answer, allowed))).toEqual([{ ...ALLOWED, comment: 'renamed' }]);
    expect(parseIdentities(filterIdentities(answer, new Set()))).toEqual([]);
  });

  it('turns an answer that is not a key list, or does not parse, into a failure', () => {
    const failure = Uint8Array.of(5);
    expect(filterIdentities(failure, allowed)).toEqual(failure);
    const whole = encodeIdentities([ALLOWED]);
    expect(filterIdentities(whole.subarray(0, whole.length - 1), allowed)).toEqual(failure);
    expect(filterIdentities(concat(whole, Uint8Array.of(0)), allowed)).toEqual(failure);
    // A count no message of this size could hold is refused before anything is allocated for it.
    expect(filterIdentities(concat(Uint8Array.of(12), uint32(0x7fffffff)), allowed)).toEqual(failure);
  });
});

describe('selectKeys', () => {
  const listed = [
    { ...ALLOWED, fingerprint: 'SHA256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' },
    { ...OTHER, fingerprint: 'SHA256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' },
  ];

  it('picks keys by fingerprint or by comment, each once', () => {
    expect(selectKeys(listed, ['me@laptop'])).toEqual([listed[0]]);
    expect(selectKeys(listed, ['SHA256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'])).toEqual([listed[1]]);
    expect(selectKeys(listed, ['me@laptop', 'SHA256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'])).toHaveLength(1);
  });

  it('refuses a key the agent does not hold, naming it, with `ssh-add -l` in the hint', () => {
    const error = sbxErrorOf(() => selectKeys(listed, ['me@laptop', 'gone@laptop']));
    expect(error.code).toBe('SSH_AGENT_KEY');
    expect(error.exitCode).toBe(ExitCode.SETUP);
    expect(error.message).toContain('"gone@laptop"');
    expect(error.hint).toContain('ssh-add -l');
    // A comment that looks like a fingerprint is not compared with comments.
    const byPrint = [{ ...listed[0]!, comment: 'SHA256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' }];
    expect(sbxErrorOf(() => selectKeys(byPrint, [byPrint[0]!.comment])).code).toBe('SSH_AGENT_KEY');
  });

  it('refuses a comment that names two keys, listing their fingerprints', () => {
    const twins = listed.map((k) => ({ ...k, comment: 'me@laptop' }));
    const error = sbxErrorOf(() => selectKeys(twins, ['me@laptop']));
    expect(error.code).toBe('SSH_AGENT_KEY');
    expect(error.hint).toContain(listed[0]!.fingerprint);
    expect(error.hint).toContain(listed[1]!.fingerprint);
  });
});

describe('ssh_agent in the Policy and the launch', () => {
  const profile = { ssh_agent: { keys: ['me@laptop', 'me@laptop'] }, env: { set: { SSH_AUTH_SOCK: '/elsewhere' } } };

  it('sets SSH_AUTH_SOCK to the socket inside, over env.set and the caller’s own', () => {
    const policy = deriveOnFixture(profile, { request: { keepEnv: ['SSH_AUTH_SOCK'] } });
    expect(policy.env.vars.SSH_AUTH_SOCK).toBe(SSH_AGENT_SANDBOX_SOCKET);
    expect(policy.sshAgent).toEqual({ keys: ['me@laptop'] });
    expect(policy.mounts.filter((m) => m.kind === 'session-dir')).toEqual([
      {
        kind: 'session-dir',
        target: '/run/sbx/ssh-agent',
        subdir: 'ssh-agent',
        reason: expect.any(String),
        role: 'socket',
      },
    ]);
  });

  it('leaves a profile without it as it was: no agent, the caller’s socket dropped', () => {
    const policy = deriveOnFixture({});
    expect(policy.env.vars.SSH_AUTH_SOCK).toBeUndefined();
    expect(policy.env.dropped).toContainEqual({ name: 'SSH_AUTH_SOCK', reason: 'not-allowed' });
    expect(policy).not.toHaveProperty('sshAgent');
    expect(policy.mounts.some((m) => m.kind === 'session-dir')).toBe(false);
  });

  it('bwrap and nsjail bind the session’s agent directory alone, read-only', () => {
    const policy = deriveOnFixture(profile);
    const argv = expandArgsFd(compileBwrap(policy, FIXTURE_SESSION, FIXTURE_BWRAP));
    const at = argv.indexOf('/run/sbx/ssh-agent');
    expect(argv.slice(at - 2, at + 1)).toEqual(['--ro-bind', `${FIXTURE_SESSION.dir}/ssh-agent`, '/run/sbx/ssh-agent']);
    const nsjail = compileNsjail(policy, FIXTURE_SESSION, fixtureNsjailHost(1000)).args;
    expect(nsjail).toContain(`${FIXTURE_SESSION.dir}/ssh-agent:/run/sbx/ssh-agent`);
    expect(nsjail[nsjail.indexOf(`${FIXTURE_SESSION.dir}/ssh-agent:/run/sbx/ssh-agent`) - 1]).toBe('--bindmount_ro');
  });

  it('is refused in mode: danger, whose root is the host’s own (the mount point would land in its /run)', () => {
    const error = sbxErrorOf(() => deriveOnFixture({ ...profile, mode: 'danger' }, { request: { danger: true } }));
    expect(error.code).toBe('BIND_TARGET_INVALID');
    expect(error.message).toContain('/run/sbx/ssh-agent would be created on the host');
  });

  it('landlock refuses it by name', () => {
    const policy = deriveOnFixture(profile);
    const host = {
      path: '/usr/lib/sbx/dist/sbx-landlock',
      stdinIsTty: false,
      arch: 'x86_64' as const,
      uid: 1000,
      gid: 1000,
    };
    const error = sbxErrorOf(() => compileLandlock(policy, FIXTURE_SESSION, host));
    expect(error).toBeInstanceOf(SbxError);
    expect(error.code).toBe('BACKEND_UNSUPPORTED');
    expect(error.message).toContain('the session directory at /run/sbx/ssh-agent');
  });

  it('`sbx trust` names the keys a profile lets the sandbox sign with', () => {
    expect(widenings({ ssh_agent: { keys: ['me@laptop'] } }, {})).toContain(
      'ssh-agent keys the sandbox may sign with: me@laptop',
    );
  });
});
