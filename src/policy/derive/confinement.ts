// What the running command may do beyond what it sees: the syscalls its seccomp filter allows, and the
// commands the preflight rules let it start (commands/command-rules.ts judges them).
import type { Profile } from '../../profile/schema.js';
import { resolveSeccompRules } from '../../seccomp/index.js';
import type { CommandRules, Policy } from '../types.js';

export function seccompOf(profile: Profile): Policy['seccomp'] {
  const preset = profile.seccomp?.preset ?? 'default';
  const rules = resolveSeccompRules({
    preset,
    add: profile.seccomp?.add ?? [],
    remove: profile.seccomp?.remove ?? [],
    allowIoUring: profile.seccomp?.io_uring ?? false,
  });
  return { preset, rules };
}

export function commandRulesOf(profile: Profile): CommandRules {
  const c = profile.commands;
  return {
    default: c?.default ?? 'allow',
    allow: c?.allow ?? {},
    deny: c?.deny ?? [],
    paths: c?.paths ?? 'any',
    shellSyntax: c?.shell_syntax ?? 'full',
  };
}
