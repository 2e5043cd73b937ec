/**
 * The Streaks HTTP API as one `HttpApi`: every route of docs/api.md, with its
 * security and error codes. The server implements it; TypeScript users derive a typed client
 * from it (`HttpApiClient.make(Api, { baseUrl })`).
 */
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import type { Credentials } from "@streaks/core"
import { Errors, EventInput } from "@streaks/core"
import { Context, Schema } from "effect"
import * as S from "./ApiSchemas.js"
import * as HttpErrors from "./HttpErrors.js"
import { httpError } from "./HttpErrors.js"
import * as Doc from "./OpenApiDocument.js"

/** The authenticated customer credential of a `/v1/api` request. */
export class CurrentPrincipal extends Context.Tag("@streaks/http/CurrentPrincipal")<
  CurrentPrincipal,
  Credentials.Principal
>() {}

/** `X-Admin-Token` equal to the deployment's admin token (docs/api.md#admin-routes). */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("@streaks/http/AdminAuth", {
  failure: Schema.Union(
    httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"),
    httpError(Errors.RateLimited, 429, "RATE_LIMITED")
  ),
  security: { adminToken: HttpApiSecurity.apiKey({ in: "header", key: "X-Admin-Token" }) }
}) {}

/**
 * `Authorization: Bearer svc_api_…` or `svc_oat_…`, or a session cookie with its CSRF token on
 * writes (docs/api.md#customer-rest-api-v1api, docs/accounts.md#the-session-as-a-credential).
 */
export class CustomerAuth extends HttpApiMiddleware.Tag<CustomerAuth>()("@streaks/http/CustomerAuth", {
  failure: Schema.Union(
    httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"),
    httpError(Errors.Forbidden, 403, "FORBIDDEN"),
    httpError(Errors.RateLimited, 429, "RATE_LIMITED"),
    httpError(Errors.StorageError, 503, "SERVICE_UNAVAILABLE")
  ),
  provides: CurrentPrincipal,
  security: {
    bearer: HttpApiSecurity.bearer,
    session: HttpApiSecurity.apiKey({ in: "cookie", key: "streaks_session" })
  }
}) {}

const ServerToken = Schema.Struct({ "x-streak-server-token": S.doorHeaders["x-streak-server-token"] })
const Accepted = { status: 202 } as const
const Created = { status: 201 } as const

const OUTAGE_DESCRIPTION = "The service or the product was down for everyone between `start` and `end` (in the " +
  "past or ongoing, at most 7 days). A period that would be missed and whose last chance day overlaps the window " +
  "is forgiven (it neither adds nor breaks nor uses a freeze); streaks it broke are restored, and each live member " +
  "so restored gets one `streak.repaired`; `restored` counts them. While a window is open no `streak.at_risk` or " +
  "`streak.broken` fires for the program. A window may be declared after the fact."

const id = HttpApiSchema.param("id", S.text(S.bounds.id))

