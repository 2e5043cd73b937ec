/**
 * Entry point of the integration for `zapier push` and `zapier test`: the app with API key
 * authentication. `indexOAuth.ts` is the entry of the OAuth 2 variant.
 */
import * as App from "./App.js"

export * as ApiKeyAuth from "./ApiKeyAuth.js"
export * as App from "./App.js"
export * as OAuth from "./OAuth.js"
export * as Server from "./Server.js"
export * as Triggers from "./Triggers.js"

export default App.withApiKey
