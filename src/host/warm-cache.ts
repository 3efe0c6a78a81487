// What a long-lived library caller keeps between runs: results of the host walks (the root-only
// scan of system directories, the sensitive-file scan of the workspace) that cost milliseconds per
// run and rarely change. A result is kept only while every directory the walk read is watched
// (inotify through fs.watch) and none has reported a change: a created, deleted, renamed, modified
// or chmod-ed entry drops it. The CLI, one run per process, never uses it.
//
// Exactness: the kernel queues an inotify event when the change is made (fsnotify runs inside the
// system call), so once a sandboxed command has exited, every change it made is queued. `settle()`
// lets the event loop poll and deliver them before a cached result is trusted. Each directory is
// watched before the walk reads it, and a walk during which a change was reported is not kept. A walk over more
// directories than WATCH_LIMIT is not kept (inotify watches are a per-user resource), nor is one
// whose watch cannot be set up: then the walk simply runs each time. A process that serves many
// workspaces (an agent framework, the warm server) would hold watches for every one it ever saw, and
// the user's other tools (an editor, a bundler's watch mode) draw on the same per-user limit: a result
// unused for IDLE_MS is dropped, and past WATCH_BUDGET watches the least recently used go first. The
// budget is far above one run's needs (a run's walks are each at most WATCH_LIMIT), so the results a
// run uses together do not push each other out.
import { type FSWatcher, watch } from 'node:fs';

const WATCH_LIMIT = 2000;
const WATCH_BUDGET = 16_000;
const IDLE_MS = 10 * 60_000;

interface Entry<T> {
  value: T | undefined;
  watchers: FSWatcher[];
  watched: Set<string>;
  /** A change was reported (during the walk, or since). */
  stale: boolean;
  /** The walk can be trusted to stay true while nothing is reported. */
  keep: boolean;
  /** When it was last returned (the clock's milliseconds). */
  usedMs: number;
}

/**
 * What a walk is given: `watch(dir)` before it lists a directory or reads a file in it (so a change
 * made while it reads is reported too), `unwatchable()` when it read something no watch covers.
 */
export interface WalkWatch {
  watch(dir: string): void;
  unwatchable(): void;
}

export class WarmCache<T> {
  /** In order of use, the least recent first. */
  private readonly entries = new Map<string, Entry<T>>();

  /**
   * `budget`: the most watches the kept results may hold together (a walk alone holds at most
   * WATCH_LIMIT); `idleMs`: how long a result unused is kept; `now`: the clock, for tests.
   */
  constructor(
    private readonly budget = WATCH_BUDGET,
    private readonly idleMs = IDLE_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The kept result for `key`, or a fresh walk (kept when every directory it read stays watched and unchanged). */
  async get(key: string, walk: (w: WalkWatch) => T): Promise<T> {
    await settle();
    this.dropIdle(key);
    const kept = this.entries.get(key);
    if (kept && !kept.stale) {
      this.entries.delete(key);
      this.entries.set(key, kept);
      kept.usedMs = this.now();
      return kept.value as T;
    }
    this.drop(key);
    const entry: Entry<T> = {
      value: undefined,
      watchers: [],
      watched: new Set(),
      stale: false,
      keep: true,
      usedMs: this.now(),
    };
    const value = walk({ watch: (dir) => this.watch(entry, dir), unwatchable: () => this.unwatchable(entry) });
    // Events of changes made during the walk are delivered now: such a walk is not kept.
    await settle();
    if (entry.keep && !entry.stale) {
      entry.value = value;
      this.entries.set(key, entry);
      this.trim(key);
    } else close(entry);
    return value;
  }

  /** Drops the results (but `key`'s) unused for idleMs. */
  private dropIdle(key: string): void {
    const before = this.now() - this.idleMs;
    for (const [k, entry] of this.entries) {
      if (entry.usedMs >= before) break;
      if (k !== key) this.drop(k);
    }
  }

  /** Drops the least recently used results (never `newest`) while their watches pass the budget. */
  private trim(newest: string): void {
    let held = 0;
    for (const entry of this.entries.values()) held += entry.watched.size;
    for (const [key, entry] of this.entries) {
      if (held <= this.budget || key === newest) break;
      held -= entry.watched.size;
      this.drop(key);
    }
  }

  /** Drops every kept result and its watches. */
  clear(): void {
    for (const key of [...this.entries.keys()]) this.drop(key);
  }

  /** Whether a result is kept for `key` (a walk that could not be watched is not). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  get size(): number {
    return this.entries.size;
  }

  private watch(entry: Entry<T>, dir: string): void {
    if (!entry.keep || entry.watched.has(dir)) return;
    if (entry.watched.size >= WATCH_LIMIT) {
      this.unwatchable(entry);
      return;
    }
    entry.watched.add(dir);
    try {
      // Any event marks the entry stale: the next get() walks afresh (and drops these watches).
      const watcher = watch(dir, { persistent: false }, () => {
        entry.stale = true;
      });
      watcher.on('error', () => {
        entry.stale = true;
      });
      entry.watchers.push(watcher);
    } catch {
      // Gone, unreadable, or no watch left: the walk is used once and not kept.
      this.unwatchable(entry);
    }
  }

  private unwatchable(entry: Entry<T>): void {
    entry.keep = false;
    close(entry);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    close(entry);
  }
}

function close(entry: Entry<unknown>): void {
  for (const watcher of entry.watchers.splice(0)) watcher.close();
}

/**
 * Inotify events already queued are delivered to the watchers. Two turns of the event loop: when
 * run() is called from an I/O callback (the previous run's exit, say), the first setImmediate fires
 * in this very iteration, before any new poll for events; the second fires only after a poll.
 */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
}