export class IngestGroup extends HttpApiGroup.make("ingest")
  .annotateContext(Doc.group({
    title: "Public and ingest endpoints",
    description: "The doors that record a member's action (browser or widget, your backend, an automation's " +
      "webhook) and the member's streak state. Every door feeds the same programs: calls with the " +
      "same siteKey, userHash and event key count toward the same streak.",
    errors: ["SERVICE_UNAVAILABLE"]
  }))
  .add(
    HttpApiEndpoint.post("browser", "/v1/e").setPayload(EventInput.EventRecord).setHeaders(ServerToken)
      .addSuccess(S.IngestOk, Accepted)
      .annotateContext(Doc.route({
        summary: "Record an action from a browser or the widget",
        description: "A call with an `Origin` header must come from one of the project's allowed origins; a call " +
          "without one is a server call and needs `X-Streak-Server-Token`. Only `streak_interaction` events count; " +
          "`widget_impression` and `widget_interaction` are stored for analytics. Rate-limited per address and per " +
          "site. Repeating an `idempotencyKey` within 24 hours replays the first answer.",
        success: "Accepted: the action is stored (and counted when `counted` is true).",
        errors: [
          "INVALID_SITE_KEY",
          "INVALID_WIDGET_KIND",
          "SERVER_TOKEN_REQUIRED",
          "FORBIDDEN_ORIGIN",
          "IDEMPOTENCY_KEY_IN_PROGRESS",
          "RATE_LIMITED"
        ],
        security: [{}, { serverToken: [] }],
        examples: { request: S.examples.browserEvent, response: S.examples.ingestAnswer }
      }))
  )
  .add(
    HttpApiEndpoint.post("server", "/v1/server/e").setPayload(EventInput.EventRecord).setHeaders(ServerToken)
      .addSuccess(S.IngestOk, Accepted)
      .annotateContext(Doc.route({
        summary: "Record an action from your backend",
        description: "The trusted door: `X-Streak-Server-Token` must be the token of the body's project. A second " +
          "action on the same local day is stored but moves nothing (`duplicate: true`). Repeating an " +
          "`idempotencyKey` within 24 hours replays the first answer.",
        success: "Accepted: the action is stored (and counted when `counted` is true).",
        errors: [
          "INVALID_SITE_KEY",
          "INVALID_WIDGET_KIND",
          "SERVER_TOKEN_REQUIRED",
          "IDEMPOTENCY_KEY_IN_PROGRESS",
          "RATE_LIMITED"
        ],
        security: [{ serverToken: [] }],
        examples: { request: S.examples.serverEvent, response: S.examples.ingestAnswer }
      }))
  )
  .add(
    HttpApiEndpoint.post("webhook")`/v1/webhook/${HttpApiSchema.param("siteKey", S.SiteKeyParam)}/e`
      .setPayload(EventInput.WebhookEvent)
      .setHeaders(Schema.Struct({ "x-streak-webhook-secret": S.doorHeaders["x-streak-webhook-secret"] }))
      .addSuccess(S.IngestOk, Accepted)
      .annotateContext(Doc.route({
        summary: "Record an action from an automation's webhook",
        description: "For automation platforms and other senders that can set a header but not sign a request. " +
          "The secret must be the one of the program that counts `event`; an unknown event answers like a wrong " +
          "secret, so event keys are never revealed. While the program is in test mode the action counts as test " +
          "progress. Send an `idempotencyKey` per completion: retries with the same key count once.",
        success: "Accepted: the action is stored (and counted when `counted` is true).",
        errors: [
          "INVALID_SITE_KEY",
          "SITE_KEY_MISMATCH",
          "WEBHOOK_SECRET_REQUIRED",
          "IDEMPOTENCY_KEY_IN_PROGRESS",
          "RATE_LIMITED"
        ],
        security: [{ webhookSecret: [] }],
        examples: { request: S.examples.webhookEvent, response: S.examples.ingestAnswer }
      }))
  )
  .add(
    HttpApiEndpoint.get("state", "/v1/state").setUrlParams(S.StateParams).setHeaders(
      Schema.Struct({
        "x-streak-server-token": S.doorHeaders["x-streak-server-token"],
        "x-streak-identity": S.doorHeaders["x-streak-identity"]
      })
    ).addSuccess(S.State)
      .annotateContext(Doc.route({
        summary: "Read a member's streak",
        description: "The current and best streak, this ISO week (Monday to Sunday, in the member's time zone) and " +
          "the program's milestones, from the ledger that matches the program's mode (`meta.isLive`). `event` (or " +
          "its legacy alias `kind`) names the program. The caller is checked as on `POST /v1/e`: an allowed browser " +
          "origin, or the server token. Coupon and link reward values are shown only with a valid identity token " +
          "(`X-Streak-Identity` or `identity`).",
        success: "The member's state (zeros for a member with no action yet).",
        errors: [
          "INVALID_SITE_KEY",
          "INVALID_WIDGET_KIND",
          "SERVER_TOKEN_REQUIRED",
          "FORBIDDEN_ORIGIN",
          "RATE_LIMITED"
        ],
        security: [{}, { serverToken: [] }, { identityToken: [] }, { serverToken: [], identityToken: [] }],
        examples: { response: S.examples.state, parameters: S.examples.stateParameters }
      }))
  )
  .add(
    HttpApiEndpoint.post("alias", "/v1/alias").setPayload(S.TokenAlias).addSuccess(S.IngestOk)
      .annotateContext(Doc.route({
        summary: "Link an anonymous visitor with an alias token",
        description: "The token is an HS256 JWT that your server signs with the project's signing secret, claims " +
          "`sub` (userHash), `anon` (anonymous id), `site` (siteKey) and `exp` (at most 10 minutes ahead). From then " +
          "on the anonymous id's actions count for the member, and what it had already recorded is merged in. " +
          "Rate-limited per address and per site.",
        success: "Linked (linking the same pair again changes nothing).",
        errors: ["INVALID_SITE_KEY", "INVALID_ALIAS_TOKEN", "ALIAS_CONFLICT", "RATE_LIMITED"]
      }))
  )
{}

