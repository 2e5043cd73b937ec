// `pnpm lint`: ESLint with typescript-eslint, and dprint as the formatter through
// @effect/eslint-plugin, configured as the Effect monorepo configures it.
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import { fileURLToPath } from "node:url"
import tseslint from "typescript-eslint"
import { plugin as streaks } from "./scripts/eslint-pure-domain.mjs"

/**
 * Core's pure domain (docs/architecture.md#the-pure-domain-and-the-services): the modules that
 * decide without acting. Each may import only modules of this list and the packages below; the
 * `streaks/pure-domain` rule refuses anything else, and scripts/test/PureDomain.test.ts shows it
 * failing. A module joins the list when its imports allow it.
 */
export const pureDomain = [
  "packages/core/src/Calendar.ts",
  "packages/core/src/internal/epochDay.ts",
  "packages/core/src/internal/zoneDate.ts",
  "packages/core/src/Streak.ts",
  "packages/core/src/Policy.ts",
  "packages/core/src/Domain.ts",
  "packages/core/src/Ids.ts",
  "packages/core/src/Errors.ts",
  "packages/core/src/EventInput.ts",
  "packages/core/src/IpAddress.ts",
  "packages/core/src/Tokens.ts",
  "packages/core/src/Usage.ts",
  "packages/core/src/ProofStatistics.ts",
  "packages/core/src/ProofReport.ts",
  "packages/core/src/OutboundEvents.ts",
  "packages/core/src/Simulation.ts",
  "packages/core/src/IngestRecords.ts",
  "packages/core/src/IngestPlan.ts",
  "packages/core/src/DuePlan.ts",
  "packages/core/src/MergePlan.ts",
  "packages/core/src/ForgivenessPlan.ts",
  "packages/core/src/internal/streakProgress.ts"
]

/** The packages a pure module may import: data, dates and cryptography, no I/O. */
const purePackages = [
  "effect",
  "date-fns",
  "date-fns-tz",
  "jose",
  "node:buffer",
  "node:crypto",
  // distribution functions of ProofStatistics
  "@stdlib/stats-base-dists-normal-cdf",
  "@stdlib/stats-base-dists-normal-quantile",
  "@stdlib/math-base-special-gammainc",
  "@stdlib/stats-base-dists-t-quantile"
]

export default tseslint.config(
  {
    ignores: [
      "**/node_modules/",
      "**/dist/",
      "**/build/",
      "**/coverage/",
      "**/.tsbuildinfo/",
      "**/.streaks*/",
      "**/.tmp/",
      "**/*.md"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: {
        console: "readonly",
        process: "readonly",
        URL: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        fetch: "readonly"
      }
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": ["error", { disallowTypeAnnotations: false }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force",
          // The code keeps its imports and exports in the order written.
          "module.sortImportDeclarations": "maintain",
          "module.sortExportDeclarations": "maintain",
          "importDeclaration.sortNamedImports": "maintain",
          "exportDeclaration.sortNamedExports": "maintain"
        }
      }]
    }
  },
  {
    files: pureDomain,
    plugins: { streaks },
    rules: {
      "streaks/pure-domain": ["error", {
        pure: pureDomain.map((file) => fileURLToPath(new URL(file, import.meta.url))),
        packages: purePackages
      }]
    }
  }
)
