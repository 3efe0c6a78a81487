// The tools whose arguments a table cannot describe (docs/DESIGN.md, "Command rules"): find's expression
// (`-exec CMD ;` runs a command, `-delete` deletes), git (global options, `-c KEY=VALUE` judged by
// key, the grammar of its subcommand: git-grammar.ts), npm and npx (the program they run), tar (its
// program options in any spelling), editors and pagers whose commands can run a shell, make (its
// variables reach every recipe), and sed and awk, whose programs are read (tool-programs.ts). readTool
// picks the reading of a command's last layer. Pure.
import { posix } from 'node:path';
import {
  GIT_GLOBAL_FLAGS,
  GIT_GLOBAL_VALUED,
  GIT_PROGRAM_CONFIG,
  GIT_SAFE_CONFIG,
  GIT_SUBCOMMANDS,
} from './git-grammar.js';
import {
  type Argument,
  addValue,
  type ExpandedOf,
  emptyReading,
  readGrammar,
  spawnOf,
  type ToolReading,
} from './tool-arguments.js';
import { GRAMMARS, type Grammar, type Role } from './tool-grammars.js';
import { judgeAwkProgram, judgeSedScript } from './tool-programs.js';

/** find's expression primaries that take a value: what it is. `-newerXY` is read apart. */
const FIND_VALUED: Readonly<Record<string, Role>> = {
  ...Object.fromEntries(
    ['-name', '-iname', '-path', '-ipath', '-wholename', '-iwholename', '-regex', '-iregex', '-lname', '-ilname']
      .concat(['-type', '-xtype', '-user', '-group', '-uid', '-gid', '-perm', '-size', '-mtime', '-atime', '-ctime'])
      .concat(['-mmin', '-amin', '-cmin', '-used', '-maxdepth', '-mindepth', '-inum', '-links', '-fstype'])
      .concat(['-regextype', '-printf', '-context', '-D'])
      .map((o) => [o, 'data' as const]),
  ),
  ...Object.fromEntries(
    ['-newer', '-anewer', '-cnewer', '-samefile', '-fprint', '-fprint0', '-fls', '-fprintf'].map((o) => [
      o,
      'path' as const,
    ]),
  ),
};

const FIND_FLAGS = new Set([
  ...['-print', '-print0', '-ls', '-prune', '-quit', '-true', '-false', '-empty', '-readable', '-writable'],
  ...['-executable', '-nouser', '-nogroup', '-depth', '-d', '-mount', '-xdev', '-noleaf', '-ignore_readdir_race'],
  ...['-noignore_readdir_race', '-daystart', '-follow', '-not', '-a', '-o', '-and', '-or', '!', '(', ')', ','],
  ...['-help', '--help', '-version', '--version', '-warn', '-nowarn', '-H', '-L', '-P'],
]);

/** find: start points (paths), then an expression whose `-exec` and `-ok` run commands and `-delete` deletes. */
function readFind(layer: readonly string[], expandedOf: ExpandedOf): ToolReading {
  const out = emptyReading();
  let i = 1;
  for (; i < layer.length && /^-([HLP]|O[0-9]*)$/.test(layer[i]!); i++);
  for (; i < layer.length; i++) {
    const word = layer[i]!;
    if (/^[-(!),]/.test(word) && word !== '-') break;
    const x = expandedOf(word);
    if (x?.dash || x?.many) {
      out.unreadable.push(`${x.written} could be a find primary that runs a command (-exec)`);
      return out;
    }
    out.args.push({ at: i, skip: 0, role: 'path' });
  }
  for (; i < layer.length; i++) {
    const word = layer[i]!;
    const x = expandedOf(word);
    if (x) {
      out.unreadable.push(`${x.written} could be a find primary that runs a command (-exec)`);
      return out;
    }
    if (/^-(exec|execdir|ok|okdir)$/.test(word)) {
      const start = i + 1;
      let end = start;
      while (end < layer.length && layer[end] !== ';' && !(layer[end] === '+' && layer[end - 1] === '{}')) end++;
      if (end >= layer.length || end === start) {
        out.hidden.push(`find ${word} without its command and ;`);
        return out;
      }
      out.spawned.push({ kind: 'argv', argv: layer.slice(start, end), via: `find ${word}`, scope: 'all' });
      i = end;
    } else if (word === '-delete') {
      out.spawned.push({ kind: 'argv', argv: ['rm'], via: 'find -delete', scope: 'all' });
    } else if (/^-newer[acmBt][acmBt]$/.test(word) || FIND_VALUED[word] !== undefined) {
      // -newerXY compares with a file, or with a time when Y is t; -fprintf takes a file and a format.
      const newer = FIND_VALUED[word] === undefined;
      const roles: Role[] =
        word === '-fprintf' ? ['path', 'data'] : [newer ? (word.endsWith('t') ? 'data' : 'path') : FIND_VALUED[word]!];
      for (const role of roles) {
        if (i + 1 >= layer.length) break;
        // A value sh expands to one field is only a value (`-name "$P"`); more could be primaries.
        const value = expandedOf(layer[i + 1]!);
        if (value?.many) {
          out.unreadable.push(`${value.written} could be find primaries that run a command (-exec)`);
          return out;
        }
        out.args.push({ at: ++i, skip: 0, role });
      }
    } else if (!FIND_FLAGS.has(word)) {
      out.certain = false;
    }
  }
  return out;
}

