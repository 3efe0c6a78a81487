// The one table of git config keys that make a later host git run a program, read other config or
// send its traffic elsewhere (config.worktree, which extensions.worktreeConfig adds, is read beside
// config by the walker, so the extension itself is not one). Pure. Taken from git-config(1) (`git help config`, git 2.39–2.47):
// each row names the section of that page. A key is compared by git's rules: section and key names
// case-insensitively, a subsection exactly. What a config file says through these keys is its
// "program entries"; the auditor (changes.ts) acts when a run adds one.
import { parseGitConfig } from './git-config.js';

/** `none`: `section.key`; `any`: `section.<sub>.key`; `optional`: either. */
type SubsectionRule = 'none' | 'any' | 'optional';

interface ProgramKey {
  section: string;
  sub: SubsectionRule;
  /** The key's name (lower case), or `*` for every key of the section. */
  name: string;
  /** Only values that pass run something (an alias runs a shell only when it starts with `!`). */
  when?: (value: string | undefined) => boolean;
}

const shellAlias = (value: string | undefined) => value?.trimStart().startsWith('!') === true;

/** git-config(1), per section. Keys git reads only from protected (system, global, command-line) config are kept too: a global config may include a workspace file. */
export const PROGRAM_KEYS: readonly ProgramKey[] = [
  // core.*: "core.fsmonitor: ... the command is run", sshCommand, gitProxy ("proxy command to execute"),
  // pager, editor, askPass, hooksPath (where hooks are looked up), alternateRefsCommand. Not
  // core.worktree: it moves the working tree and runs nothing (filter drivers still come from config),
  // and every submodule's git dir has one (`git submodule update --init` must keep working).
  ...['fsmonitor', 'sshcommand', 'gitproxy', 'pager', 'editor', 'askpass', 'hookspath', 'alternaterefscommand'].map(
    (name) => ({ section: 'core', sub: 'none' as const, name }),
  ),
  { section: 'sequence', sub: 'none', name: 'editor' },
  // diff.external, diff.<driver>.command, diff.<driver>.textconv; difftool.<tool>.cmd/.path; diff.tool chooses one.
  { section: 'diff', sub: 'none', name: 'external' },
  { section: 'diff', sub: 'any', name: 'command' },
  { section: 'diff', sub: 'any', name: 'textconv' },
  { section: 'diff', sub: 'none', name: 'tool' },
  { section: 'difftool', sub: 'any', name: 'cmd' },
  { section: 'difftool', sub: 'any', name: 'path' },
  // merge.<driver>.driver; mergetool.<tool>.cmd/.path; merge.tool chooses one.
  { section: 'merge', sub: 'any', name: 'driver' },
  { section: 'merge', sub: 'none', name: 'tool' },
  { section: 'mergetool', sub: 'any', name: 'cmd' },
  { section: 'mergetool', sub: 'any', name: 'path' },
  // filter.<driver>.clean/smudge/process: run on checkout, add and `git status` of a modified file.
  ...['clean', 'smudge', 'process'].map((name) => ({ section: 'filter', sub: 'any' as const, name })),
  // credential.helper and credential.<url>.helper.
  { section: 'credential', sub: 'optional', name: 'helper' },
  // alias.<name> = "!cmd" runs a shell.
  { section: 'alias', sub: 'none', name: '*', when: shellAlias },
  // gpg.program, gpg.<format>.program, gpg.ssh.defaultKeyCommand.
  { section: 'gpg', sub: 'optional', name: 'program' },
  { section: 'gpg', sub: 'any', name: 'defaultkeycommand' },
  // include.path, includeIf.<condition>.path: git reads another file as config.
  { section: 'include', sub: 'none', name: 'path' },
  { section: 'includeif', sub: 'any', name: 'path' },
  // uploadpack.packObjectsHook; remote.<name>.uploadpack/receivepack (run locally for a local or ssh
  // remote); remote.<name>.vcs (runs git-remote-<vcs>); protocol.<name>.allow (ext:: runs a command);
  // url.<base>.insteadOf/pushInsteadOf (can rewrite a remote to ext::).
  { section: 'uploadpack', sub: 'none', name: 'packobjectshook' },
  ...['uploadpack', 'receivepack', 'vcs'].map((name) => ({ section: 'remote', sub: 'any' as const, name })),
  { section: 'protocol', sub: 'optional', name: 'allow' },
  { section: 'url', sub: 'any', name: 'insteadof' },
  { section: 'url', sub: 'any', name: 'pushinsteadof' },
  // pager.<cmd> (a pager command per subcommand), interactive.diffFilter, submodule.<name>.update = "!cmd".
  { section: 'pager', sub: 'none', name: '*' },
  { section: 'interactive', sub: 'none', name: 'difffilter' },
  { section: 'submodule', sub: 'any', name: 'update', when: shellAlias },
  // web.browser, browser.<tool>.cmd/.path, man.<tool>.cmd/.path (git help -w / -m).
  { section: 'web', sub: 'none', name: 'browser' },
  ...['cmd', 'path'].flatMap((name) => ['browser', 'man'].map((section) => ({ section, sub: 'any' as const, name }))),
  // sendemail.sendmailCmd, toCmd, ccCmd, smtpServer (a program when absolute).
  ...['sendmailcmd', 'tocmd', 'cccmd', 'smtpserver'].map((name) => ({
    section: 'sendemail',
    sub: 'optional' as const,
    name,
  })),
  // http.proxy, http.<url>.proxy, core.sshCommand's kin ssh.variant: where traffic and credentials go.
  { section: 'http', sub: 'optional', name: 'proxy' },
  { section: 'ssh', sub: 'none', name: 'variant' },
  // trace2.*Target (normalTarget, perfTarget, eventTarget): git writes to the named path or socket.
  ...['normaltarget', 'perftarget', 'eventtarget'].map((name) => ({ section: 'trace2', sub: 'none' as const, name })),
];

