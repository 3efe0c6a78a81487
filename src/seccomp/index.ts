// The seccomp module's public door: settings → rules → a BPF program for bwrap or a Kafel policy
// for nsjail. Pure: no I/O; the caller passes process.arch to hostSeccompArch.
export type { SeccompArch, SeccompPreset, SeccompSettings, SeccompRule } from './types.js';
export { resolveSeccompRules } from './rules.js';
export { assembleSeccompFilter } from './filter.js';
export { renderKafelPolicy } from './kafel.js';
export { hostSeccompArch } from './arch.js';
export { IO_URING_SYSCALLS } from './sets.js';