/** `git -c KEY=VALUE` (or --config-env KEY=ENVVAR): harmless, a command line to judge, or what cannot be judged. */
function judgeGitConfig(out: ToolReading, setting: string, fromEnv: boolean): void {
  const eq = setting.indexOf('=');
  const key = (eq < 0 ? setting : setting.slice(0, eq)).toLowerCase();
  const value = eq < 0 ? 'true' : setting.slice(eq + 1);
  if (GIT_SAFE_CONFIG.some((re) => re.test(key))) return;
  const boolean = /^(true|false|yes|no|on|off|1|0)$/i.test(value);
  if (GIT_PROGRAM_CONFIG.some((re) => re.test(key)) && !fromEnv) {
    if (!(key.startsWith('pager.') && boolean)) out.spawned.push(spawnOf('command', value, `git -c ${key}`));
    return;
  }
  out.hidden.push(`git -c ${key}, which may make git run a program or read a file the rules do not see`);
}

/** Options of git subcommands that run a command line: the subcommands they belong to. */
const GIT_RUNS: readonly { option: string; short?: string; subcommands: readonly string[]; role: Role }[] = [
  {
    option: '--upload-pack',
    short: '-u',
    subcommands: ['fetch', 'pull', 'clone', 'ls-remote', 'archive'],
    role: 'shell',
  },
  { option: '--receive-pack', subcommands: ['push', 'send-pack'], role: 'shell' },
  { option: '--exec', subcommands: ['push', 'send-pack', 'archive', 'rebase'], role: 'shell' },
  { option: '--open-files-in-pager', short: '-O', subcommands: ['grep'], role: 'command' },
  { option: '--extcmd', short: '-x', subcommands: ['difftool'], role: 'shell' },
  { option: '--exec', short: '-x', subcommands: ['rebase'], role: 'shell' },
  { option: '--tool', short: '-t', subcommands: ['difftool', 'mergetool'], role: 'hidden' },
];

/** The command lines a git subcommand's own options run, in any spelling parse-options accepts. */
function gitRuns(out: ToolReading, sub: string, layer: readonly string[], from: number): void {
  for (let i = from; i < layer.length; i++) {
    const word = layer[i]!;
    if (word === '--') break;
    // git passes an ext:: URL's command to sh when protocol.ext.allow lets it (a -c key the rules refuse).
    if (word.startsWith('ext::')) out.spawned.push({ kind: 'script', script: word.slice(5), via: 'git ext::' });
    for (const run of GIT_RUNS) {
      if (!run.subcommands.includes(sub)) continue;
      const eq = word.indexOf('=');
      const given = eq < 0 ? word : word.slice(0, eq);
      const via = `git ${sub} ${run.option}`;
      const long = given.length > 4 && run.option.startsWith(given);
      const short = run.short !== undefined && word.startsWith(run.short) && !word.startsWith('--');
      if (!long && !short) continue;
      // grep -O and --open-files-in-pager take their pager attached, or use the default one.
      const optional = sub === 'grep';
      const value = long
        ? eq < 0
          ? optional
            ? 'less'
            : layer[++i]
          : word.slice(eq + 1)
        : word.length > 2
          ? word.slice(2)
          : optional
            ? 'less'
            : layer[++i];
      if (value === undefined) continue;
      if (run.role === 'hidden') out.hidden.push(`${via}, which runs a tool configured outside the command`);
      else out.spawned.push(spawnOf(run.role, value, via));
    }
  }
  if (sub === 'bisect' && layer[from] === 'run' && from + 1 < layer.length)
    out.spawned.push({ kind: 'argv', argv: layer.slice(from + 1), via: 'git bisect run', scope: 'all' });
  if (sub === 'submodule' && layer[from] === 'foreach')
    out.hidden.push('git submodule foreach, which runs a command in each submodule');
  if (sub === 'filter-branch') out.hidden.push('git filter-branch, whose filters are shell commands');
}

