/**
 * The Streaks HTTP API as one `HttpApi`: every route of spec §4 and CONTRACT §13/§15, with its
 * security and error codes. The server implements it; TypeScript users derive a typed client
 * from it (`HttpApiClient.make(Api, { baseUrl })`).
 */
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity } from "@effect/platform"
import type { Credentials } from "@streaks/core"
import { Errors, EventInput } from "@streaks/core"
import { Context, Schema } from "effect"
import * as S from "./ApiSchemas.js"
import { httpError } from "./HttpErrors.js"

/** The authenticated customer credential of a `/v1/api` request. */
export class CurrentPrincipal extends Context.Tag("@streaks/http/CurrentPrincipal")<
  CurrentPrincipal,
  Credentials.Principal
>() {}

/** `X-Admin-Token` equal to the deployment's admin token (CONTRACT §5). */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("@streaks/http/AdminAuth", {
  failure: httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"),
  security: { adminToken: HttpApiSecurity.apiKey({ in: "header", key: "X-Admin-Token" }) }
}) {}

/** `Authorization: Bearer svc_api_…` or `svc_oat_…` (spec §5 rules 2–3). */
export class CustomerAuth extends HttpApiMiddleware.Tag<CustomerAuth>()("@streaks/http/CustomerAuth", {
  failure: httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"),
  provides: CurrentPrincipal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const ServerToken = Schema.Struct({ "x-streak-server-token": Schema.optional(Schema.String) })
const Accepted = { status: 202 } as const
const Created = { status: 201 } as const
const id = HttpApiSchema.param("id", Schema.String)

export class IngestGroup extends HttpApiGroup.make("ingest")
  .add(
    HttpApiEndpoint.post("browser", "/v1/e").setPayload(EventInput.EventRecord).setHeaders(ServerToken)
      .addSuccess(S.IngestOk, Accepted)
  )
  .add(
    HttpApiEndpoint.post("server", "/v1/server/e").setPayload(EventInput.EventRecord).setHeaders(ServerToken)
      .addSuccess(S.IngestOk, Accepted)
  )
  .add(
    HttpApiEndpoint.post("webhook")`/v1/webhook/${HttpApiSchema.param("siteKey", Schema.String)}/e`
      .setPayload(EventInput.WebhookEvent)
      .setHeaders(Schema.Struct({ "x-streak-webhook-secret": Schema.optional(Schema.String) }))
      .addSuccess(S.IngestOk, Accepted)
  )
  .add(
    HttpApiEndpoint.get("state", "/v1/state").setUrlParams(S.StateParams).setHeaders(
      Schema.Struct({
        "x-streak-server-token": Schema.optional(Schema.String),
        "x-streak-identity": Schema.optional(Schema.String)
      })
    ).addSuccess(S.State)
  )
  .add(HttpApiEndpoint.post("alias", "/v1/alias").setPayload(S.TokenAlias).addSuccess(S.IngestOk))
{}

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.post("alias", "/admin/alias").setPayload(S.AdminAlias).addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("createWorkspace", "/admin/workspaces").setPayload(S.WorkspaceBody).addSuccess(S.WorkspaceView, Created))
  .add(HttpApiEndpoint.patch("setPlan")`/admin/workspaces/${id}`.setPayload(S.PlanBody).addSuccess(S.WorkspaceView))
  .add(HttpApiEndpoint.post("createProject", "/admin/projects").setPayload(S.ProjectBody).addSuccess(S.ProjectCreated, Created))
  .add(HttpApiEndpoint.post("createProgram", "/admin/programs").setPayload(S.ProgramBody).addSuccess(S.ProgramCreated, Created))
  .add(HttpApiEndpoint.post("rotateWebhookSecret")`/admin/programs/${id}/webhook-secret`.addSuccess(S.WebhookSecret))
  .add(HttpApiEndpoint.post("setProgramStatus")`/admin/programs/${id}/status`.setPayload(S.StatusBody).addSuccess(S.ProgramView))
  .add(HttpApiEndpoint.post("createApiKey")`/admin/workspaces/${id}/api-keys`.setPayload(S.NameBody).addSuccess(S.ApiKeyCreated, Created))
  .add(HttpApiEndpoint.del("revokeApiKey")`/admin/api-keys/${id}`.addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("createGrant", "/admin/oauth-grants").setPayload(S.GrantBody).addSuccess(S.GrantCreated, Created))
  .add(HttpApiEndpoint.del("revokeGrant")`/admin/oauth-grants/${id}`.addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("createMcpToken", "/admin/mcp-tokens").setPayload(S.McpTokenBody).addSuccess(S.McpTokenCreated, Created))
  .add(HttpApiEndpoint.del("revokeMcpToken")`/admin/mcp-tokens/${id}`.addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("dueChecks", "/admin/jobs/due-checks").addSuccess(S.DueChecksRun))
  .add(HttpApiEndpoint.post("deliveries", "/admin/jobs/deliveries").addSuccess(S.DeliveriesRun))
  .middleware(AdminAuth)
{}

const programId = HttpApiSchema.param("programId", Schema.String)

export class CustomerGroup extends HttpApiGroup.make("customer")
  .add(HttpApiEndpoint.get("me", "/me").addSuccess(S.Me))
  .add(HttpApiEndpoint.get("programs", "/programs").addSuccess(Schema.Array(S.CustomerProgram)))
  .add(
    HttpApiEndpoint.post("countAction")`/programs/${programId}/events`.setPayload(EventInput.CountAction)
      .addSuccess(S.Counted, Accepted)
  )
  .add(
    HttpApiEndpoint.get("member")`/programs/${programId}/members/${HttpApiSchema.param("userHash", Schema.String)}`
      .addSuccess(S.MemberStreak)
  )
  .add(HttpApiEndpoint.post("createHook", "/hooks").setPayload(S.HookBody).addSuccess(S.HookCreated, Created))
  .add(HttpApiEndpoint.del("deleteHook")`/hooks/${id}`.addSuccess(HttpApiSchema.NoContent))
  .add(
    HttpApiEndpoint.get("webhookSamples")`/programs/${programId}/webhook-samples`.setUrlParams(S.SamplesParams)
      .addSuccess(Schema.Array(Schema.Unknown))
  )
  .add(HttpApiEndpoint.get("usage", "/usage").setUrlParams(S.UsageParams).addSuccess(S.Usage))
  .add(
    HttpApiEndpoint.get("report")`/reports/${HttpApiSchema.param("report", Schema.Literal("overview", "events", "insights"))}`
      .setUrlParams(S.ReportParams).addSuccess(Schema.Unknown)
  )
  .add(
    HttpApiEndpoint.post("startExperiment")`/programs/${programId}/experiments`.setPayload(S.ExperimentBody)
      .addSuccess(S.ExperimentView, Created)
  )
  .add(HttpApiEndpoint.get("currentExperiment")`/programs/${programId}/experiments/current`.addSuccess(Schema.Unknown))
  .add(HttpApiEndpoint.post("stopExperiment")`/programs/${programId}/experiments/current/stop`.addSuccess(S.ExperimentView))
  .middleware(CustomerAuth)
  .prefix("/v1/api")
{}

export class MetaGroup extends HttpApiGroup.make("meta")
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(S.Health))
  .add(HttpApiEndpoint.get("ready", "/ready").addSuccess(S.Health))
{}

