/**
 * Data shown on a terminal (names in `folder tree`, values quoted in error messages) comes
 * from files and databases that anyone may have written: an ESC or CR in a name must not
 * recolour, clear or overwrite the operator's screen, and a 10 MB value must not become a
 * 10 MB "one-line" message. Control characters (C0, DEL, C1) are written as \u escapes, and
 * values are cut to a length with a marker saying how much was left out.
 */

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/** `text` with control characters escaped, cut after `max` characters (code points). */
export function printable(text: string, max = Infinity): string {
  const points = Array.from(text)
  const cut = points.length > max
  const shown = (cut ? points.slice(0, max).join('') : text).replace(CONTROL, escape)
  return cut ? `${shown}…(${points.length - max} more characters)` : shown
}

/** A data value quoted in a one-line message: escaped, at most 80 characters. */
export function quoted(value: string): string {
  return `'${printable(value, 80)}'`
}
