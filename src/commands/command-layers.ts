// How the command rules read one argv (docs/DESIGN.md, "Command rules"): the command and every command it
// wraps, each wrapper's own options skipped (`env X=1 timeout 5 curl` is looked through to curl), the
// commands its tools run (`find -exec CMD ;`: tool-arguments.ts), the script a shell runs with -c, and a
// command's subcommand past its global options. Pure; the tables of wrappers and options are
// known-commands.ts.
import { posix } from 'node:path';
import { COMMAND_GROUPS, GLOBAL_OPTIONS, SPLIT_STRING, WRAPPERS } from './known-commands.js';
import type { ExpandedOf, ToolReading } from './tool-arguments.js';
import { readTool } from './tool-readings.js';

const SHELLS = new Set(COMMAND_GROUPS['@shells']);

const basename = (arg: string) => posix.basename(arg);

/**
 * The option of `withValue` that `arg` gives, and its value when attached: `--opt=VALUE`, a long
 * option abbreviated as getopt_long allows (`--split=…`), `-oVALUE`, or the last option of a
 * short cluster (`-iS'cmd'`). Undefined when `arg` takes no value here.
 */
function optionTaken(arg: string, withValue: readonly string[]): { opt: string; attached?: string } | undefined {
  if (arg.startsWith('--')) {
    const eq = arg.indexOf('=');
    const given = eq < 0 ? arg : arg.slice(0, eq);
    const opt = withValue.find((o) => o === given) ?? withValue.find((o) => given.length > 2 && o.startsWith(given));
    if (opt === undefined) return undefined;
    return eq < 0 ? { opt } : { opt, attached: arg.slice(eq + 1) };
  }
  for (let j = 1; j < arg.length; j++) {
    const opt = `-${arg[j]}`;
    if (withValue.includes(opt)) return j + 1 < arg.length ? { opt, attached: arg.slice(j + 1) } : { opt };
  }
  return undefined;
}

/** The command line an env layer runs given as one string (`-S`, in any of its spellings), if it has one. */
export function splitString(layer: readonly string[]): string | undefined {
  for (let i = 1; i < layer.length; i++) {
    const taken = optionTaken(layer[i]!, WRAPPERS.env!.withValue);
    if (taken && SPLIT_STRING.has(taken.opt)) return taken.attached ?? layer[i + 1] ?? '';
  }
  return undefined;
}

/** The command and every command it wraps: `env X=1 timeout 5 curl u` → [env…], [timeout…], [curl u]. */
export function layersOf(argv: readonly string[]): string[][] {
  const layers: string[][] = [];
  let rest = [...argv];
  while (rest.length > 0 && layers.length < 16) {
    layers.push(rest);
    const name = basename(rest[0]!);
    const wrapper = WRAPPERS[name];
    // `command -v NAME` and `command -V NAME` only say what NAME is.
    if (!wrapper || (name === 'command' && /^-[vV]$/.test(rest[1] ?? ''))) break;
    let i = 1;
    let split: string[] = [];
    for (; i < rest.length; i++) {
      const arg = rest[i]!;
      if (arg === '--') {
        i++;
        break;
      }
      if (arg.startsWith('-') && arg.length > 1) {
        const taken = optionTaken(arg, wrapper.withValue);
        if (taken) {
          const value = taken.attached ?? rest[++i] ?? '';
          if (name === 'env' && SPLIT_STRING.has(taken.opt)) split = value.split(/\s+/).filter(Boolean);
        }
        continue;
      }
      if (wrapper.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) continue;
      break;
    }
    i += wrapper.positionals ?? 0;
    rest = [...split, ...rest.slice(i)];
  }
  return layers;
}

/**
 * Where the script of `sh [options] -c [options] [--] SCRIPT` sits in the layer (also `-ec`, `-lc`,
 * `bash -O opt -c`); undefined when the shell runs no -c string. A missing script is past the end.
 */
export function shellScriptAt(layer: readonly string[]): number | undefined {
  if (!SHELLS.has(basename(layer[0]!))) return undefined;
  const c = layer.findIndex((arg, i) => i > 0 && /^-[A-Za-z]*c[A-Za-z]*$/.test(arg));
  if (c < 0) return undefined;
  for (let i = c + 1; i < layer.length; i++) {
    const arg = layer[i]!;
    if (arg === '--') return i + 1;
    if (/^[-+][oO]$/.test(arg)) i++;
    else if (!/^[-+]./.test(arg)) return i;
  }
  return layer.length;
}

/** Subcommand and what follows it, skipping global options (and their values). */
export function subcommandOf(layer: readonly string[]): { sub: string; rest: string[] } | undefined {
  const withValue = GLOBAL_OPTIONS[basename(layer[0]!)] ?? [];
  for (let i = 1; i < layer.length; i++) {
    const arg = layer[i]!;
    if (arg === '--') return undefined;
    if (arg.startsWith('-')) {
      if (withValue.includes(arg)) i++;
      continue;
    }
    return { sub: arg, rest: layer.slice(i + 1) };
  }
  return undefined;
}

/** A command an argv runs: the argv itself, or one that a tool it runs starts (find -exec CMD, git's pager). */
export interface Run {
  /** The command and every command it wraps (layersOf). */
  layers: string[][];
  /** How its last layer reads its arguments; undefined for a tool sbx has no grammar for. */
  reading: ToolReading | undefined;
  /** What started it (`find -exec`), when a tool did. */
  via?: string;
  /** `deny`: only the deny list and the network judge it (the program `npx CMD` runs is the project's). */
  scope: 'all' | 'deny';
}

/** More commands than this from one argv is no real use: the rest is not read, and that is refused. */
const MAX_RUNS = 32;

/**
 * Every command an argv runs, and the command lines its tools give a shell (`git -c core.pager='less
 * | head'`), which the caller judges as shell strings. `overflow` when there were more than MAX_RUNS.
 */
export function runsOf(
  argv: readonly string[],
  expandedOf: ExpandedOf,
): { runs: Run[]; scripts: { script: string; via: string }[]; overflow: boolean } {
  const runs: Run[] = [];
  const scripts: { script: string; via: string }[] = [];
  let overflow = false;
  const visit = (words: readonly string[], via: string | undefined, scope: Run['scope']) => {
    if (words.length === 0) return;
    if (runs.length >= MAX_RUNS) {
      overflow = true;
      return;
    }
    const layers = layersOf(words);
    const reading = readTool(layers.at(-1)!, expandedOf);
    runs.push({ layers, reading, scope, ...(via === undefined ? {} : { via }) });
    for (const spawn of reading?.spawned ?? []) {
      if (spawn.kind === 'script') scripts.push({ script: spawn.script, via: spawn.via });
      else visit(spawn.argv, spawn.via, scope === 'deny' ? 'deny' : spawn.scope);
    }
  };
  visit(argv, undefined, 'all');
  return { runs, scripts, overflow };
}
