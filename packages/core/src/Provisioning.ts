/**
 * The operator's provisioning operations (docs/api.md#admin-routes): workspaces and plans, projects
 * with their server token and signing secret, programs with milestones and webhook ingest secret,
 * customer API keys, OAuth grants and MCP tokens. There is no dashboard, so this is how tenants come
 * to exist.
 *
 * Every secret is generated here, returned exactly once, and stored only as a SHA-256 hash (tokens
 * that are compared) or sealed with `SecretBox` (the signing secret, an HMAC key used again later).
 * Validation failures are `InvalidBody` with a message naming the field; unknown ids are `NotFound`.
 */
import { Context, DateTime, Effect, Either, Layer, Option, Schema } from "effect"
import * as Calendar from "./Calendar.js"
import * as Credentials from "./Credentials.js"
import {
  ApiKey,
  Milestone,
  OAuthGrant,
  Plan,
  Program,
  ProgramSettings,
  ProgramStatus,
  Project,
  RewardType,
  Workspace,
  defaultSettings,
  type BrowserCounting
} from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import * as Policy from "./Policy.js"
import { CredentialStore, DirectoryStore, SubscriptionStore, Transactor } from "./Ports.js"
import { SecretBox } from "./SecretBox.js"

export interface CreateProjectInput {
  readonly workspaceId: string
  readonly name: string
  /** Exact `scheme://host[:port]` origins, or `https://*.example.com` wildcards (docs/api.md#who-may-call). */
  readonly allowedOrigins: ReadonlyArray<string>
  /** IANA zone of members who never sent `tz`; default `UTC`. */
  readonly timezone?: string | undefined
  readonly browserCounting?: BrowserCounting | undefined
  readonly legacyNoOriginIngest?: boolean | undefined
}

export interface MilestoneInput {
  readonly target: number
  readonly msg: string
  /** Default `message`. */
  readonly rewardType?: RewardType | undefined
  readonly rewardValue?: string | undefined
}

export interface CreateProgramInput {
  readonly projectId: string
  readonly name: string
  readonly eventKey: string
  readonly milestones: ReadonlyArray<MilestoneInput>
  /** Missing parts take the defaults of `defaultSettings`. */
  readonly settings?: {
    readonly theme?: { readonly name: string } | undefined
    readonly position?: string | undefined
    readonly mainMessage?: string | undefined
  } | undefined
  /**
   * How the program counts (docs/streak-semantics.md#streak-policies); absent: the default policy,
   * and none is stored.
   */
  readonly policy?: unknown
}

export class Provisioning extends Context.Tag("@streaks/core/Provisioning")<Provisioning, {
  readonly createWorkspace: (
    input: { readonly name: string; readonly plan: Plan }
  ) => Effect.Effect<Workspace, InvalidBody | StorageError>
  readonly setPlan: (workspaceId: string, plan: Plan) => Effect.Effect<Workspace, InvalidBody | NotFound | StorageError>
  /** The project, with its server token and signing secret in plaintext: shown this once. */
  readonly createProject: (input: CreateProjectInput) => Effect.Effect<
    { readonly project: Project; readonly serverToken: string; readonly signingSecret: string },
    InvalidBody | NotFound | StorageError
  >
  /** The new program (status `test`), with its webhook ingest secret in plaintext: shown this once. */
  readonly createProgram: (input: CreateProgramInput) => Effect.Effect<
    { readonly program: Program; readonly webhookSecret: string },
    InvalidBody | NotFound | StorageError
  >
  /** Replaces the webhook ingest secret; the old one stops working at once. */
  readonly rotateWebhookSecret: (
    programId: string
  ) => Effect.Effect<{ readonly webhookSecret: string }, NotFound | StorageError>
  /** Operator override of the program mode (the only way back from live to test, docs/api.md#test-and-live). */
  readonly setProgramStatus: (
    programId: string,
    status: ProgramStatus
  ) => Effect.Effect<Program, InvalidBody | NotFound | StorageError>
  readonly createApiKey: (workspaceId: string, name: string) => Effect.Effect<
    { readonly id: Ids.ApiKeyId; readonly key: string },
    InvalidBody | NotFound | StorageError
  >
  /** Revokes the key and removes every subscription it created, atomically. Unknown or already revoked: NotFound. */
  readonly revokeApiKey: (id: string) => Effect.Effect<void, NotFound | StorageError>
  readonly createOAuthGrant: (
    input: { readonly workspaceIds: ReadonlyArray<string>; readonly appName: string }
  ) => Effect.Effect<
    { readonly id: Ids.OAuthGrantId; readonly accessToken: string },
    InvalidBody | NotFound | StorageError
  >
  /** Disconnects the app and removes every subscription it created, atomically. */
  readonly revokeOAuthGrant: (id: string) => Effect.Effect<void, NotFound | StorageError>
  /**
   * An MCP token over the workspaces (docs/mcp.md), with its `svc_mcp_…` token in plaintext: shown
   * this once. It opens the MCP worker only, never the customer REST API.
   */
  readonly createMcpToken: (
    input: { readonly name: string; readonly workspaceIds: ReadonlyArray<string> }
  ) => Effect.Effect<
    { readonly id: Ids.McpTokenId; readonly token: string },
    InvalidBody | NotFound | StorageError
  >
  /** Revokes the MCP token; it stops working at once. Unknown or already revoked: NotFound. */
  readonly revokeMcpToken: (id: string) => Effect.Effect<void, NotFound | StorageError>
}>() {}

