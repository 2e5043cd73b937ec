import { defineProject, mergeConfig } from "vitest/config"
import { shared } from "../../vitest.shared.js"

export default mergeConfig(
  shared,
  defineProject({
    test: {
      name: "console",
      // The tests read what `pnpm build` makes of the current sources.
      globalSetup: ["test/support/buildOnce.ts"]
    }
  })
)