/** git: global options (`-c` judged by key), then the subcommand's own grammar and the commands its options run. */
function readGit(layer: readonly string[], expandedOf: ExpandedOf): ToolReading {
  let out = emptyReading();
  let i = 1;
  for (; i < layer.length; i++) {
    const word = layer[i]!;
    if (!word.startsWith('-') || expandedOf(word)) break;
    const eq = word.indexOf('=');
    const given = eq < 0 ? word : word.slice(0, eq);
    if (given === '--exec-path' && eq >= 0) out.hidden.push("git --exec-path=DIR, which runs git's programs from DIR");
    else if (word === '-c' || word === '--config-env') judgeGitConfig(out, layer[++i] ?? '', word !== '-c');
    else if (word.startsWith('-c')) judgeGitConfig(out, word.slice(2), false);
    else if (given === '--config-env') judgeGitConfig(out, word.slice(eq + 1), true);
    else if (GIT_GLOBAL_VALUED[given] !== undefined) {
      const at = eq < 0 ? ++i : i;
      out.args.push({ at, skip: eq < 0 ? 0 : eq + 1, role: GIT_GLOBAL_VALUED[given] });
    } else if (!GIT_GLOBAL_FLAGS.includes(given)) out.certain = false;
  }
  if (i >= layer.length) return out;
  const sub = layer[i]!;
  const grammar = GIT_SUBCOMMANDS[sub];
  const own = grammar ? readGrammar(layer, grammar, expandedOf, i + 1) : undefined;
  if (own)
    out = {
      ...own,
      args: [...out.args, ...own.args],
      hidden: [...out.hidden, ...own.hidden],
      spawned: [...out.spawned, ...own.spawned],
      certain: out.certain && own.certain,
    };
  else out.certain = false;
  gitRuns(out, sub, layer, i + 1);
  return out;
}

const NPX_VALUED: Readonly<Record<string, Role>> = {
  '-p': 'data',
  '--package': 'data',
  '-w': 'data',
  '--workspace': 'data',
  '-c': 'shell',
  '--call': 'shell',
  '--shell': 'program',
  '--script-shell': 'program',
};
const NPX_FLAGS = ['-y', '--yes', '--no', '-q', '--quiet', '--ignore-existing', '--prefer-offline', '--prefer-online'];

/** `npx [OPTIONS] CMD ARGS` (and `npm exec`): CMD is a package's program, judged against the deny list. */
function readNpx(layer: readonly string[], from: number, via: string, expandedOf: ExpandedOf): ToolReading {
  const out = emptyReading();
  let called = false;
  for (let i = from; i < layer.length; i++) {
    const word = layer[i]!;
    const eq = word.indexOf('=');
    const given = eq < 0 ? word : word.slice(0, eq);
    if (word === '--' || !word.startsWith('-')) {
      const start = word === '--' ? i + 1 : i;
      if (!called && start < layer.length)
        out.spawned.push({ kind: 'argv', argv: layer.slice(start), via, scope: 'deny' });
      break;
    }
    const role = NPX_VALUED[given];
    if (role === undefined) {
      if (!NPX_FLAGS.includes(word)) out.certain = false;
      continue;
    }
    called ||= role === 'shell';
    const arg = eq >= 0 ? { at: i, skip: eq + 1, role } : { at: ++i, skip: 0, role };
    addValue(out, layer, arg, `${via} ${given}`, expandedOf);
  }
  return out;
}

