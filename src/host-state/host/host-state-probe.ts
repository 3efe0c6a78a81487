// The host state no sandbox may write (host-state/host-state.ts), probed for one run: each
// protected path's chain of directories by identity, the writable binds' chains (each must end at the
// directory that was pinned), and the other names of protected files inside the writable trees.
import { realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { SbxError } from '../../errors.js';
import { chainMemo, pathChain } from '../../host/path-chain.js';
import { passwdHome } from '../../host/invoking-user.js';
import { sessionBase } from '../../host/session.js';
import { packageRoot } from '../../package-root.js';
import type { ProbePlan } from '../../policy/derive/probe-plan.js';
import type { Host } from '../../policy/host.js';
import type { HostProbeInput } from '../../policy/host/probe-host.js';
import { type HostStateFact, hostStatePaths, type PathChain, profileFileState } from '../host-state.js';
import { hostStateLinks } from './host-state-links.js';

/**
 * The user's host state (host-state/host-state.ts) and the writable binds' chains, by identity. A bind's
 * chain must end at the very directory that was pinned: one swapped since is refused.
 */
export function probeHostState(input: HostProbeInput, plan: ProbePlan, paths: Host['paths'], extra: readonly string[]) {
  const { ctx, pins } = input;
  const homes = [...new Set([ctx.dirs.home, passwdHome()].filter((h): h is string => h !== undefined))];
  const install = { packageRoot: realpathSync(packageRoot()), nodeDir: dirname(realpathSync(ctx.execPath)) };
  const { resolved } = input;
  const ownerChecked = resolved.trust.kind === 'owner-checked' ? resolved.chain.filter((l) => l.source === 'path') : [];
  const state = [
    ...hostStatePaths(homes, ctx.env, sessionBase(ctx.env, ctx.uid), install),
    ...profileFileState(
      ownerChecked.map((l) => l.real),
      resolved.hash,
    ),
  ];
  const memo = chainMemo(state.map((s) => s.path));
  const hostState: HostStateFact[] = state.map((s) => ({ ...s, chain: pathChain(s.path, memo) }));
  const chains: Record<string, PathChain> = {};
  const trees: { real: string; via: string }[] = [];
  for (const path of [...plan.writable, ...extra]) {
    const f = paths[path];
    const fd = f?.exists ? pins.fdOf(f.real) : undefined;
    if (!f?.exists || fd === undefined || chains[f.real]) continue;
    const chain = pathChain(f.real, memo);
    const st = statSync(`/proc/self/fd/${fd}`);
    if (chain.exists && chain.ids.at(-1) === `${st.dev}:${st.ino}`) {
      chains[f.real] = chain;
      trees.push({ real: f.real, via: `/proc/self/fd/${fd}` });
    } else
      throw new SbxError('BIND_SOURCE_CHANGED', `${path} (${f.real}) was replaced while sbx checked it`, {
        hint: 'run again; if it repeats, something is rewriting that directory',
      });
  }
  // Danger mode writes the host root by design: nothing to search (derivePolicy exempts it too).
  const links = resolved.profile.mode === 'danger' ? [] : hostStateLinks(state, trees);
  return { hostState, chains, ...(links.length > 0 ? { hostStateLinks: links } : {}) };
}
