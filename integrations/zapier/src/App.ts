/**
 * The Zapier app definition of Streaks, for one authentication: the seven REST-hook triggers, the
 * hidden program list behind the dropdowns, Record Member Action and Find Member Streak.
 */
import { createRequire } from "node:module"
import zapier from "zapier-platform-core"
import * as ApiKeyAuth from "./ApiKeyAuth.js"
import * as FindMemberStreak from "./FindMemberStreak.js"
import * as OAuth from "./OAuth.js"
import * as Programs from "./Programs.js"
import * as RecordMemberAction from "./RecordMemberAction.js"
import * as Server from "./Server.js"
import * as Triggers from "./Triggers.js"

// The same relative path from src/ and from the compiled dist/.
const { version } = createRequire(import.meta.url)("../package.json") as { version: string }

export const make = (authentication: typeof ApiKeyAuth.authentication | typeof OAuth.authentication) => ({
  version,
  platformVersion: zapier.version,
  authentication,
  beforeRequest: [Server.addCredential],
  afterResponse: [Server.surfaceErrors],
  triggers: { [Programs.trigger.key]: Programs.trigger, ...Triggers.triggers },
  creates: { [RecordMemberAction.create.key]: RecordMemberAction.create },
  searches: { [FindMemberStreak.search.key]: FindMemberStreak.search }
})

/** The app with API key authentication: what `zapier push` sends by default (`dist/index.js`). */
export const withApiKey = make(ApiKeyAuth.authentication)

/** The app with OAuth 2 + PKCE authentication (`dist/indexOAuth.js`). */
export const withOAuth = make(OAuth.authentication)
