// Linux signal numbers and names (x86_64 and aarch64 share them): how a status of 128+N is read.

/** Linux signal numbers (x86_64 and aarch64 share them); 34..64 are the real-time signals. */
export const SIGNAL_NAMES = [
  '',
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGILL',
  'SIGTRAP',
  'SIGABRT',
  'SIGBUS',
  'SIGFPE',
  'SIGKILL',
  'SIGUSR1',
  'SIGSEGV',
  'SIGUSR2',
  'SIGPIPE',
  'SIGALRM',
  'SIGTERM',
  'SIGSTKFLT',
  'SIGCHLD',
  'SIGCONT',
  'SIGSTOP',
  'SIGTSTP',
  'SIGTTIN',
  'SIGTTOU',
  'SIGURG',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGWINCH',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
];
const SIGRTMIN = 34;
const SIGRTMAX = 64;

/** The name of signal N, or undefined when no signal has that number. */
export function signalName(n: number): string | undefined {
  if (n >= 1 && n < SIGNAL_NAMES.length) return SIGNAL_NAMES[n];
  if (n >= SIGRTMIN && n <= SIGRTMAX) return n === SIGRTMIN ? 'SIGRTMIN' : `SIGRTMIN+${n - SIGRTMIN}`;
  return undefined;
}
