/**
 * @streaks/http: the Streaks HTTP API (`Api`, also for `HttpApiClient`), its handlers, auth,
 * CORS, rate limits, error mapping and the node:http server.
 */
export * as AccessLog from "./AccessLog.js"
export * as Api from "./Api.js"
export * as ApiSchemas from "./ApiSchemas.js"
export * as Auth from "./Auth.js"
export * as ClientAddress from "./ClientAddress.js"
export * as ConsolePage from "./ConsolePage.js"
export * as Cors from "./Cors.js"
export * as Doors from "./Doors.js"
export * as Http from "./Http.js"
export * as HttpConfig from "./HttpConfig.js"
export * as HttpErrors from "./HttpErrors.js"
export * as Jobs from "./Jobs.js"
export * as JsonLimits from "./JsonLimits.js"
export * as NodeServer from "./NodeServer.js"
export * as OAuthRoutes from "./OAuthRoutes.js"
export * as RateLimit from "./RateLimit.js"
export * as RateLimitHeaders from "./RateLimitHeaders.js"
export * as WidgetScript from "./WidgetScript.js"
