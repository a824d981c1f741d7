/**
 * The folders of test/ and the rule of each (CONTRIBUTING.md "Test folders"): a suite lives in
 * the folder of what it proves. test/run.ts runs the `shareNothing` folders two files at a
 * time and every other file alone; test/docs/test-layout.test.ts holds the tree to this list.
 */

export interface TestFolder {
  /** what a suite must prove to live here */
  rule: string
  /**
   * Its suites open no port, start no process, change no environment variable, and write only
   * to fresh temporary directories and fresh databases: two of them can run side by side.
   */
  shareNothing: boolean
}

export const TEST_FOLDERS: Readonly<Record<string, TestFolder>> = {
  unit: { rule: 'one module in process, no database', shareNothing: true },
  property: { rule: 'generated cases against a model or an invariant', shareNothing: true },
  docs: { rule: 'the README and docs/ held to the code', shareNothing: true },
  contract: { rule: 'the Store and API contract on every backend of backends.ts', shareNothing: false },
  sqlite: { rule: 'what only the SQLite backend has', shareNothing: false },
  postgres: { rule: 'what only the PostgreSQL backend has', shareNothing: false },
  replica: { rule: 'PostgreSQL read through a streaming replica', shareNothing: false },
  http: { rule: 'API behaviour a client sees over HTTP', shareNothing: false },
  ops: { rule: 'operations: configuration, logs, metrics, limits, shutdown, workers', shareNothing: false },
  cli: { rule: 'the command line, run as a child process', shareNothing: false },
  client: { rule: 'the client package', shareNothing: false },
  browser: { rule: 'pages in headless Chromium', shareNothing: false },
  faults: { rule: 'failures injected into a running service', shareNothing: false },
  fuzz: { rule: 'hostile input: never a 5xx or a leak', shareNothing: false },
  deep: { rule: 'long runs, only by npm run test:deep', shareNothing: false },
}

/** Folders of test/ that hold no suite: the code suites share, and the tools they run. */
export const SUPPORT_FOLDERS: readonly string[] = ['helpers', 'tools']
