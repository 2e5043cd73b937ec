import { defineProject, mergeConfig } from "vitest/config"
import { shared } from "../vitest.shared.js"

// Checks of the repository as a whole: the published packages, the wording of tracked files.
// Packing, installing from the registry and type-checking take minutes on a busy machine.
export default mergeConfig(shared, defineProject({ test: { name: "repo", testTimeout: 300_000 } }))
