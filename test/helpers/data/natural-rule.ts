import fc from 'fast-check'

/**
 * The natural order's rule (docs/api.md "Natural order") restated directly, token by token,
 * independently of src/ordering/natural-key.ts: the tests hold the stored keys and the
 * service's answers to this comparator, so a mistake in the key cannot hide behind itself.
 */

type Token = { digits: string } | { char: number }

function tokens(name: string): Token[] {
  const folded = name
    .normalize('NFKD')
    .replace(/\p{Mn}/gu, '')
    .toLowerCase()
  const out: Token[] = []
  for (const match of folded.matchAll(/[0-9]+|[^0-9]/gsu)) {
    const text = match[0]
    out.push(/^[0-9]/.test(text) ? { digits: text } : { char: text.codePointAt(0) as number })
  }
  return out
}

const digitCount = (list: Token[]) => list.reduce((n, t) => n + ('digits' in t ? t.digits.length : 0), 0)

function compareToken(a: Token, b: Token): number {
  if ('digits' in a && 'digits' in b) {
    const x = BigInt(a.digits)
    const y = BigInt(b.digits)
    return x < y ? -1 : x > y ? 1 : 0
  }
  if ('char' in a && 'char' in b) return a.char - b.char
  // a number against a character c: the number first exactly when c is after '9'
  const c = 'char' in a ? a.char : (b as { char: number }).char
  const numberFirst = c > 0x39
  return 'digits' in a === numberFirst ? -1 : 1
}

/** Code point order of two strings (UTF-16 code units misorder astral characters). */
export function compareCodePointsDirect(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0) as number)
  const y = [...b].map((c) => c.codePointAt(0) as number)
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number)
  }
  return x.length - y.length
}

/** Rules 1 and 2 and the tie-breaks of rule 3 on names only (created_at and id are the caller's). */
export function compareNatural(a: string, b: string): number {
  const x = tokens(a)
  const y = tokens(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const order = compareToken(x[i] as Token, y[i] as Token)
    if (order !== 0) return order
  }
  return x.length - y.length || digitCount(x) - digitCount(y) || compareCodePointsDirect(a, b)
}

/** docs/api.md's example, in order. */
export const EXAMPLE_ORDER = [
  '-a',
  '2 test',
  '10 test',
  '_x',
  'a1',
  'a01',
  'a2',
  'A10',
  'Alpha',
  'alpha',
  'eclair',
  'Éclair',
  'Ecole',
  'École 2',
  'École 10',
  'ﬁle',
  'file 1',
  'file.txt',
  'file1',
  'Gamma',
  'ss1',
  'ss01',
  'ss2',
  'ss10',
  'ss100',
  'Zebra',
]

/**
 * Names the rule must order right, each group in order: numbers beyond 64 bits, zeros,
 * ligatures, combining marks, scripts without case, emoji, names equal after folding.
 */
export const CASE_TABLE: readonly (readonly string[])[] = [
  EXAMPLE_ORDER,
  [
    'n 18446744073709551615',
    'n 18446744073709551616',
    'n 018446744073709551616',
    'n 99999999999999999999999',
    'n 100000000000000000000000',
  ],
  ['0', '00', '000', '0a', '1', '01'],
  ['ﬀ', 'ffa', 'ﬃ', 'ﬁ', 'file', 'ﬂ'],
  ['cafe', 'café', 'cafe\u0301s', 'cafés', 'cafez'],
  ['שלום 9', 'שלום 10', 'بيت 2', 'بيت 10', '中文 3', '中文 20', '日本'],
  ['x 😀 2', 'x 😀 10', 'x 😁', 'x 🙂', 'x \u{10FFFD}'],
  ['ABC', 'Abc', 'aBc', 'abc', 'ÀBC', 'àbc'],
  ['1', '①', '10', '⑩', 'Ⅸ'],
  ['a 1', 'a-1', 'a.1', 'a1', 'a_1', 'aa'],
]

/**
 * Random folder names built from the pieces the rule treats apart: digits (leading zeros
 * and long runs), case, precomposed and combining accents, ligatures, compatibility digits,
 * the characters around '9', scripts without case, emoji. Trimmed, 1 to 40 characters.
 */
export function naturalNames(): fc.Arbitrary<string> {
  const piece = fc.oneof(
    fc.constantFrom('0', '00', '1', '01', '2', '9', '10', '007', '18446744073709551617'),
    fc.constantFrom('a', 'A', 'b', 'B', 'é', 'É', 'e\u0301', 'ss', 'ß', 'z', 'Z'),
    fc.constantFrom(' ', '-', '.', '/', ':', '_', '~', '(', ')'),
    fc.constantFrom('ﬁ', 'ﬀ', 'Ⅸ', '①', '⑩', '０', '１', '²', 'ǅ', 'İ', 'Σ'),
    fc.constantFrom('中', '文', 'ש', 'ب', '😀', '🙂', '\u{1F3FB}', '\uFFFD'),
  )
  return fc
    .array(piece, { minLength: 1, maxLength: 8 })
    .map((pieces) => pieces.join('').trim().slice(0, 40).trim())
    .filter((name) => name.length > 0 && name.normalize() !== '' && !/^\s|\s$/u.test(name))
}
