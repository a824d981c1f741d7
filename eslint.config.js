// Lint rules: typescript-eslint's recommended set, type-aware, over every TypeScript file.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

const HTTP_PACKAGES = ['fastify', 'fastify-plugin']
const NO_HTTP = {
  group: ['**/http/*', '**/routes/*', '@fastify/*'],
  message: 'HTTP belongs to src/http and src/routes: return an outcome instead.',
}

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
    // The listing, the change feed and the Store return outcomes as values; only the routes
    // and src/http know paths, problems, headers and Fastify (docs/design.md).
    files: ['src/listing/**', 'src/feed/**', 'src/store/**', 'src/import/**'],
    rules: { 'no-restricted-imports': ['error', { paths: HTTP_PACKAGES, patterns: [NO_HTTP] }] },
  },
  // The listing and the feeds stand side by side on src/tokens and src/schemas: neither
  // imports the other (docs/design.md). The HTTP rule is repeated: a later block's options
  // replace an earlier one's.
  ...[
    ['listing', 'feed'],
    ['feed', 'listing'],
  ].map(([from, other]) => ({
    files: [`src/${from}/**`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: HTTP_PACKAGES,
          patterns: [
            NO_HTTP,
            {
              group: [`**/${other}/*`],
              message: `src/${from} does not import src/${other}: what both need lives in src/tokens or src/schemas.`,
            },
          ],
        },
      ],
    },
  })),
  {
    files: ['**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
)
