/**
 * Part of `pnpm build`: the published `streaks` command is `dist/bin.js` on plain `node`. Its
 * source, `src/bin.ts`, starts with a tsx shebang so that the workspace runs it from sources; the
 * compiled file gets node's instead.
 */
import { chmodSync, readFileSync, writeFileSync } from "node:fs"

const bin = new URL("../dist/bin.js", import.meta.url)
const text = readFileSync(bin, "utf8")
const body = text.startsWith("#!") ? text.slice(text.indexOf("\n") + 1) : text
writeFileSync(bin, `#!/usr/bin/env node\n${body}`)
chmodSync(bin, 0o755)
