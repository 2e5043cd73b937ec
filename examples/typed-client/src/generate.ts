/**
 * Writes `streaks-api.d.ts` from a running server's `/openapi.json` with openapi-typescript: what
 * `openapi-typescript <url>/openapi.json -o src/streaks-api.d.ts` writes, headed by a line that keeps
 * the repository's linter off generated code.
 *
 *   STREAKS_URL=http://127.0.0.1:8787 npx -y pnpm@10.34.8 --filter @streaks-examples/typed-client generate
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript"

/** Where the generated types live. */
export const typesFile = fileURLToPath(new URL("streaks-api.d.ts", import.meta.url))

/** The text of `streaks-api.d.ts` for the server at `baseUrl`. */
export const generate = async (baseUrl: string): Promise<string> =>
  `/* eslint-disable */\n${COMMENT_HEADER}${astToString(await openapiTS(new URL(`${baseUrl}/openapi.json`)))}`

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(typesFile, await generate(process.env.STREAKS_URL ?? "http://127.0.0.1:8787"))
  console.log(`wrote ${typesFile}`)
}
