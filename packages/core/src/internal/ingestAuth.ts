/**
 * Who may call which ingest door (docs/api.md#order-of-checks, steps 3, 5 and 6): origin
 * allowed-lists, the server token, the webhook secret of the counting program, and the program an
 * action feeds.
 */
import { Effect, Either, Exit, Option } from "effect"
import * as Credentials from "../Credentials.js"
import type { Program, Project } from "../Domain.js"
import {
  ForbiddenOrigin,
  InvalidBody,
  InvalidSiteKey,
  InvalidWidgetKind,
  NotFound,
  ServerTokenRequired,
  SiteKeyMismatch,
  type StorageError,
  WebhookSecretRequired
} from "../Errors.js"
import type { Action } from "../EventInput.js"
import type { ProgramId } from "../Ids.js"
import type { DirectoryStore } from "../Ports.js"
import { normalizeOrigin } from "../Provisioning.js"
import * as Finished from "../Finished.js"

/** How a call reached the pipeline, with the credentials its door carries (docs/api.md#who-may-call). */
export type Auth =
  | { readonly door: "browser"; readonly origin: string | undefined; readonly serverToken: string | undefined }
  | { readonly door: "server"; readonly serverToken: string | undefined }
  | { readonly door: "webhook"; readonly secret: string | undefined; readonly urlSiteKey: string }
  /** Customer REST: the REST layer has already checked that the credential reaches the program. */
  | { readonly door: "api"; readonly programId: ProgramId }

const SITE_KEY = /^site_\S{1,59}$/

// The directory is passed in rather than read from the context: these run on every request, and
// providing a service copies the whole context.
type Directory = DirectoryStore["Type"]

/**
 * The project of a siteKey, else INVALID_SITE_KEY (step 3 of docs/api.md#order-of-checks, also
 * `/v1/state` and aliases).
 */
export const resolveProject = (
  directory: Directory,
  siteKey: string
): Effect.Effect<Project, InvalidSiteKey | StorageError> =>
  // A malformed key cannot exist: answer without a storage round trip. On a cache hit the answer
  // is a finished `Exit` (see `Finished`).
  Finished.andThen(
    SITE_KEY.test(siteKey) ? directory.projectBySiteKey(siteKey as Project["siteKey"]) : Effect.succeedNone,
    projectOrInvalid
  )

// Made once rather than per call (`Option.match` with an object literal allocates its handlers).
const projectOrInvalid = Option.match({
  onNone: () => Exit.fail(new InvalidSiteKey({ message: "unknown siteKey" })),
  onSome: (project: Project) => Exit.succeed(project)
})
const programOrInvalid = Option.match({
  onNone: () => Exit.fail(new InvalidWidgetKind({ message: "no program of this project counts this event" })),
  onSome: (program: Program) => Exit.succeed(program)
})

const HTTPS_WILDCARD = "https://*"

/**
 * Whether a browser `Origin` is on the allowed list: exactly (`scheme://host[:port]`, compared in
 * the browser's normal form, so case and default ports do not matter) or under a
 * `https://*.example.com[:port]` wildcard, which matches any subdomain depth but not the apex.
 */
export const originAllowed = (origin: string, allowed: ReadonlyArray<string>): boolean => {
  if (origin.includes("*")) return false
  const o = normalizeOrigin(origin)
  if (o === undefined) return false // includes the opaque origin "null"
  return allowed.some((entry) => {
    const e = normalizeOrigin(entry)
    if (e === undefined) return false
    if (!e.startsWith(HTTPS_WILDCARD)) return e === o
    const suffix = e.slice(HTTPS_WILDCARD.length) // ".example.com[:port]"
    return o.startsWith("https://") && o.length > "https://".length + suffix.length && o.endsWith(suffix)
  })
}

const allowed = { deprecation: false } as const
const deprecated = { deprecation: true } as const

/**
 * The browser rule of `/v1/e` and `/v1/state` (docs/api.md#who-may-call): an `Origin` must be
 * allowed; a call without one must carry the project's server token, unless the deprecated
 * `legacyNoOriginIngest` lets it through (then the answer says `deprecation`).
 */
