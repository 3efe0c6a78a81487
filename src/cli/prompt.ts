// Questions on the controlling terminal: the approval question (docs/DESIGN.md, "Approvals"), the
// network question a run asks while its command runs (docs/DESIGN.md, "Asking at the proxy") and the
// y/N confirmation `sbx trust` and `sbx approvals clear` ask. Never on stdin/stdout: those belong to
// the command, and a pipe on stdin must never answer for the user.
import { closeSync, openSync } from 'node:fs';
import { ReadStream, WriteStream, isatty } from 'node:tty';
import { shellJoin } from './quote.js';

import { SbxError } from '../errors.js';
import type { ApprovalAnswer, ApprovalRequest } from '../commands/host/command-gate.js';
import type { NetworkAnswer, NetworkAsker, NetworkRequest } from '../network/network-asks.js';

export type { ApprovalAnswer };

export interface PromptIo {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

export interface Tty extends PromptIo {
  close(): void;
}

/** An answer longer than this is not one of ours: stop buffering and deny. */
const MAX_ANSWER_CHARS = 64;

/** The command may be hostile: escape C0 and C1 controls so it cannot repaint the question (ESC/CSI sequences, \r). */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
}

/**
 * Only an explicit word is remembered: `a` for good, `d` for 10 minutes. Enter, and anything not
 * understood, denies this time only: a stray keystroke must neither approve nor lock a command out.
 */
function answerOf(line: string): ApprovalAnswer {
  const word = line.trim().toLowerCase();
  if (word === 'o' || word === 'once') return 'once';
  if (word === 'a' || word === 'always') return 'always';
  if (word === 'd' || word === 'deny') return 'deny';
  return 'deny-once';
}

/** Read up to the first newline; EOF or an error first counts as no answer (deny). */
export function readLine(input: NodeJS.ReadableStream): Promise<string | undefined> {
  // An input that already ended (a second question after EOF) would never emit 'end' again.
  if ((input as { readableEnded?: boolean }).readableEnded) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let buffered = '';
    const finish = (line: string | undefined) => {
      input.off('data', onData);
      input.off('end', onEnd);
      input.off('error', onEnd);
      input.off('close', onEnd);
      input.pause();
      resolve(line);
    };
    const onData = (chunk: Buffer | string) => {
      buffered += chunk.toString();
      const newline = buffered.indexOf('\n');
      if (newline >= 0) finish(buffered.slice(0, newline));
      else if (buffered.length > MAX_ANSWER_CHARS) finish('');
    };
    const onEnd = () => finish(undefined);
    input.on('data', onData);
    input.on('end', onEnd);
    input.on('error', onEnd);
    // A terminal closed under the question (tty.close(): the question timed out) emits no 'end'.
    input.on('close', onEnd);
    input.resume();
  });
}

/** Ask whether to run `argv`. Anything but o/once/a/always, including EOF, is a denial; only d/deny is remembered. */
export async function askApproval(q: ApprovalRequest, io: PromptIo): Promise<ApprovalAnswer> {
  const profile = printable(q.profile);
  io.output.write(
    [
      `sbx: approval needed (profile ${profile})`,
      `  command: ${shellJoin(q.argv)}`,
      `  reason:  ${printable(q.reason)}`,
      `[o]nce  [a]lways for profile ${profile}  [d]eny for 10 minutes  [Enter] deny this time: `,
    ].join('\n'),
  );
  const line = await readLine(io.input);
  // At EOF the user's terminal line still ends in the question.
  if (line === undefined) io.output.write('\n');
  return line === undefined ? 'deny-once' : answerOf(line);
}

