// Shell quoting for `sbx explain`: display only, but a user pastes it into a shell, so every
// argument must come back as exactly one word with exactly its bytes.
import { describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../../../src/cli/quote.js';

describe('shellQuote', () => {
  it('leaves safe words alone', () => {
    for (const word of ['bwrap', '/usr/bin/bwrap', '--ro-bind', 'a=b', 'user@host:/x', '1,2', '50%', 'a+b', '_x.y-z']) {
      expect(shellQuote(word), word).toBe(word);
    }
  });

  it('quotes the empty string', () => {
    expect(shellQuote('')).toBe("''");
  });

  it('single-quotes spaces and shell metacharacters', () => {
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote('$HOME')).toBe("'$HOME'");
    expect(shellQuote('*.ts')).toBe("'*.ts'");
    expect(shellQuote('~')).toBe("'~'");
    expect(shellQuote('a;rm -rf /')).toBe("'a;rm -rf /'");
    expect(shellQuote('`id`')).toBe("'`id`'");
    expect(shellQuote('"x"')).toBe(`'"x"'`);
    expect(shellQuote('a\\b')).toBe("'a\\b'");
  });

  it('closes, escapes and reopens for a single quote', () => {
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote("'")).toBe("''\\'''");
  });

  it("uses $'...' with escapes for control characters", () => {
    expect(shellQuote('a\nb')).toBe("$'a\\nb'");
    expect(shellQuote('\t')).toBe("$'\\t'");
    expect(shellQuote('\r\n')).toBe("$'\\r\\n'");
    expect(shellQuote('\x1b[31mred')).toBe("$'\\x1b[31mred'");
    expect(shellQuote('\x7f')).toBe("$'\\x7f'");
    expect(shellQuote('\x00')).toBe("$'\\x00'");
  });

  it("escapes quotes and backslashes inside $'...'", () => {
    expect(shellQuote("it's\n")).toBe("$'it\\'s\\n'");
    expect(shellQuote('a\\b\n')).toBe("$'a\\\\b\\n'");
  });

  it('never leaves a raw control character in the output', () => {
    for (let c = 0; c < 32; c++)
      expect(shellQuote(`x${String.fromCharCode(c)}y`), `char ${c}`).not.toMatch(/[\x00-\x1f\x7f]/);
    expect(shellQuote('x\x7fy')).not.toMatch(/[\x00-\x1f\x7f]/);
  });
});

describe('shellJoin', () => {
  it('quotes each argument and joins with single spaces', () => {
    expect(shellJoin(['bwrap', '--setenv', 'PS1', '$ ', '--', 'sh', '-c', "echo 'hi'\n", ''])).toBe(
      "bwrap --setenv PS1 '$ ' -- sh -c $'echo \\'hi\\'\\n' ''",
    );
    expect(shellJoin([])).toBe('');
  });
});
