/**
 * The phases of an import, the same on both backends, as its trace shows them (each a span
 * when tracing is on): the file read into staging tables, the checks of what was staged, the
 * folders placed (parents before children, no cycle), and the rows written into the tables.
 */
export const IMPORT_PHASES = {
  stage: 'import: read and stage',
  check: 'import: check',
  place: 'import: place folders',
  write: 'import: write',
} as const