// --- Validation ---------------------------------------------------------------------------------

const invalid = (message: string) => new InvalidBody({ message })
const notFound = (what: string) => new NotFound({ message: `${what} not found` })

/**
 * Bounds of what provisioning accepts, for callers that declare them in their own schemas (the
 * HTTP API's request bodies) so a client is refused before anything reaches these checks.
 */
export const limits = {
  name: 200,
  milestoneTarget: 100_000,
  milestoneMessage: 1000,
  rewardValue: 2000
} as const

/** A name: non-empty after trimming, at most `limits.name` characters; stored trimmed. */
export const validName = (field: string, value: string): Effect.Effect<string, InvalidBody> => {
  const name = value.trim()
  return name.length === 0 || name.length > limits.name
    ? Effect.fail(invalid(`${field} must be 1 to ${limits.name} characters`))
    : Effect.succeed(name)
}

const wildcardOrigin = /^https:\/\/\*\.(?:[a-z0-9-]+\.)+[a-z0-9-]+(?::\d{1,5})?$/

/**
 * The origin in the form browsers send in `Origin` (lowercase, default port dropped), so that
 * ingest can compare strings exactly; wildcards stay `https://*.<domain>` with at least two labels
 * under the star (`https://*.com` would allow half the web).
 */
export const normalizeOrigin = (value: string): string | undefined => {
  const lower = value.trim().toLowerCase().replace(/\/$/, "")
  if (lower.startsWith("https://*.")) return wildcardOrigin.test(lower) ? lower : undefined
  const scheme = /^(https?):\/\/([^/?#@*\s]+)$/.exec(lower)
  if (scheme === null) return undefined // a path, query, credentials or another scheme: not an origin
  try {
    return new URL(lower).origin
  } catch {
    return undefined
  }
}

const validOrigins = (origins: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, InvalidBody> => {
  const out: Array<string> = []
  for (const origin of origins) {
    const normal = normalizeOrigin(origin)
    if (normal === undefined) {
      return Effect.fail(invalid(`allowedOrigins: "${origin}" is not scheme://host[:port] or https://*.domain`))
    }
    if (!out.includes(normal)) out.push(normal)
  }
  return Effect.succeed(out)
}

const validMilestones = (
  inputs: ReadonlyArray<MilestoneInput>
): Effect.Effect<ReadonlyArray<Milestone>, InvalidBody> =>
  Effect.gen(function*() {
    const seen = new Set<number>()
    const out: Array<Milestone> = []
    for (const m of inputs) {
      if (!Number.isInteger(m.target) || m.target < 1 || m.target > limits.milestoneTarget) {
        return yield* invalid(
          `milestones: target must be an integer from 1 to ${limits.milestoneTarget} (got ${m.target})`
        )
      }
      if (seen.has(m.target)) return yield* invalid(`milestones: target ${m.target} appears twice`)
      seen.add(m.target)
      const rewardType = m.rewardType ?? "message"
      if (!RewardType.literals.includes(rewardType)) {
        return yield* invalid(`milestones: unknown rewardType "${rewardType}"`)
      }
      // A coupon or link without its value would unlock nothing (docs/api.md#reward-values-and-identity-tokens).
      if (rewardType !== "message" && (m.rewardValue === undefined || m.rewardValue === "")) {
        return yield* invalid(`milestones: a ${rewardType} reward needs a rewardValue (target ${m.target})`)
      }
      if (m.msg.length > limits.milestoneMessage || (m.rewardValue?.length ?? 0) > limits.rewardValue) {
        return yield* invalid(`milestones: msg or rewardValue too long (target ${m.target})`)
      }
      out.push(
        new Milestone({
          id: yield* Ids.make("MilestoneId"),
          target: m.target,
          msg: m.msg,
          rewardType,
          ...(m.rewardValue === undefined ? {} : { rewardValue: m.rewardValue })
        })
      )
    }
    // Ascending targets: the order in which a member meets them and in which the widget lists them.
    return out.sort((a, b) => a.target - b.target)
  })

const settingsOf = (input: CreateProgramInput["settings"]): ProgramSettings =>
  input === undefined ? defaultSettings : new ProgramSettings({
    theme: input.theme ?? defaultSettings.theme,
    position: input.position ?? defaultSettings.position,
    mainMessage: input.mainMessage ?? defaultSettings.mainMessage
  })

const validPlan = (plan: string): Effect.Effect<Plan, InvalidBody> =>
  (Plan.literals as ReadonlyArray<string>).includes(plan)
    ? Effect.succeed(plan as Plan)
    : Effect.fail(invalid(`plan must be one of ${Plan.literals.join(", ")}`))

const now = Effect.map(DateTime.now, DateTime.toDateUtc)

// --- Service ------------------------------------------------------------------------------------

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const credentials = yield* CredentialStore
  const subscriptions = yield* SubscriptionStore
  const transactor = yield* Transactor
  const box = yield* SecretBox

  const workspaceExists = (id: string) =>
    Effect.flatMap(
      directory.workspace(Ids.unsafe("WorkspaceId", id)),
      Option.match({
        onNone: () => Effect.fail(notFound("workspace")),
        onSome: Effect.succeed
      })
    )

  const orNotFound = <A>(what: string) => (found: Option.Option<A>): Effect.Effect<A, NotFound> =>
    Option.match(found, { onNone: () => Effect.fail(notFound(what)), onSome: Effect.succeed })

  /** A grant over existing workspaces (an OAuth app's or an MCP token's), with its token: shown once. */
  const grant = <Id extends OAuthGrant["id"]>(
    kind: "oauth" | "mcp",
    makeId: Effect.Effect<Id>,
    nameField: string,
    name: string,
    workspaceIds: ReadonlyArray<string>
  ) =>
    Effect.gen(function*() {
      const valid = yield* validName(nameField, name)
      const ids = [...new Set(workspaceIds)]
      if (ids.length === 0) return yield* invalid("workspaceIds must name at least one workspace")
      const workspaces = yield* Effect.forEach(ids, workspaceExists)
      const token = Credentials.generate(kind)
      const id = yield* makeId
      yield* credentials.createGrant(
        new OAuthGrant({
          id,
          workspaceIds: workspaces.map((w) => w.id),
          appName: valid,
          tokenHash: Credentials.hashToken(token),
          createdAt: yield* now
        })
      )
      return { id, token }
    })

  return Provisioning.of({
    createWorkspace: (input) =>
      Effect.gen(function*() {
        const workspace = new Workspace({
          id: yield* Ids.make("WorkspaceId"),
          name: yield* validName("name", input.name),
          plan: yield* validPlan(input.plan),
          createdAt: yield* now
        })
        yield* directory.createWorkspace(workspace)
        return workspace
      }),

    setPlan: (workspaceId, plan) =>
      Effect.flatMap(
        validPlan(plan),
        (p) => Effect.flatMap(directory.setPlan(Ids.unsafe("WorkspaceId", workspaceId), p), orNotFound("workspace"))
      ),

    createProject: (input) =>
      Effect.gen(function*() {
        const name = yield* validName("name", input.name)
        const allowedOrigins = yield* validOrigins(input.allowedOrigins)
        const timezone = input.timezone ?? "UTC"
        if (!Calendar.isValidZone(timezone)) return yield* invalid(`timezone "${timezone}" is not an IANA time zone`)
        const workspace = yield* workspaceExists(input.workspaceId)
        const serverToken = Credentials.generate("server")
        const signingSecret = Credentials.generate("signing")
        const project = new Project({
          id: yield* Ids.make("ProjectId"),
          workspaceId: workspace.id,
          siteKey: yield* Ids.make("SiteKey"),
          name,
          allowedOrigins,
          timezone,
          browserCounting: input.browserCounting ?? "count",
          legacyNoOriginIngest: input.legacyNoOriginIngest ?? false,
          serverTokenHash: Credentials.hashToken(serverToken),
          signingSecretSealed: box.seal(signingSecret),
          createdAt: yield* now
        })
        yield* directory.createProject(project)
        return { project, serverToken, signingSecret }
      }),

    createProgram: (input) =>
      Effect.gen(function*() {
        const name = yield* validName("name", input.name)
        if (input.eventKey.length === 0 || input.eventKey.length > 128) {
          return yield* invalid("eventKey must be 1 to 128 characters")
        }
        const milestones = yield* validMilestones(input.milestones)
        const settings = settingsOf(input.settings)
        const policy = input.policy === undefined ? undefined : Policy.decode(input.policy)
        if (policy !== undefined && Either.isLeft(policy)) return yield* invalid(policy.left)
        const webhookSecret = Credentials.generate("webhook")
        const projectId = Ids.unsafe("ProjectId", input.projectId)
        const create = Effect.gen(function*() {
          yield* Effect.flatMap(directory.project(projectId), orNotFound("project"))
          // Checked inside the transaction; the port leaves uniqueness to us (see Ports.createProgram).
          const taken = yield* directory.programByEventKey(projectId, input.eventKey)
          if (Option.isSome(taken)) {
            return yield* invalid(`eventKey "${input.eventKey}" is already counted by program ${taken.value.id}`)
          }
          const program = new Program({
            id: yield* Ids.make("ProgramId"),
            projectId,
            name,
            eventKey: input.eventKey,
            status: "test",
            mode: policy === undefined ? "continuous" : Policy.modeOf(policy.right),
            webhookSecretHash: Credentials.hashToken(webhookSecret),
            milestones,
            settings,
            ...(policy === undefined ? {} : { policy: policy.right }),
            createdAt: yield* now
          })
          yield* directory.createProgram(program)
          return program
        })
        const program = yield* transactor.withTransaction(create)
        return { program, webhookSecret }
      }),

    rotateWebhookSecret: (programId) => {
      const webhookSecret = Credentials.generate("webhook")
      return directory.setWebhookSecretHash(Ids.unsafe("ProgramId", programId), Credentials.hashToken(webhookSecret))
        .pipe(
          Effect.flatMap(orNotFound("program")),
          Effect.as({ webhookSecret })
        )
    },

    setProgramStatus: (programId, status) =>
      (ProgramStatus.literals as ReadonlyArray<string>).includes(status)
        ? Effect.flatMap(directory.setProgramStatus(Ids.unsafe("ProgramId", programId), status), orNotFound("program"))
        : Effect.fail(invalid(`status must be "test" or "live"`)),

    createApiKey: (workspaceId, name) =>
      Effect.gen(function*() {
        const valid = yield* validName("name", name)
        const workspace = yield* workspaceExists(workspaceId)
        const key = Credentials.generate("apiKey")
        const apiKey = new ApiKey({
          id: yield* Ids.make("ApiKeyId"),
          workspaceId: workspace.id,
          name: valid,
          tokenHash: Credentials.hashToken(key),
          createdAt: yield* now
        })
        yield* credentials.createApiKey(apiKey)
        return { id: apiKey.id, key }
      }),

    revokeApiKey: (id) =>
      transactor.withTransaction(Effect.gen(function*() {
        const key = yield* Effect.flatMap(
          credentials.revokeApiKey(Ids.unsafe("ApiKeyId", id), yield* now),
          orNotFound("api key")
        )
        yield* subscriptions.removeCreatedBy([key.workspaceId], { type: "api_key", id: key.id })
      })),

    createOAuthGrant: (input) =>
      Effect.map(
        grant("oauth", Ids.make("OAuthGrantId"), "appName", input.appName, input.workspaceIds),
        ({ id, token }) => ({ id, accessToken: token })
      ),

    revokeOAuthGrant: (id) =>
      Schema.is(Ids.OAuthGrantId)(id)
        ? transactor.withTransaction(Effect.gen(function*() {
          const grant = yield* Effect.flatMap(credentials.revokeGrant(id, yield* now), orNotFound("oauth grant"))
          yield* subscriptions.removeCreatedBy(grant.workspaceIds, { type: "oauth", id: grant.id })
        }))
        : Effect.fail(notFound("oauth grant")),

    createMcpToken: (input) => grant("mcp", Ids.make("McpTokenId"), "name", input.name, input.workspaceIds),

    // An MCP token creates no subscriptions, so there is nothing to remove with it.
    revokeMcpToken: (id) =>
      Schema.is(Ids.McpTokenId)(id)
        ? Effect.flatMap(now, (at) => Effect.flatMap(credentials.revokeGrant(id, at), orNotFound("mcp token"))).pipe(
          Effect.asVoid
        )
        : Effect.fail(notFound("mcp token"))
  })
})

export const layer: Layer.Layer<
  Provisioning,
  never,
  DirectoryStore | CredentialStore | SubscriptionStore | Transactor | SecretBox
> = Layer.effect(Provisioning, make)