export const browserAuth = (
  project: Project,
  origin: string | undefined,
  serverToken: string | undefined
): Either.Either<{ readonly deprecation: boolean }, ForbiddenOrigin | ServerTokenRequired> => {
  // An `Either` (itself an effect), so that the read path can check it without an operation.
  if (origin !== undefined) {
    return originAllowed(origin, project.allowedOrigins)
      ? Either.right(allowed)
      : Either.left(new ForbiddenOrigin({ message: "origin is not in the project's allowed origins" }))
  }
  if (Credentials.matches(serverToken, project.serverTokenHash)) return Either.right(allowed)
  return project.legacyNoOriginIngest
    ? Either.right(deprecated)
    : Either.left(new ServerTokenRequired({ message: "a call without Origin needs X-Streak-Server-Token" }))
}

const missingEvent = () => new InvalidBody({ message: "event: is missing" })

type Authorized = { readonly program: Program; readonly deprecation: boolean }

/** Step 6: the program counting exactly this event key, else INVALID_WIDGET_KIND. */
export const programOf = (
  directory: Directory,
  project: Project,
  event: string
): Effect.Effect<Program, InvalidWidgetKind | StorageError> =>
  Finished.andThen(directory.programByEventKey(project.id, event), programOrInvalid)

/** The program of the action's event (step 6), after checking that it names one. */
const programFor = (
  directory: Directory,
  project: Project,
  action: Action,
  deprecation: boolean
): Effect.Effect<Authorized, InvalidBody | InvalidWidgetKind | StorageError> =>
  action.event === undefined
    ? Exit.fail(missingEvent())
    : Finished.andThen(programOf(directory, project, action.event), (program) => Exit.succeed({ program, deprecation }))

export type AuthError =
  | InvalidBody
  | SiteKeyMismatch
  | ForbiddenOrigin
  | ServerTokenRequired
  | WebhookSecretRequired
  | InvalidWidgetKind
  | NotFound

/**
 * Steps 3, 5 and 6 of docs/api.md#order-of-checks for one door: the program the action feeds, or
 * the first failure. Plain `flatMap`s over checks that are values, not a generator: every action
 * runs this. Checks fail with finished exits and a cached program is one, so on a warm cache the
 * answer is a finished `Exit` (see `Finished`).
 */
export const authorize = (
  directory: Directory,
  project: Project,
  action: Action,
  auth: Auth
): Effect.Effect<Authorized, AuthError | StorageError> => {
  switch (auth.door) {
    case "browser": {
      const access = browserAuth(project, auth.origin, auth.serverToken)
      if (Either.isLeft(access)) return Exit.fail(access.left)
      return programFor(directory, project, action, access.right.deprecation)
    }
    case "server": {
      if (!Credentials.matches(auth.serverToken, project.serverTokenHash)) {
        return Exit.fail(new ServerTokenRequired({ message: "X-Streak-Server-Token is missing or wrong" }))
      }
      return programFor(directory, project, action, false)
    }
    case "webhook": {
      if ((action.siteKey !== undefined && action.siteKey !== auth.urlSiteKey) || project.siteKey !== auth.urlSiteKey) {
        return Exit.fail(new SiteKeyMismatch({ message: "siteKey in the body differs from the URL's" }))
      }
      if (action.event === undefined) return Exit.fail(missingEvent())
      return Finished.andThen(directory.programByEventKey(project.id, action.event), (found) => {
        const program = Option.getOrUndefined(found)
        // Unknown event and wrong secret look the same, so the secret guards the event keys too.
        return program === undefined || !Credentials.matches(auth.secret, program.webhookSecretHash)
          ? Exit.fail(new WebhookSecretRequired({ message: "X-Streak-Webhook-Secret is missing or wrong" }))
          : Exit.succeed({ program, deprecation: false })
      })
    }
    case "api":
      return Finished.andThen(directory.program(auth.programId), (found) => {
        const program = Option.getOrUndefined(found)
        return program === undefined || program.projectId !== project.id
          ? Exit.fail(new NotFound({ message: "program not found" }))
          : Exit.succeed({ program, deprecation: false })
      })
  }
}