/** npm: `exec`/`x` run a package's program; `--script-shell` anywhere sets the shell scripts run with. */
function readNpm(layer: readonly string[], expandedOf: ExpandedOf): ToolReading {
  let out: ToolReading = { ...emptyReading(), certain: false };
  for (let i = 1; i < layer.length; i++) {
    const word = layer[i]!;
    const eq = word.indexOf('=');
    const given = eq < 0 ? word : word.slice(0, eq);
    if (given === '--script-shell' || given === '--shell') {
      const arg: Argument = eq >= 0 ? { at: i, skip: eq + 1, role: 'program' } : { at: ++i, skip: 0, role: 'program' };
      addValue(out, layer, arg, `npm ${given}`, expandedOf);
    }
  }
  const sub = layer.findIndex((w, i) => i > 0 && !w.startsWith('-'));
  if (sub > 0 && (layer[sub] === 'exec' || layer[sub] === 'x')) {
    const npx = readNpx(layer, sub + 1, `npm ${layer[sub]}`, expandedOf);
    out = { ...npx, spawned: [...out.spawned, ...npx.spawned], certain: false };
  }
  return out;
}

/** tar's options that run programs, long (abbreviations accepted) and short (`-I PROG`, `-F SCRIPT`). */
const TAR_RUNS: readonly { option: string; short?: string; role: Role }[] = [
  { option: '--to-command', role: 'shell' },
  { option: '--use-compress-program', short: 'I', role: 'command' },
  { option: '--checkpoint-action', role: 'hidden' },
  { option: '--info-script', short: 'F', role: 'hidden' },
  { option: '--new-volume-script', role: 'hidden' },
  { option: '--rsh-command', role: 'program' },
];

/** tar: every word may be a path (old-style bundles make positions uncertain); its program options are judged. */
function readTar(layer: readonly string[], expandedOf: ExpandedOf): ToolReading {
  const out: ToolReading = { ...emptyReading(), certain: false };
  for (let i = 1; i < layer.length; i++) {
    const word = layer[i]!;
    if (word === '--') break;
    const eq = word.indexOf('=');
    const given = eq < 0 ? word : word.slice(0, eq);
    const cluster = word.startsWith('--')
      ? ''
      : i === 1 && !word.startsWith('-')
        ? word
        : word.startsWith('-')
          ? word.slice(1)
          : '';
    for (const run of TAR_RUNS) {
      const long = given.startsWith('--') && given.length > 4 && run.option.startsWith(given);
      const at = run.short ? cluster.indexOf(run.short) : -1;
      if (!long && at < 0) continue;
      const via = `tar ${long ? run.option : `-${run.short}`}`;
      if (run.role === 'hidden' || (!long && i === 1 && !word.startsWith('-'))) {
        out.hidden.push(`${via}, which runs a program the rules cannot judge`);
        continue;
      }
      const arg: Argument =
        long && eq >= 0
          ? { at: i, skip: eq + 1, role: run.role }
          : !long && at + 1 < cluster.length
            ? { at: i, skip: at + 2, role: run.role }
            : { at: ++i, skip: 0, role: run.role };
      addValue(out, layer, arg, via, expandedOf);
    }
  }
  return out;
}

/** Editors and pagers whose command-line commands (`vim -c ':!sh'`, `less +!sh`) can run a shell. */
const EX_COMMANDS = new Set(['vim', 'vi', 'nvim', 'view', 'vimdiff', 'rvim', 'ex', 'less', 'more', 'most']);
/** Programs that run the commands they read on stdin, a shell escape among them. */
const COMMAND_READERS = new Set(['ed', 'red', 'gdb', 'lldb']);

function readInteractive(layer: readonly string[], name: string, expandedOf: ExpandedOf): ToolReading {
  const out: ToolReading = { ...emptyReading(), certain: false };
  if (COMMAND_READERS.has(name))
    out.hidden.push(`${name}, which runs the commands it reads (a shell escape among them)`);
  for (let i = 1; i < layer.length; i++) {
    const word = layer[i]!;
    if (name === 'man' && /^(-P|--pager|-H|--html)/.test(word)) {
      const eq = word.indexOf('=');
      const arg: Argument =
        word.startsWith('--') && eq >= 0
          ? { at: i, skip: eq + 1, role: 'command' }
          : word.length > 2 && !word.startsWith('--')
            ? { at: i, skip: 2, role: 'command' }
            : { at: ++i, skip: 0, role: 'command' };
      addValue(out, layer, arg, 'man --pager', expandedOf);
    } else if (EX_COMMANDS.has(name) && (/^[+]/.test(word) || /^(-c|--cmd|-S|-s)$/.test(word))) {
      out.hidden.push(`${name} ${word.slice(0, 2)}, whose commands can run a shell`);
    }
  }
  return out;
}

