import { defineProject, mergeConfig } from "vitest/config"
import { shared } from "../vitest.shared.js"

// Checks of the repository as a whole: the published packages, the wording of tracked files.
export default mergeConfig(shared, defineProject({ test: { name: "repo" } }))
