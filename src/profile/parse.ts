// Profile text → Profile, or every YAML and schema issue at once, each at file:line:col. Pure: the
// caller reads the file.
import { LineCounter, parseDocument, isMap, isPair, isScalar, isSeq, type Document, type Node } from 'yaml';
import { z } from 'zod';
import { SbxError } from '../errors.js';
import type { KeyPositions } from './positions.js';
import { ProfileSchema, type Profile } from './schema.js';
import { closest } from '../suggest.js';

/** Aliases a profile may expand: a profile needs few, a "billion laughs" document needs thousands. */
const MAX_ALIAS_COUNT = 50;

export interface PositionedIssue {
  line: number;
  col: number;
  /** Key path, e.g. `env.keep[2]`. Empty for document-level issues. */
  path: string;
  message: string;
}

export function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** Known keys of the (strict) object schema found at a key path, for "did you mean". */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType = ProfileSchema;
  for (const part of [...path, undefined]) {
    // Unwrap wrappers until an object (or give up).
    for (;;) {
      if (schema instanceof z.ZodOptional || schema instanceof z.ZodDefault || schema instanceof z.ZodNullable)
        schema = schema.unwrap() as z.ZodType;
      // z.preprocess (seccomp: strict, secrets: [NAME]): the keys are those of what it feeds.
      else if (schema instanceof z.ZodPipe) schema = schema.out as z.ZodType;
      else if (schema instanceof z.ZodUnion) {
        const obj = (schema.options as z.ZodType[]).find((o) => o instanceof z.ZodObject);
        if (!obj) return [];
        schema = obj;
      } else break;
    }
    if (part === undefined) return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
    if (schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.ZodType>)[String(part)] ?? z.never();
    else if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType;
    else if (schema instanceof z.ZodRecord) schema = schema.valueType as z.ZodType;
    else return [];
  }
  return [];
}

function position(lineCounter: LineCounter, offset: number): { line: number; col: number } {
  return lineCounter.linePos(offset);
}

/** The node (or, for a missing/unknown key, the closest enclosing node) at a key path. */
function nodeAt(doc: Document, path: readonly PropertyKey[]): Node | undefined {
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n) as unknown[], true);
    if (node && typeof node === 'object' && 'range' in (node as object)) return node as Node;
  }
  return doc.contents ?? undefined;
}

function keyNodeOffset(doc: Document, path: readonly PropertyKey[], key: string): number | undefined {
  const parent = path.length === 0 ? doc.contents : doc.getIn(path as unknown[], true);
  if (!isMap(parent)) return undefined;
  for (const item of parent.items) {
    if (isPair(item) && isScalar(item.key) && String(item.key.value) === key) return item.key.range?.[0];
  }
  return undefined;
}

function zodIssues(doc: Document, lineCounter: LineCounter, issues: z.core.$ZodIssue[]): PositionedIssue[] {
  const out: PositionedIssue[] = [];
  for (const issue of issues) {
    const path = issue.path as PropertyKey[];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const offset = keyNodeOffset(doc, path, key) ?? nodeAt(doc, path)?.range?.[0] ?? 0;
        const suggestion = closest(key, knownKeysAt(path));
        out.push({
          ...position(lineCounter, offset),
          path: formatKeyPath([...path, key]),
          message: `unknown key "${key}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}`,
        });
      }
      continue;
    }
    if (issue.code === 'invalid_key' && path.length > 0) {
      // A bad map key (env.set): point at the key itself, with the key schema's own message.
      const key = String(path[path.length - 1]);
      const offset = keyNodeOffset(doc, path.slice(0, -1), key) ?? nodeAt(doc, path)?.range?.[0] ?? 0;
      out.push({
        ...position(lineCounter, offset),
        path: formatKeyPath(path),
        message: issue.issues[0]?.message ?? issue.message,
      });
      continue;
    }
    const node = nodeAt(doc, path);
    out.push({ ...position(lineCounter, node?.range?.[0] ?? 0), path: formatKeyPath(path), message: issue.message });
  }
  return out;
}

/** Where each key (at the key) and each list item (at the item) was written: what a refusal names. */
function keyPositions(doc: Document, lineCounter: LineCounter, file: string): KeyPositions {
  const out: KeyPositions = {};
  const record = (path: PropertyKey[], offset: number | undefined) => {
    if (offset !== undefined) out[formatKeyPath(path)] = { file, ...position(lineCounter, offset) };
  };
  const walk = (node: unknown, path: PropertyKey[]): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isScalar(pair.key)) continue;
        const at = [...path, String(pair.key.value)];
        record(at, pair.key.range?.[0]);
        walk(pair.value, at);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        record([...path, i], (item as Node | null)?.range?.[0]);
        walk(item, [...path, i]);
      });
    }
  };
  walk(doc.contents, []);
  return out;
}

/**
 * Parse and validate one profile file's text, and say where each key was written (in `file`, as
 * load.ts found it). Throws PROFILE_PARSE / PROFILE_INVALID listing every issue.
 */
export function parseProfile(text: string, file: string): { profile: Profile; positions: KeyPositions } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    const issues = doc.errors.map((e) => ({
      ...position(lineCounter, e.pos[0]),
      path: '',
      message: e.message.split('\n')[0]!,
    }));
    throw issuesError('PROFILE_PARSE', file, issues);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (cause) {
    // yaml throws a plain ReferenceError when aliases expand past the cap ("billion laughs").
    throw new SbxError('PROFILE_PARSE', `${(cause as Error).message} (more than ${MAX_ALIAS_COUNT} alias expansions)`, {
      location: { file, line: 1, col: 1 },
      cause,
      hint: 'write the values out instead of nesting aliases (&anchor / *alias)',
    });
  }
  const result = ProfileSchema.safeParse(value);
  if (!result.success) throw issuesError('PROFILE_INVALID', file, zodIssues(doc, lineCounter, result.error.issues));
  return { profile: result.data, positions: keyPositions(doc, lineCounter, file) };
}

function issuesError(code: 'PROFILE_PARSE' | 'PROFILE_INVALID', file: string, issues: PositionedIssue[]): SbxError {
  const sorted = [...issues].sort((a, b) => a.line - b.line || a.col - b.col);
  const first = sorted[0]!;
  const describe = (i: PositionedIssue) => (i.path ? `${i.path}: ${i.message}` : i.message);
  return new SbxError(code, describe(first), {
    location: { file, line: first.line, col: first.col },
    details: sorted.slice(1).map((i) => `${file}:${i.line}:${i.col}: ${describe(i)}`),
    hint:
      code === 'PROFILE_PARSE'
        ? 'fix the YAML syntax at that position'
        : 'see `sbx profiles show default` for a valid profile, or the README "Profiles" section',
  });
}