/** Variables make must not take from its command line: they decide how recipes run, or carry options (--eval). */
const MAKE_VARIABLES = new Set(['SHELL', '.SHELLFLAGS', 'MAKEFLAGS', 'MFLAGS', 'GNUMAKEFLAGS', 'MAKESHELL', 'MAKE']);

/** make: `-f -` reads a makefile from stdin; `NAME=value` operands reach every recipe. */
function readMake(layer: readonly string[], expandedOf: ExpandedOf): ToolReading {
  const out = readGrammar(layer, GRAMMARS.make!, expandedOf);
  for (const arg of out.args) {
    const word = layer[arg.at]!.slice(arg.skip);
    if (arg.role === 'path' && (word === '-' || word === '/dev/stdin'))
      out.hidden.push('make -f -, which reads a makefile from stdin');
    const assignment = /^([A-Za-z_.][A-Za-z0-9_.]*)[:+?!]?=(.*)$/s.exec(word);
    if (arg.role !== 'data' || arg.skip !== 0 || !assignment) continue;
    const [, name, value] = assignment;
    if (MAKE_VARIABLES.has(name!) || /[;&|<>()$`'"\\\n]/.test(value!))
      out.hidden.push(`make ${name}=..., which changes what make's recipes run`);
    else if (value!.trim() !== '')
      out.spawned.push({ kind: 'argv', argv: value!.trim().split(/\s+/), via: `make ${name}=`, scope: 'deny' });
  }
  return out;
}

/** sed and awk: the program given on the command line is read too (tool-programs.ts). */
function readProgramTool(
  layer: readonly string[],
  grammar: Grammar,
  awk: boolean,
  expandedOf: ExpandedOf,
): ToolReading {
  const out = readGrammar(layer, grammar, expandedOf);
  const programOptions = awk ? ['-e', '--source'] : ['-e', '--expression'];
  const programs: string[] = [];
  for (const arg of out.args) {
    const word = layer[arg.at]!;
    // sed -i's backup suffix is a path when it holds a / (`-i'bak/*'` writes bak/FILE).
    if (arg.option === '-i' || arg.option === '--in-place') {
      if (word.slice(arg.skip).includes('/')) out.named.push(word.slice(arg.skip).replace(/\*/g, 'x'));
      continue;
    }
    if (!(arg.option !== undefined ? programOptions.includes(arg.option) : arg.operand === 0)) continue;
    const x = expandedOf(word);
    if (x) out.unreadable.push(`the ${awk ? 'awk program' : 'sed script'} ${x.written} is unknown until sh expands it`);
    else programs.push(word.slice(arg.skip));
  }
  const findings = awk ? judgeAwkProgram(programs.join('\n')) : judgeSedScript(programs.join('\n'));
  out.hidden.push(...findings.hidden);
  out.named.push(...findings.paths);
  out.unknownPaths.push(...findings.unknownPaths);
  return out;
}

/** How the last layer of a command reads its arguments; undefined for a tool sbx has no grammar for. */
export function readTool(layer: readonly string[], expandedOf: ExpandedOf): ToolReading | undefined {
  const name = posix.basename(layer[0]!);
  if (name === 'find') return readFind(layer, expandedOf);
  if (name === 'git') return readGit(layer, expandedOf);
  if (name === 'npx') return readNpx(layer, 1, 'npx', expandedOf);
  if (name === 'npm') return readNpm(layer, expandedOf);
  if (name === 'tar') return readTar(layer, expandedOf);
  if (name === 'make' || name === 'gmake') return readMake(layer, expandedOf);
  if (EX_COMMANDS.has(name) || COMMAND_READERS.has(name) || name === 'man')
    return readInteractive(layer, name, expandedOf);
  if (name === 'sed') return readProgramTool(layer, GRAMMARS.sed!, false, expandedOf);
  if (['awk', 'gawk', 'mawk', 'nawk'].includes(name)) return readProgramTool(layer, GRAMMARS.awk!, true, expandedOf);
  const grammar = GRAMMARS[name];
  return grammar ? readGrammar(layer, grammar, expandedOf) : undefined;
}
