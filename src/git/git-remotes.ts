// Whether a git command that talks to a remote (push, fetch, pull, clone, ls-remote) talks only to
// repositories on this machine: a local path or a file:// URL is not the network, so the offline rule
// (command-rules.ts) lets it through. Pure: the runtime reads the repository's config and hands in
// what it says about remotes (gitRemoteFacts).
//
// Judged as git resolves it (transport.c, remote.c): the repository argument is a configured remote's
// name (its url/pushurl values), else a URL or path; url.<base>.insteadOf / pushInsteadOf rewrite by
// the longest matching prefix. Anything not certainly local is not local (the rule refuses, as
// before): a bare word that names no remote (it may be a remote group), a `<transport>::` helper,
// `host:path` (ssh), a command with -C/--git-dir/-c (another repository, or config sbx did not read).
import { parseGitConfig } from './git-config.js';

export interface GitRemoteFacts {
  /** Configured remotes by name: their fetch URLs and push URLs as written. */
  remotes: Record<string, { urls: string[]; pushUrls: string[] }>;
  /** url.<base>.insteadOf / pushInsteadOf: `prefix` is rewritten to `base`. */
  rewrites: { base: string; prefix: string; push: boolean }[];
}

/** What the config files (in git's order: global, then the repository's) say about remotes. */
export function gitRemoteFacts(texts: readonly string[]): GitRemoteFacts {
  // No prototype: a remote named `__proto__` or `constructor` is a remote like any other.
  const facts: GitRemoteFacts = { remotes: Object.create(null) as GitRemoteFacts['remotes'], rewrites: [] };
  for (const text of texts) {
    let section: { name: string; sub: string | undefined } | undefined;
    for (const event of parseGitConfig(text)) {
      if (event.kind === 'section') section = event;
      if (event.kind !== 'key' || section?.sub === undefined || event.value === undefined) continue;
      const key = event.key.toLowerCase();
      if (section.name === 'remote' && (key === 'url' || key === 'pushurl')) {
        if (!Object.hasOwn(facts.remotes, section.sub)) facts.remotes[section.sub] = { urls: [], pushUrls: [] };
        const remote = facts.remotes[section.sub]!;
        (key === 'url' ? remote.urls : remote.pushUrls).push(event.value);
      } else if (section.name === 'url' && (key === 'insteadof' || key === 'pushinsteadof')) {
        facts.rewrites.push({ base: section.sub, prefix: event.value, push: key === 'pushinsteadof' });
      }
    }
  }
  return facts;
}

/** A URL or path git opens without the network: file://, or a path (no `host:` before the first slash). */
export function isLocalGitUrl(url: string): boolean {
  if (/^file:\/\//i.test(url)) return true;
  if (url === '' || /^[A-Za-z][A-Za-z0-9+.-]*:(?::|\/\/)/.test(url)) return false;
  // git's url_is_local_not_ssh: a colon before any slash is scp-like `host:path`.
  const colon = url.indexOf(':');
  const slash = url.indexOf('/');
  return colon < 0 || (slash >= 0 && slash < colon);
}

/** The URL after git's insteadOf rewriting (pushInsteadOf first, for a push URL). */
function rewritten(url: string, push: boolean, facts: GitRemoteFacts): string {
  const best = (kind: boolean) =>
    facts.rewrites
      .filter((r) => r.push === kind && url.startsWith(r.prefix))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
  const rule = (push ? best(true) : undefined) ?? best(false);
  return rule ? rule.base + url.slice(rule.prefix.length) : url;
}

/** The fetching options `git fetch` and `git pull` share (pull passes them on to fetch). */
const FETCH_WITH_VALUE = [
  '--upload-pack',
  '-j',
  '--jobs',
  '--depth',
  '--deepen',
  '--shallow-since',
  '--shallow-exclude',
  '-o',
  '--server-option',
  '--negotiation-tip',
];

/** Options (per subcommand) whose value is the next argument: never taken for the repository. */
const WITH_VALUE: Record<string, readonly string[]> = {
  push: ['--repo', '-o', '--push-option', '--receive-pack', '--exec'],
  fetch: [...FETCH_WITH_VALUE, '--refmap', '--recurse-submodules-default'],
  pull: [...FETCH_WITH_VALUE, '-s', '--strategy', '-X', '--strategy-option'],
  'ls-remote': ['--upload-pack', '--sort', '-o', '--server-option'],
  clone: [
    '-o',
    '--origin',
    '-b',
    '--branch',
    '-u',
    '--upload-pack',
    '--reference',
    '--reference-if-able',
    '--separate-git-dir',
    '--depth',
    '--shallow-since',
    '--shallow-exclude',
    '-c',
    '--config',
    '--server-option',
    '-j',
    '--jobs',
    '--template',
    '--filter',
    '--bundle-uri',
  ],
};

/** Global options that point git at another repository or other config than the one whose facts sbx read. */
const OTHER_REPOSITORY = /^(?:-C|-c|--git-dir|--work-tree|--config-env|--namespace)(?:=|$)/;

/** The URLs one repository argument stands for; undefined when it cannot be told (a bare word naming no remote). */
function urlsOf(repository: string, push: boolean, facts: GitRemoteFacts): string[] | undefined {
  if (Object.hasOwn(facts.remotes, repository)) {
    const remote = facts.remotes[repository]!;
    const urls = push && remote.pushUrls.length > 0 ? remote.pushUrls : remote.urls;
    return urls.length > 0 ? urls : undefined;
  }
  if (!/[/:]/.test(repository) && !repository.startsWith('.')) return undefined;
  return [repository];
}

/**
 * Whether `git <globals> <sub> <rest>` (the layer, from `git`) reaches only local repositories.
 * Without a repository argument (or with --all) every configured remote must be local: which one
 * the current branch uses is not among the facts.
 */
export function gitReachesOnlyLocal(layer: readonly string[], sub: string, facts: GitRemoteFacts): boolean {
  const at = layer.indexOf(sub, 1);
  if (layer.slice(1, at).some((arg) => OTHER_REPOSITORY.test(arg))) return false;
  const withValue = WITH_VALUE[sub];
  if (withValue === undefined) return false;
  const push = sub === 'push';
  const positionals: string[] = [];
  let all = false;
  const rest = layer.slice(at + 1);
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--') {
      positionals.push(...rest.slice(i + 1));
      break;
    }
    if (arg === '--all' || arg === '--multiple') all = true;
    if (push && (arg === '--repo' || arg.startsWith('--repo='))) {
      positionals.unshift(arg === '--repo' ? (rest[++i] ?? '') : arg.slice('--repo='.length));
      continue;
    }
    if (arg.startsWith('-')) {
      if (withValue.includes(arg)) i++;
      continue;
    }
    positionals.push(arg);
  }
  const named = all && sub !== 'push' ? [] : positionals.slice(0, 1);
  const repositories = named.length > 0 ? named : Object.keys(facts.remotes);
  if (repositories.length === 0) return false;
  return repositories.every((repository) => {
    const urls = urlsOf(repository, push, facts);
    return urls?.every((url) => isLocalGitUrl(rewritten(url, push, facts))) ?? false;
  });
}
