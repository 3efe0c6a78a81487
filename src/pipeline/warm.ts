// What a long-lived library caller keeps between runs: results of the host walks (the root-only
// scan of system directories, the sensitive-file scan of the workspace) that cost milliseconds per
// run and rarely change. A result is kept only while every directory the walk read is watched
// (inotify through fs.watch) and none has reported a change: a created, deleted, renamed, modified
// or chmod-ed entry drops it. The CLI, one run per process, never uses it.
//
// Exactness: the kernel queues an inotify event when the change is made (fsnotify runs inside the
// system call), so once a sandboxed command has exited, every change it made is queued. `settle()`
// lets the event loop poll and deliver them before a cached result is trusted. A walk over more
// directories than WATCH_LIMIT is not kept (inotify watches are a per-user resource), nor is one
// whose watch cannot be set up: then the walk simply runs each time.
import { type FSWatcher, watch } from 'node:fs';

const WATCH_LIMIT = 2000;

interface Entry<T> {
  value: T;
  watchers: FSWatcher[];
}

/** What a walk found, and every directory it listed or read a file in; `keep: false` when that is not all it depends on. */
export interface Walked<T> {
  value: T;
  dirs: Iterable<string>;
  keep?: boolean;
}

export class WarmCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  /** The kept result for `key`, or a fresh walk (kept when it can be watched). */
  async get(key: string, walk: () => Walked<T> | Promise<Walked<T>>): Promise<T> {
    await settle();
    const kept = this.entries.get(key);
    if (kept) return kept.value;
    const { value, dirs, keep = true } = await walk();
    if (keep) this.keep(key, value, [...new Set(dirs)]);
    return value;
  }

  /** Drops every kept result and its watches. */
  clear(): void {
    for (const key of [...this.entries.keys()]) this.drop(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private keep(key: string, value: T, dirs: string[]): void {
    if (dirs.length > WATCH_LIMIT) return;
    const entry: Entry<T> = { value, watchers: [] };
    this.entries.set(key, entry);
    try {
      for (const dir of dirs) {
        const watcher = watch(dir, { persistent: false }, () => this.drop(key));
        watcher.on('error', () => this.drop(key));
        entry.watchers.push(watcher);
      }
    } catch {
      // A directory gone meanwhile, or no watch left: nothing is kept.
      this.drop(key);
    }
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    for (const watcher of entry.watchers) watcher.close();
  }
}

/**
 * Inotify events already queued are delivered to the watchers. Two turns of the event loop: when
 * run() is called from an I/O callback (the previous run's exit, say), the first setImmediate fires
 * in this very iteration, before any new poll for events; the second fires only after a poll.
 */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
}
