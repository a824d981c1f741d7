import { mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'

/**
 * Creates `dir` and its missing ancestors, one level at a time. Not
 * `mkdirSync(dir, { recursive: true })`: on Node 20 that loops forever when mkdir answers
 * ENOENT under a parent that exists (`/proc/forbidden`), and start-up would hang without a
 * word. Here each level is tried once, so the work is bounded by the path's depth and the
 * first refusal is thrown as it is (ENOENT, ENOTDIR, EACCES...).
 */
export function ensureDirectory(dir: string): void {
  const missing: string[] = []
  let current = resolve(dir)
  for (;;) {
    try {
      if (statSync(current).isDirectory()) break
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${current}'`), { code: 'ENOTDIR' })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
    missing.push(current)
    const parent = dirname(current)
    if (parent === current) break
    current = parent
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level)
    } catch (error) {
      // Another process may have made it in the meantime.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}

/** Whether `dir` names an existing directory (a link to one counts). */
export function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory()
  } catch {
    return false
  }
}
