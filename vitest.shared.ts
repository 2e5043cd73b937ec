// Settings every package's vitest config shares.
import type { UserConfig } from "vitest/config"

export const shared: UserConfig = {
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000
  }
}
