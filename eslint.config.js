// Lint rules: typescript-eslint's recommended set, type-aware, over every TypeScript file.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/** Fastify and HTTP modules, kept out of the listing, the feed and the Store. */
const HTTP_PACKAGES = ['fastify', 'fastify-plugin']
const HTTP_MODULES = {
  group: ['**/http/*', '**/routes/*', '@fastify/*'],
  message: 'HTTP belongs to src/http and src/routes: return an outcome instead.',
}

/**
 * The feeds as outcomes (src/feed/) are served by their HTTP half alone (src/http/feeds/);
 * the routes, app.ts and the process wire them. No other module of src/http/, and nothing
 * below the feeds, imports them (docs/design.md).
 */
const FEED_MODULES = {
  group: ['**/feed/*'],
  message:
    'Only src/http/feeds/ serves src/feed/: what both need lives in src/tokens, src/schemas or src/api.',
}

/**
 * A migration is history (src/store/sqlite/migrations/index.ts): only each backend's runner
 * reads the steps, and live SQL has its own modules (change-log-sql.ts).
 */
const MIGRATION_STEPS = {
  group: ['**/migrations/*'],
  message: 'Only the migrations runner imports a migration; live SQL belongs in its own module.',
}

/**
 * The settings (src/config.ts, src/config-values.ts) and the backends stand apart: the
 * settings read values and know no store, a backend is handed its values by
 * src/store/open-store.ts and reads no setting. What both read about a database URL lives
 * below both, in src/database-url/ (docs/design.md).
 */
const STORE_MODULES = {
  group: ['**/store/*', '**/store/**'],
  message: 'The settings know no store: what both read (a database URL) lives in src/database-url/.',
}
const SETTINGS_MODULES = {
  group: ['**/config', '**/config.js', '**/config-*'],
  message:
    'A backend reads no setting: src/store/open-store.ts hands it its values; URL parsing lives in src/database-url/.',
}

/**
 * `no-restricted-imports` for modules kept out of HTTP, with their own extra patterns. A later
 * block's options replace an earlier one's for the same rule, so each block states them whole.
 */
const outsideHttp = (...patterns) => ({
  'no-restricted-imports': ['error', { paths: HTTP_PACKAGES, patterns: [HTTP_MODULES, ...patterns] }],
})

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'bench/results/', 'coverage/', 'packages/client/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // node:test's describe/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after'],
            },
          ],
        },
      ],
    },
  },
  {
    rules: { 'no-restricted-imports': ['error', { patterns: [MIGRATION_STEPS] }] },
  },
  {
    // The listing, the feeds, the Store, the import, the tokens and the schemas know no HTTP:
    // they return outcomes as values; only the routes and src/http know paths, problems,
    // headers and Fastify (docs/design.md). The listing and the feeds stand side by side on
    // src/tokens and src/schemas: neither imports the other.
    files: ['src/listing/**', 'src/store/**', 'src/import/**', 'src/tokens/**', 'src/schemas/**'],
    rules: outsideHttp(MIGRATION_STEPS, FEED_MODULES),
  },
  {
    // A backend is handed its values (open-store.ts) and reads no setting.
    files: ['src/store/sqlite/**', 'src/store/postgres/**'],
    rules: outsideHttp(MIGRATION_STEPS, FEED_MODULES, SETTINGS_MODULES),
  },
  {
    files: ['src/config.ts', 'src/config-*.ts'],
    rules: outsideHttp(MIGRATION_STEPS, FEED_MODULES, STORE_MODULES),
  },
  {
    files: ['src/feed/**'],
    rules: outsideHttp(MIGRATION_STEPS, {
      group: ['**/listing/*'],
      message: 'src/feed does not import src/listing: what both need lives in src/tokens or src/schemas.',
    }),
  },
  {
    // In src/http/, only the feeds' room serves the feeds.
    files: ['src/http/**'],
    ignores: ['src/http/feeds/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [MIGRATION_STEPS, FEED_MODULES] }] },
  },
  {
    // Each backend's runner, the one reader of its steps' list.
    files: ['src/store/sqlite/sqlite-migrations.ts', 'src/store/postgres/postgres-migrations.ts'],
    rules: outsideHttp(
      { ...MIGRATION_STEPS, group: [...MIGRATION_STEPS.group, '!./migrations/index.js'] },
      FEED_MODULES,
      SETTINGS_MODULES,
    ),
  },
  {
    // A step is history: its SQL is written out in it, never taken from code that can change.
    files: ['src/store/*/migrations/[0-9]*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ regex: '.*', allowTypeImports: true, message: 'A migration step imports no code.' }] },
      ],
    },
  },
  {
    // The list of steps imports the steps beside it, and nothing else.
    files: ['src/store/*/migrations/index.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!\\./[0-9]{3}-[a-z0-9-]+\\.js$)',
              allowTypeImports: true,
              message: 'The list of steps imports only the steps (./NNN-name.js).',
            },
          ],
        },
      ],
    },
  },
  {
    // test/ and bench/ never import each other; what both run lives in harness/ (CONTRIBUTING.md).
    files: ['test/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/bench/*'],
              message: 'Tests do not import bench/: move what both need to harness/.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['bench/**', 'harness/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/test/*'], message: 'bench/ and harness/ do not import test/.' },
            { group: ['../bench/*'], message: 'harness/ does not import bench/.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
)