export class AdminGroup extends HttpApiGroup.make("admin")
  .annotateContext(Doc.group({
    title: "Admin API",
    description: "Provisioning and operations for the deployment's operator: workspaces, " +
      "projects, programs, credentials, alias links and on-demand jobs. Secrets are returned once, when created.",
    errors: ["UNAUTHORIZED", "RATE_LIMITED", "SERVICE_UNAVAILABLE"]
  }))
  .add(
    HttpApiEndpoint.post("alias", "/admin/alias").setPayload(S.AdminAlias).addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Link an anonymous visitor to a member",
        description: "From then on, actions sent with `userHash` = `anonymousId` count for `userHash`, and what the " +
          "anonymous id had already recorded is merged into the member. Linking the same pair again changes " +
          "nothing.",
        errors: ["INVALID_SITE_KEY", "ALIAS_CONFLICT"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createWorkspace", "/admin/workspaces").setPayload(S.WorkspaceBody).addSuccess(
      S.WorkspaceView,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Create a workspace",
        description: "A workspace is the account: it holds projects, credentials and the plan that meters its active " +
          "streakers."
      }))
  )
  .add(
    HttpApiEndpoint.patch("setPlan")`/admin/workspaces/${id}`.setPayload(S.PlanBody).addSuccess(S.WorkspaceView)
      .annotateContext(Doc.route({
        summary: "Change a workspace's plan",
        description: "Raising the plan above the month's active streakers resumes paused reports at once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createProject", "/admin/projects").setPayload(S.ProjectBody).addSuccess(
      S.ProjectCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Create a project",
        description: "Returns the project's siteKey, and its server token and signing secret, shown this once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createProgram", "/admin/programs").setPayload(S.ProgramBody).addSuccess(
      S.ProgramCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Create a program",
        description: "A program counts one event key of its project and starts in test mode. Returns its webhook " +
          "ingest secret, shown this once. `policy` (optional) sets how it counts: cadence, active days per " +
          "period, day start, rest days, freezes and the at-risk hour; without one the program counts one action " +
          "a day, and its answers show that default policy.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.put("setProgramPolicy")`/admin/programs/${id}/policy`.setPayload(S.PolicyInput).addSuccess(
      S.ProgramView
    )
      .annotateContext(Doc.route({
        summary: "Replace a program's policy",
        description: "The body is the whole policy: a field left out takes its default. Every streak of the program " +
          "is recomputed from its activity days under the new policy; no event is sent for the past. An invalid " +
          "policy changes nothing.",
        success: "The program, with its new policy and mode.",
        errors: ["NOT_FOUND"],
        examples: { request: S.examples.policy }
      }))
  )
  .add(
    HttpApiEndpoint.post("createOutage")`/admin/programs/${id}/outages`.setPayload(S.OutageBody)
      .addSuccess(S.OutageView, Created)
      .annotateContext(Doc.route({
        summary: "Declare an outage window",
        description: OUTAGE_DESCRIPTION,
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("outages")`/admin/programs/${id}/outages`.addSuccess(S.Outages)
      .annotateContext(Doc.route({
        summary: "List a program's outage windows",
        description: "Every outage window declared for the program, oldest first.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret")`/admin/programs/${id}/webhook-secret`.addSuccess(S.WebhookSecret)
      .annotateContext(Doc.route({
        summary: "Rotate a program's webhook secret",
        description: "The old secret stops working at once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("setProgramStatus")`/admin/programs/${id}/status`.setPayload(S.StatusBody).addSuccess(
      S.ProgramView
    )
      .annotateContext(Doc.route({
        summary: "Set a program's mode",
        description: "The only way from live back to test; the live ledger is kept.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createApiKey")`/admin/workspaces/${id}/api-keys`.setPayload(S.NameBody).addSuccess(
      S.ApiKeyCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Create a customer API key",
        description: "The key (`svc_api_\u2026`) reaches every program of the workspace and is shown this once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.del("revokeApiKey")`/admin/api-keys/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Revoke a customer API key",
        description: "The key stops working at once, and every subscription it created is removed.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createGrant", "/admin/oauth-grants").setPayload(S.GrantBody).addSuccess(
      S.GrantCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Connect an app (OAuth grant)",
        description: "Returns an access token (`svc_oat_\u2026`) that reaches the given workspaces, shown this once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.del("revokeGrant")`/admin/oauth-grants/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Disconnect an app",
        description: "Its access token stops working at once, and every subscription it created is removed.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createOAuthClient", "/admin/oauth-clients").setPayload(S.OAuthClientBody).addSuccess(
      S.OAuthClientCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Register an OAuth client",
        description:
          "A confidential client of the authorization server (`/oauth/authorize`, `/oauth/token`): its redirect URIs are compared exactly (https, or http on a loopback host). The client secret is shown this once.",
        errors: []
      }))
  )
  .add(
    HttpApiEndpoint.del("revokeOAuthClient")`/admin/oauth-clients/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Remove an OAuth client",
        description:
          "Every grant users consented to it ends at once (tokens stop working, its subscriptions are removed); the client can no longer start a flow.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createUser", "/admin/users").setPayload(S.UserBody).addSuccess(S.UserCreated, Created)
      .annotateContext(Doc.route({
        summary: "Create a user",
        description: "A person who signs in, with a role in each workspace named: `owner` (everything, users " +
          "included), `admin` (everything but users) or `viewer` (read only). With a `password` (at least 12 " +
          "characters) the user can sign in at once; without one the answer holds `inviteUrl`, a one-time link " +
          "valid for 72 hours where the user sets it. E-mail addresses are unique, compared case-insensitively.",
        errors: ["NOT_FOUND", "CONFLICT"],
        examples: { request: S.examples.userBody, response: S.examples.userCreated }
      }))
  )
  .add(
    HttpApiEndpoint.get("users", "/admin/users").addSuccess(S.UserList)
      .annotateContext(Doc.route({
        summary: "List users",
        description: "Every user with their workspace roles, by id; never a password or its hash."
      }))
  )
  .add(
    HttpApiEndpoint.patch("setUserRoles")`/admin/users/${id}`.setPayload(S.MembershipsBody).addSuccess(S.UserView)
      .annotateContext(Doc.route({
        summary: "Change a user's workspace roles",
        description: "Replaces the user's workspaces and roles. Takes effect on the next request of every " +
          "session of the user and of every app the user connected: made `viewer`, they read only; from a " +
          "workspace left out, the user's apps are disconnected (a grant left with no workspace is revoked) and " +
          "the subscriptions the user and those apps created there are removed.",
        errors: ["NOT_FOUND"],
        examples: { request: S.examples.membershipsBody }
      }))
  )
  .add(
    HttpApiEndpoint.del("removeUser")`/admin/users/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Remove a user",
        description: "The user's sessions and invite link stop working at once, every app the user connected is " +
          "disconnected, and the subscriptions the user and those apps created are removed.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createMcpToken", "/admin/mcp-tokens").setPayload(S.McpTokenBody).addSuccess(
      S.McpTokenCreated,
      Created
    )
      .annotateContext(Doc.route({
        summary: "Create an MCP token",
        description:
          "A bearer token (`svc_mcp_\u2026`) for the MCP worker at `/mcp`, reaching the given workspaces; shown " +
          "this once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.del("revokeMcpToken")`/admin/mcp-tokens/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Revoke an MCP token",
        description: "The token stops working at once.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("dueChecks", "/admin/jobs/due-checks").addSuccess(S.DueChecksRun)
      .annotateContext(Doc.route({
        summary: "Run the due checks now",
        description: "One sweep, as the scheduler runs every hour: for use after an outage, and in tests. Answers " +
          "how many `streak.at_risk`, `streak.broken` and `streak.freeze_used` events it fired."
      }))
  )
  .add(
    HttpApiEndpoint.post("deliveries", "/admin/jobs/deliveries").addSuccess(S.DeliveriesRun)
      .annotateContext(Doc.route({
        summary: "Deliver pending webhooks now",
        description: "Drains the outbox once."
      }))
  )
  .add(
    HttpApiEndpoint.get("audit", "/admin/audit").setUrlParams(S.AuditParams).addSuccess(S.AuditPage)
      .annotateContext(Doc.route({
        summary: "Read the whole audit log",
        description: "Every write made with a credential, newest first, a page at a time: `from` (inclusive) and " +
          "`to` (exclusive) bound `at`; pass `nextCursor` as `cursor` for the next page (`limit` 1 to 200, default 50)."
      }))
  )
  .middleware(AdminAuth)
{}

const programId = HttpApiSchema.param("programId", S.text(S.bounds.id))
const userHash = HttpApiSchema.param("userHash", S.text(S.bounds.userHash))
const experimentId = HttpApiSchema.param("experimentId", S.ExperimentId)
const pauseId = HttpApiSchema.param("pauseId", S.text(S.bounds.id))

export class CustomerGroup extends HttpApiGroup.make("customer")
  .annotateContext(Doc.group({
    title: "Customer REST API",
    description: "For the customer's own systems and automation platforms, with a customer API key " +
      "or an OAuth access token, and for signed-in people with their session cookie (with the session's CSRF " +
      "token on writes; a viewer's writes answer 403). Anything outside the credential's reach answers 404, like " +
      "something unknown.",
    errors: ["UNAUTHORIZED", "FORBIDDEN", "RATE_LIMITED", "SERVICE_UNAVAILABLE"]
  }))
  .add(
    HttpApiEndpoint.get("me", "/me").addSuccess(S.Me)
      .annotateContext(Doc.route({
        summary: "The credential and its workspace",
        description: "An API key answers its workspace; an OAuth token the workspaces of the user who connected the " +
          "app; a session the signed-in user, their workspaces with their role in each, and the session's " +
          "`csrfToken`, to send as `X-CSRF-Token` on every state-changing request."
      }))
  )
  .add(
    HttpApiEndpoint.get("programs", "/programs").addSuccess(Schema.Array(S.CustomerProgram))
      .annotateContext(Doc.route({
        summary: "List the programs the credential reaches",
        description: "Every program of every project the credential reaches, with its event key and mode."
      }))
  )
  .add(
    HttpApiEndpoint.post("countAction")`/programs/${programId}/events`.setPayload(EventInput.CountAction)
      .addSuccess(S.Counted, Accepted)
      .annotateContext(Doc.route({
        summary: "Count a member action",
        description: "The customer REST door of ingest: the same checks, idempotency and streak rules as the other " +
          "doors. While the program is in test mode an action counts only with `test: true` (as test " +
          "progress); without it the answer is `counted: false` with `reason: PROGRAM_NOT_LIVE`.",
        errors: ["NOT_FOUND", "IDEMPOTENCY_KEY_IN_PROGRESS"],
        examples: { request: S.examples.countAction, response: S.examples.counted }
      }))
  )
  .add(
    HttpApiEndpoint.get("member")`/programs/${programId}/members/${userHash}`
      .addSuccess(S.MemberStreak)
      .annotateContext(Doc.route({
        summary: "A member's current and best streak",
        description: "A member with no action yet has zeros, not 404. For a program with a policy the answer adds " +
          "`mode`, `freezes` and the current `period`; a program without one answers without them.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("ledger")`/programs/${programId}/members/${userHash}/ledger`.setUrlParams(S.LedgerParams)
      .addSuccess(S.Ledger)
      .annotateContext(Doc.route({
        summary: "A member's streak, period by period",
        description: "Why a streak is what it is: each period (day, ISO week or month, by the program's policy) " +
          "from `from` to `to` (activity days, both optional; default the last 8 periods), oldest first, with " +
          "its status and active days. A member with no action yet has no periods.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("grantFreezes")`/programs/${programId}/members/${userHash}/freezes`
      .setPayload(S.FreezesBody).addSuccess(S.FreezesGranted)
      .annotateContext(Doc.route({
        summary: "Grant a member freezes",
        description: "Adds `count` freezes to the member's bank, which never holds more than the policy's " +
          "`freezes.max` (a program without a policy holds none). A freeze carries the streak across a missed period.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.put("setPolicy")`/programs/${programId}/policy`.setPayload(S.PolicyInput)
      .addSuccess(S.CustomerProgram).addError(S.PolicyRefused)
      .annotateContext(Doc.route({
        summary: "Replace a program's policy",
        description: "The body is the whole policy: a field left out takes its default. Every streak of the program " +
          "is recomputed from its activity days under the new policy; no event is sent for the past. An invalid " +
          "policy changes nothing and answers 400 `INVALID_BODY` with `field` (its path in the policy, such as " +
          "`target` or `freezes.initial`) and `message` (what is wrong with it).",
        success: "The program, with its new policy and mode.",
        errors: ["NOT_FOUND", "FORBIDDEN"],
        examples: { request: S.examples.policy }
      }))
  )
  .add(
    HttpApiEndpoint.post("simulatePolicy")`/programs/${programId}/simulations`.setPayload(S.SimulationBody)
      .addSuccess(S.SimulationAnswer)
      .annotateContext(Doc.route({
        summary: "Try a policy on the program's history",
        description: "Replays every member's stored live activity days (those from `from` to `to` when given) " +
          "under the program's current policy (`actual`) and under the proposed one (`proposed`), with the same " +
          "streak rules as counting, and answers what each makes of them: members alive, chains broken, freezes " +
          "used, milestones reached and the current length histogram. Nothing is written and no event is sent; " +
          "an invalid policy answers 400 `INVALID_BODY`, as `PUT /admin/programs/{id}/policy` would.",
        errors: ["NOT_FOUND"],
        examples: { request: S.examples.simulationRequest, response: S.examples.simulationAnswer }
      }))
  )
  .add(
    HttpApiEndpoint.post("repairStreak")`/programs/${programId}/members/${userHash}/repairs`
      .setPayload(S.RepairBody).addSuccess(S.MemberStreak)
      .annotateContext(Doc.route({
        summary: "Repair a missed period",
        description: "Makes a missed period whole, as a support agent or a paid restore would: it counts as kept " +
          "and the ledger shows it `repaired`; `streak.repaired` is sent. Only a period `missed` in the ledger, " +
          "within the policy's `repairWindowDays` after its last day, and within `repairsPer30Days` repairs in " +
          "the last 30 days; otherwise nothing changes. A `streak.broken` already sent stays sent.",
        success: "The member's streak after the repair.",
        errors: ["NOT_FOUND", "NOT_REPAIRABLE"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createPause")`/programs/${programId}/members/${userHash}/pauses`
      .setPayload(S.PauseBody).addSuccess(S.PauseView, Created)
      .annotateContext(Doc.route({
        summary: "Pause a member's streak",
        description: "A vacation: periods wholly inside the pause neither add to the streak nor break it nor use a " +
          "freeze, nothing is owed and no `streak.at_risk` fires inside it. At most 90 days counting both ends, " +
          "ending on or after the member's today.",
        errors: ["NOT_FOUND", "PAUSE_OVERLAPS"]
      }))
  )
  .add(
    HttpApiEndpoint.get("pauses")`/programs/${programId}/members/${userHash}/pauses`.addSuccess(S.Pauses)
      .annotateContext(Doc.route({
        summary: "List a member's pauses",
        description: "The member's pauses, by start day.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.del("deletePause")`/programs/${programId}/members/${userHash}/pauses/${pauseId}`
      .addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Remove a pause",
        description: "Only before its start day; from its start day on it stays.",
        errors: ["NOT_FOUND", "PAUSE_STARTED"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createOutage")`/programs/${programId}/outages`.setPayload(S.OutageBody)
      .addSuccess(S.OutageView, Created)
      .annotateContext(Doc.route({
        summary: "Declare an outage window",
        description: OUTAGE_DESCRIPTION,
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("outages")`/programs/${programId}/outages`.addSuccess(S.Outages)
      .annotateContext(Doc.route({
        summary: "List a program's outage windows",
        description: "Every outage window declared for the program, oldest first.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("createHook", "/hooks").setPayload(S.HookBody).addSuccess(S.HookCreated, Created)
      .annotateContext(Doc.route({
        summary: "Subscribe a URL to outbound events",
        description: "The URL must be HTTPS. Deliveries are signed as Standard Webhooks with the returned `secret`, " +
          "shown this once; a receiver answering 410 removes the subscription. Creating one ends the " +
          "program's running experiment.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.del("deleteHook")`/hooks/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Remove a subscription",
        description: "Any credential that reaches the program may remove it. Removing one ends the program's running " +
          "experiment.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("webhookSamples")`/programs/${programId}/webhook-samples`.setUrlParams(S.SamplesParams)
      .addSuccess(Schema.Array(Schema.Unknown))
      .annotateContext(Doc.route({
        summary: "Recent payloads of one event type",
        description: "Up to 3 recent delivered payloads of `type` for the program, newest first, or one synthetic " +
          "sample of the right shape when there is none (for automation platforms' field mapping).",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("usage", "/usage").setUrlParams(S.UsageParams).addSuccess(S.Usage)
      .annotateContext(Doc.route({
        summary: "The workspace's active streakers this month",
        description: "Active streakers (members with at least one counted live action in the UTC month) against the " +
          "plan's limit; `month=YYYY-MM` for another month, `workspaceId` for another of the credential's " +
          "workspaces than its first (one outside its reach: 404).",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("report")`/reports/${
      HttpApiSchema.param("report", Schema.Literal("overview", "events", "insights"))
    }`
      .setUrlParams(S.ReportParams).addSuccess(Schema.Unknown)
      .annotateContext(Doc.route({
        summary: "A report: overview, events or insights",
        description: "Over `from`..`to` (dates), optionally for one program. While the workspace is over its plan's " +
          "limit the answer is `{\"paused\": true, \"reason\": \"PLAN_LIMIT_EXCEEDED\", ...}`; raising the plan " +
          "shows everything tracked meanwhile.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("startExperiment")`/programs/${programId}/experiments`.setPayload(S.ExperimentBody)
      .addSuccess(S.ExperimentView, Created)
      .annotateContext(Doc.route({
        summary: "Start an experiment (Proof)",
        description: "Holds out `holdoutPercent` of the members as a control group, chosen by a stable hash: their " +
          "streaks count, but they receive no outbound events.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("currentExperiment")`/programs/${programId}/experiments/current`
      .addSuccess(S.ExperimentReport)
      .annotateContext(Doc.route({
        summary: "The program's running experiment and its report",
        description: "The groups' enrolled and returning members, and the Proof report: per horizon (1, 7, 14 and " +
          "30 days after enrolment) each group's matured and retained members, the difference of the retention " +
          "rates with its 95 % interval, the relative lift, the p-value, the minimum detectable effect and CUPED; " +
          "and the sample-ratio check of the enrolled counts.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("listExperiments")`/programs/${programId}/experiments`
      .addSuccess(Schema.Struct({ experiments: Schema.Array(S.ExperimentReport) }))
      .annotateContext(Doc.route({
        summary: "Every experiment of the program with its report",
        description:
          "Running and ended experiments, newest first, each as `GET …/experiments/{experimentId}` answers it.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("experiment")`/programs/${programId}/experiments/${experimentId}`
      .addSuccess(S.ExperimentReport)
      .annotateContext(Doc.route({
        summary: "One experiment of the program, running or ended, with its report",
        description: "The same answer as `…/experiments/current`, for any experiment of the program.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("stopExperiment")`/programs/${programId}/experiments/current/stop`
      .addSuccess(S.ExperimentReport)
      .annotateContext(Doc.route({
        summary: "Stop the program's running experiment",
        description: "Answers the experiment with its end and final report; it stays readable.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("listApiKeys", "/api-keys").addSuccess(S.ApiKeyList)
      .annotateContext(Doc.route({
        summary: "The API keys of your workspaces (session only)",
        description: "Unrevoked keys of the signed-in user's workspaces, without their secrets. An API key or OAuth " +
          "token answers 403.",
        errors: ["FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.post("createApiKey", "/api-keys").setPayload(S.ApiKeyBody).addSuccess(S.ApiKeyCreated, Created)
      .annotateContext(Doc.route({
        summary: "Create an API key (session only)",
        description: "A key of one of your workspaces where you are owner or admin; `key` is shown this once.",
        errors: ["NOT_FOUND", "FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.del("revokeApiKey")`/api-keys/${id}`.addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Revoke an API key (session only)",
        description: "The key stops working at once and the subscriptions it created are removed.",
        errors: ["NOT_FOUND", "FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.get("connectedApps", "/connected-apps").addSuccess(S.ConnectedApps)
      .annotateContext(Doc.route({
        summary: "Apps connected to your workspaces (session only)",
        description: "The OAuth apps that reach any of the signed-in user's workspaces. `lastUsedAt` is the " +
          "app's last request with an access token (recorded to the minute) or its last token refresh, whichever " +
          "is later; null before either, and for an app the operator connected.",
        errors: ["FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.del("disconnectApp")`/connected-apps/${HttpApiSchema.param("grantId", S.text(S.bounds.id))}`
      .addSuccess(HttpApiSchema.NoContent)
      .annotateContext(Doc.route({
        summary: "Disconnect an app (session only)",
        description: "The app's tokens stop reaching your workspaces at once (a grant left with no workspace is " +
          "revoked) and the subscriptions it created in them are removed.",
        errors: ["NOT_FOUND", "FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret")`/programs/${programId}/webhook-secret`.addSuccess(S.WebhookSecret)
      .annotateContext(Doc.route({
        summary: "Rotate a program's webhook ingest secret (session only)",
        description: "A new `whi_…` secret, shown this once; the old one stops working at once.",
        errors: ["NOT_FOUND", "FORBIDDEN"],
        security: [{ session: [] }]
      }))
  )
  .add(
    HttpApiEndpoint.get("listHooks", "/hooks").addSuccess(S.HookList)
      .annotateContext(Doc.route({
        summary: "Every subscription of your workspaces",
        description: "Oldest first, without secrets, each with the credential kind and id that created it " +
          "(`api_key`, `oauth`, or `user` for a signed-in person)."
      }))
  )
  .add(
    HttpApiEndpoint.get("hookDeliveries")`/hooks/${id}/deliveries`.addSuccess(S.Deliveries)
      .annotateContext(Doc.route({
        summary: "Recent deliveries of a subscription",
        description: "Its 50 newest messages, newest first, each with its attempts: time, the receiver's status " +
          "code, duration and error.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.post("redeliver")`/hooks/${id}/deliveries/${
      HttpApiSchema.param("messageId", S.text(S.bounds.id))
    }/redeliver`
      .addSuccess(S.Redelivery, Accepted)
      .annotateContext(Doc.route({
        summary: "Send a delivery again",
        description: "The message is queued again at once, with the same `webhook-id`, so a receiver that saw it " +
          "can deduplicate. A message still pending is left in the queue as it is.",
        errors: ["NOT_FOUND"]
      }))
  )
  .add(
    HttpApiEndpoint.get("audit", "/audit").setUrlParams(S.AuditParams).addSuccess(S.AuditPage)
      .annotateContext(Doc.route({
        summary: "The audit log of your workspaces",
        description: "Every write made with a credential in the workspaces this credential reaches, newest first, a " +
          "page at a time (see `GET /admin/audit`)."
      }))
  )
  .add(
    HttpApiEndpoint.post("startImport")`/programs/${programId}/imports`
      .addSuccess(S.ImportStarted, Accepted)
      .annotateContext(Doc.route({
        summary: "Import past actions (history import)",
        description: "The body is streamed: one action per line, as NDJSON (`application/x-ndjson`) or as CSV " +
          "with a header (`text/csv`; columns `userHash, ts, tz, idempotencyKey, meta`). Each line is checked " +
          "as the count-action route checks a body (`ts` required); a bad line is rejected with its code and the " +
          "rest go on. A line's identity is its `idempotencyKey`, else its `userHash` and `ts`: a line whose " +
          "identity is stored already counts as a duplicate. Actions go to the live ledger (a test program " +
          "stays in test); once the body is read the answer is 202, and the members' streaks, bests and " +
          "milestones are recomputed in the background, with no outbound event for the past.",
        errors: ["NOT_FOUND"],
        success: "Accepted: every line is read; follow the import with its id."
      }))
      .annotate(OpenApi.Override, {
        requestBody: {
          required: true,
          content: {
            "application/x-ndjson": {
              schema: { type: "string", maxLength: 2147483647 },
              example: "{\"userHash\":\"u_8f14e45f\",\"ts\":\"2026-03-01T08:15:00+01:00\",\"tz\":\"Europe/Paris\"}\n"
            },
            "text/csv": {
              schema: { type: "string", maxLength: 2147483647 },
              example: "userHash,ts,tz,idempotencyKey\nu_8f14e45f,2026-03-01T08:15:00+01:00,Europe/Paris,ord-1\n"
            }
          }
        }
      })
  )
  .add(
    HttpApiEndpoint.get("import")`/programs/${programId}/imports/${
      HttpApiSchema.param("importId", S.text(S.bounds.id))
    }`
      .addSuccess(S.ImportView)
      .annotateContext(Doc.route({
        summary: "A history import and its progress",
        description: "`running` while lines are loaded and streaks recomputed, then `finished` (or `failed`), or " +
          "`interrupted` when the server reading the body went away first: the lines committed are in, and the " +
          "same body sent again imports the rest. " +
          "Lines are numbered from 1 (a CSV header is line 1).",
        errors: ["NOT_FOUND"]
      }))
  )
  .middleware(CustomerAuth)
  .prefix("/v1/api")
{}

export class MetaGroup extends HttpApiGroup.make("meta")
  .annotateContext(Doc.group({
    title: "Health",
    description: "For load balancers and orchestrators.",
    errors: []
  }))
  .add(
    HttpApiEndpoint.get("health", "/health").addSuccess(S.Health)
      .annotateContext(Doc.route({ summary: "Liveness", description: "The process is up." }))
  )
  .add(
    HttpApiEndpoint.get("ready", "/ready").addSuccess(S.Health)
      .annotateContext(Doc.route({
        summary: "Readiness",
        description: "Storage is reachable and its migrations are applied.",
        errors: ["SERVICE_UNAVAILABLE"]
      }))
  )
{}

/** The status of every error code (docs/api.md#errors); the fast path answers with it too. */
export const statusOf: Record<string, number> = Object.fromEntries(
  Object.entries(HttpErrors.codes).map(([code, { status }]) => [code, status])
)

export class Api extends HttpApi.make("streaks")
  // The document's info, security schemes and per-route errors (OpenApiDocument); `Api` is read
  // when the document is first made, after this class exists.
  .annotate(OpenApi.Transform, Doc.transform((): HttpApi.HttpApi.Any => Api))
  .add(IngestGroup)
  .add(AdminGroup)
  .add(CustomerGroup)
  .add(MetaGroup)
  // Registered once for the whole API, so any handler may fail with any of them; the document
  // lists per route only the codes it answers (`OpenApiDocument.Errors`).
  .addError(httpError(Errors.InvalidBody, 400, "INVALID_BODY"))
  .addError(httpError(Errors.InvalidSiteKey, 400, "INVALID_SITE_KEY"))
  .addError(httpError(Errors.SiteKeyMismatch, 400, "SITE_KEY_MISMATCH"))
  .addError(httpError(Errors.InvalidWidgetKind, 400, "INVALID_WIDGET_KIND"))
  .addError(httpError(Errors.ServerTokenRequired, 401, "SERVER_TOKEN_REQUIRED"))
  .addError(httpError(Errors.WebhookSecretRequired, 401, "WEBHOOK_SECRET_REQUIRED"))
  .addError(httpError(Errors.InvalidAliasToken, 401, "INVALID_ALIAS_TOKEN"))
  .addError(httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"))
  .addError(httpError(Errors.ForbiddenOrigin, 403, "FORBIDDEN_ORIGIN"))
  .addError(httpError(Errors.Forbidden, 403, "FORBIDDEN"))
  .addError(httpError(Errors.NotFound, 404, "NOT_FOUND"))
  .addError(httpError(Errors.IdempotencyKeyInProgress, 409, "IDEMPOTENCY_KEY_IN_PROGRESS"))
  .addError(httpError(Errors.AliasConflict, 409, "ALIAS_CONFLICT"))
  .addError(httpError(Errors.Conflict, 409, "CONFLICT"))
  .addError(httpError(Errors.NotRepairable, 409, "NOT_REPAIRABLE"))
  .addError(httpError(Errors.PauseOverlaps, 409, "PAUSE_OVERLAPS"))
  .addError(httpError(Errors.PauseStarted, 409, "PAUSE_STARTED"))
  .addError(httpError(Errors.PayloadTooLarge, 413, "PAYLOAD_TOO_LARGE"))
  .addError(httpError(Errors.RateLimited, 429, "RATE_LIMITED"))
  .addError(httpError(Errors.StorageError, 503, "SERVICE_UNAVAILABLE"))
{}
