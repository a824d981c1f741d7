// Lint rules: typescript-eslint's recommended set, type-aware, over every TypeScript file.
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['fastify', 'fastify-plugin'],
          patterns: [
            {
              group: ['**/http/*', '**/routes/*', '@fastify/*'],
              message: 'HTTP belongs to src/http and src/routes: return an outcome instead.',
            },
          ],
        },
      ],
    },
  },
  {
    // test/ and bench/ never import each other; what both run lives in harness/ (CONTRIBUTING.md).
    // bench/code-points.ts is still imported by tests until its comparison has one home.
    files: ['test/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/bench/*', '!**/bench/code-points.js'],
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