/** The controlling terminal for reading and writing, or undefined when there is none (cron, CI, setsid). */
export function openTty(): Tty | undefined {
  let readFd: number | undefined;
  let writeFd: number | undefined;
  try {
    readFd = openSync('/dev/tty', 'r');
    writeFd = openSync('/dev/tty', 'w');
  } catch {
    // ENXIO: no controlling terminal; ENOENT: no /dev/tty at all (some containers).
    if (readFd !== undefined) closeSync(readFd);
    return undefined;
  }
  if (!isatty(readFd) || !isatty(writeFd)) {
    closeSync(readFd);
    closeSync(writeFd);
    return undefined;
  }
  // tty.ReadStream, not fs.createReadStream: a pending fs read on a terminal blocks a libuv thread
  // until a key is pressed, so the process could not exit; a tty stream can be destroyed at once.
  const input = new ReadStream(readFd);
  const output = new WriteStream(writeFd);
  return {
    input,
    output,
    close() {
      input.destroy();
      output.destroy();
    },
  };
}

/** The CLI's approver: asks on the controlling terminal; undefined (refused) when there is none. */
export async function askOnTerminal(request: ApprovalRequest): Promise<ApprovalAnswer | undefined> {
  const tty = openTty();
  if (!tty) return undefined;
  try {
    return await askApproval(request, tty);
  } finally {
    tty.close();
  }
}

/** Only o/once and a/always allow; Enter, EOF, d/deny and anything not understood deny (this run only). */
export async function askNetworkApproval(q: NetworkRequest, profile: string, io: PromptIo): Promise<NetworkAnswer> {
  const host = printable(q.host.includes(':') ? `[${q.host}]` : q.host);
  io.output.write(
    [
      `sbx: the sandboxed command asks to connect to ${host}:${q.port} (not in network.allow; it waits)`,
      `[o]nce for this run  [a]lways for profile ${printable(profile)}  [d]eny or [Enter] for this run: `,
    ].join('\n'),
  );
  const line = await readLine(io.input);
  if (line === undefined) io.output.write('\n');
  const answer = line === undefined ? 'deny-once' : answerOf(line);
  return answer === 'once' || answer === 'always' ? answer : 'deny';
}

/**
 * The CLI's network asker: one question at a time on the controlling terminal, in the order asked
 * (two destinations asked at once queue; the proxy already joins two connections to the same one).
 * The caller gives it only when no stdio of the command is that terminal (cli/run-command.ts), so
 * the command can neither read the answer nor print a fake question. No terminal: denied.
 */
export function terminalNetworkAsker(profile: () => string): NetworkAsker {
  let queue: Promise<unknown> = Promise.resolve();
  return (request, { signal }) => {
    const asked = queue.then(async (): Promise<NetworkAnswer> => {
      if (signal.aborted) return 'deny';
      const tty = openTty();
      if (!tty) return 'deny';
      // A question that timed out, or a run that ended, stops reading: EOF, a denial.
      const stop = () => tty.close();
      signal.addEventListener('abort', stop);
      try {
        return await askNetworkApproval(request, profile(), tty);
      } finally {
        signal.removeEventListener('abort', stop);
        tty.close();
      }
    });
    queue = asked.catch(() => undefined);
    return asked;
  };
}

/** One line from the terminal: y or yes confirms, anything else (Enter, EOF) does not. */
export async function confirm(question: string, io: PromptIo): Promise<boolean> {
  io.output.write(`${question} [y/N] `);
  const line = await readLine(io.input);
  if (line === undefined) io.output.write('\n');
  return /^\s*(y|yes)\s*$/i.test(line ?? '');
}

/** Asks on the controlling terminal; without one, `--yes` is required (a script must say it means it). */
export async function confirmOnTerminal(question: string, flagHint: string): Promise<void> {
  const tty = openTty();
  if (!tty) throw new SbxError('USAGE', 'no terminal to confirm on', { hint: `pass --yes to confirm ${flagHint}` });
  try {
    if (!(await confirm(question, tty)))
      throw new SbxError('USAGE', 'not confirmed: nothing changed', { hint: `answer y, or pass --yes` });
  } finally {
    tty.close();
  }
}
