/** Vitest global setup: the console's tests read `dist/` as `pnpm build` makes it from the current sources. */
import { build } from "../../scripts/build.js"

export default async function setup(): Promise<void> {
  await build()
}