function matches(rule: ProgramKey, section: string, sub: string | undefined, name: string, value?: string): boolean {
  if (rule.section !== section) return false;
  if (rule.sub === 'none' && sub !== undefined) return false;
  if (rule.sub === 'any' && sub === undefined) return false;
  if (rule.name !== '*' && rule.name !== name) return false;
  return rule.when ? rule.when(value) : true;
}

/** Whether `section[.sub].name = value` is a program key (section and name as written: compared case-insensitively). */
export function isProgramKey(section: string, sub: string | undefined, name: string, value?: string): boolean {
  const [s, n] = [section.toLowerCase(), name.toLowerCase()];
  return PROGRAM_KEYS.some((rule) => matches(rule, s, sub, n, value));
}

/** What one config file says through program keys. */
export interface ProgramEntries {
  /** `section[.sub].name=value` (value `(true)` for a bare key), in file order, one per occurrence. */
  entries: string[];
  /** Paths named by include.path / includeIf.*.path, as written. */
  includes: string[];
  /** core.hooksPath's last value, as written. */
  hooksPath?: string;
  /** Lines git's parser here could not read: git may read them otherwise, so a change among them counts. */
  unparsed: number;
}

export function programEntries(text: string): ProgramEntries {
  const out: ProgramEntries = { entries: [], includes: [], unparsed: 0 };
  let section: { name: string; sub: string | undefined } | undefined;
  for (const event of parseGitConfig(text)) {
    if (event.kind === 'unparsed') out.unparsed++;
    else if (event.kind === 'section') section = { name: event.name.toLowerCase(), sub: event.sub };
    else if (section) {
      const name = event.key.toLowerCase();
      if (!isProgramKey(section.name, section.sub, name, event.value)) continue;
      const label = [section.name, ...(section.sub !== undefined ? [section.sub] : []), name].join('.');
      out.entries.push(`${label}=${event.value ?? '(true)'}`);
      if (name === 'path' && (section.name === 'include' || section.name === 'includeif') && event.value)
        out.includes.push(event.value);
      if (section.name === 'core' && name === 'hookspath' && event.value !== undefined) out.hooksPath = event.value;
    }
  }
  return out;
}

/** The entries `after` has that `before` had not (a multiset difference: a repeated key counts). */
export function addedEntries(before: readonly string[], after: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const e of before) left.set(e, (left.get(e) ?? 0) + 1);
  return after.filter((e) => {
    const n = left.get(e) ?? 0;
    if (n === 0) return true;
    left.set(e, n - 1);
    return false;
  });
}