/** The status of every error code (spec §7, CONTRACT §2, §9, §10); the fast path answers with it too. */
export const statusOf: Record<string, number> = {
  INVALID_BODY: 400,
  INVALID_SITE_KEY: 400,
  SITE_KEY_MISMATCH: 400,
  INVALID_WIDGET_KIND: 400,
  SERVER_TOKEN_REQUIRED: 401,
  WEBHOOK_SECRET_REQUIRED: 401,
  INVALID_ALIAS_TOKEN: 401,
  UNAUTHORIZED: 401,
  FORBIDDEN_ORIGIN: 403,
  NOT_FOUND: 404,
  IDEMPOTENCY_KEY_IN_PROGRESS: 409,
  ALIAS_CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  SERVICE_UNAVAILABLE: 503
}

export class Api extends HttpApi.make("streaks")
  .add(IngestGroup)
  .add(AdminGroup)
  .add(CustomerGroup)
  .add(MetaGroup)
  .addError(httpError(Errors.InvalidBody, 400, "INVALID_BODY"))
  .addError(httpError(Errors.InvalidSiteKey, 400, "INVALID_SITE_KEY"))
  .addError(httpError(Errors.SiteKeyMismatch, 400, "SITE_KEY_MISMATCH"))
  .addError(httpError(Errors.InvalidWidgetKind, 400, "INVALID_WIDGET_KIND"))
  .addError(httpError(Errors.ServerTokenRequired, 401, "SERVER_TOKEN_REQUIRED"))
  .addError(httpError(Errors.WebhookSecretRequired, 401, "WEBHOOK_SECRET_REQUIRED"))
  .addError(httpError(Errors.InvalidAliasToken, 401, "INVALID_ALIAS_TOKEN"))
  .addError(httpError(Errors.Unauthorized, 401, "UNAUTHORIZED"))
  .addError(httpError(Errors.ForbiddenOrigin, 403, "FORBIDDEN_ORIGIN"))
  .addError(httpError(Errors.NotFound, 404, "NOT_FOUND"))
  .addError(httpError(Errors.IdempotencyKeyInProgress, 409, "IDEMPOTENCY_KEY_IN_PROGRESS"))
  .addError(httpError(Errors.AliasConflict, 409, "ALIAS_CONFLICT"))
  .addError(httpError(Errors.PayloadTooLarge, 413, "PAYLOAD_TOO_LARGE"))
  .addError(httpError(Errors.RateLimited, 429, "RATE_LIMITED"))
  .addError(httpError(Errors.StorageError, 503, "SERVICE_UNAVAILABLE"))
{}
