/**
 * Outbound event subscriptions of the customer REST API
 * (docs/api.md#post-hooks-and-delete-hooksid): a URL that receives a program's events, signed with
 * the subscription's own `whsec_…` secret. A subscription belongs to the workspace, remembers the
 * credential that created it (revoking that credential removes it), and creating or removing one
 * ends the program's running Proof experiment, since the experiment would otherwise compare groups
 * under changed conditions. A URL must reach the public internet: a host that is, or resolves to, a
 * loopback, private, link-local, shared, multicast or reserved address is refused (`IpAddress`),
 * unless the operator allows insecure URLs for development.
 */
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Credentials from "./Credentials.js"
import { type CredentialRef, OutboundEventType, Subscription } from "./Domain.js"
import { InvalidBody, NotFound, type StorageError } from "./Errors.js"
import * as Ids from "./Ids.js"
import * as IpAddress from "./IpAddress.js"
import { OutboxSignal } from "./OutboxSignal.js"
import { DirectoryStore, ExperimentStore, type MessageHistory, Outbox, SubscriptionStore, Transactor } from "./Ports.js"
import { SecretBox } from "./SecretBox.js"

export interface CreateSubscriptionInput {
  readonly programId: string
  readonly url: string
  readonly eventTypes: ReadonlyArray<string>
}

/** A subscription as the API shows it: never with its secret, except once at creation. */
export interface SubscriptionView {
  readonly id: Ids.SubscriptionId
  readonly programId: Ids.ProgramId
  readonly url: string
  readonly eventTypes: ReadonlyArray<OutboundEventType>
  readonly createdAt: Date
}

export interface CreatedSubscription extends SubscriptionView {
  /** `whsec_…`, shown this once; deliveries are signed with it (Standard Webhooks). */
  readonly secret: string
}

export interface SubscriptionOptions {
  /**
   * Operator setting (`STREAKS_ALLOW_INSECURE_WEBHOOK_URLS`), for development and tests: allow
   * `http://localhost` / `127.0.0.1`, and hosts that are not on the public internet.
   */
  readonly allowInsecureUrls: boolean
}

/**
 * Resolves a URL's host name to its addresses when a subscription is created, so that a name that
 * points into the operator's network is refused at once. `None`: not resolved (no resolver); an
 * empty list: the name does not resolve. Core does no DNS itself: the default resolves nothing,
 * and only literal addresses are checked; the server provides the system resolver. Deliveries
 * check the address again when they connect, so a name that changes later gains nothing.
 */
export class HostResolver extends Context.Reference<HostResolver>()("@streaks/core/Subscriptions/HostResolver", {
  defaultValue: () => ({
    resolve: (_host: string): Effect.Effect<Option.Option<ReadonlyArray<string>>> => Effect.succeed(Option.none())
  })
}) {}

export class Subscriptions extends Context.Tag("@streaks/core/Subscriptions")<Subscriptions, {
  /**
   * Subscribes `url` to `eventTypes` of a program the principal reaches (else NotFound), and ends
   * the program's running experiment in the same transaction.
   */
  readonly create: (
    principal: Credentials.Principal,
    input: CreateSubscriptionInput,
    options: SubscriptionOptions
  ) => Effect.Effect<CreatedSubscription, InvalidBody | NotFound | StorageError>
  /**
   * Removes a subscription of a workspace the principal reaches, whichever credential created it
   * (subscriptions belong to the workspace), and ends the program's running experiment. Unknown or
   * out of reach: NotFound.
   */
  readonly remove: (principal: Credentials.Principal, id: string) => Effect.Effect<void, NotFound | StorageError>
  /** The subscriptions of a program the principal reaches, oldest first, without secrets. */
  readonly list: (
    principal: Credentials.Principal,
    programId: string
  ) => Effect.Effect<ReadonlyArray<SubscriptionView>, NotFound | StorageError>
  /** Every subscription of the principal's workspaces, oldest first, with who created it. */
  readonly listAll: (principal: Credentials.Holder) => Effect.Effect<ReadonlyArray<Hook>, StorageError>
  /** The subscription's recent deliveries (`deliveryLogSize` messages at most), newest first. */
  readonly deliveries: (
    principal: Credentials.Holder,
    id: string
  ) => Effect.Effect<ReadonlyArray<MessageHistory>, NotFound | StorageError>
  /**
   * Sends one of the subscription's messages again, as soon as the dispatcher can (it keeps its
   * `webhook-id`, so a receiver that saw it deduplicates). NotFound for a subscription out of reach
   * or a message that is not the subscription's.
   */
  readonly redeliver: (
    principal: Credentials.Holder,
    id: string,
    messageId: string
  ) => Effect.Effect<Subscription, NotFound | StorageError>
}>() {}

/** A subscription as the list of every hook shows it. */
export interface Hook extends SubscriptionView {
  readonly createdBy: CredentialRef
}

/** How many recent messages a subscription's deliveries log shows. */
export const deliveryLogSize = 50

const invalid = (message: string) => new InvalidBody({ message })
const notFound = new NotFound({ message: "subscription not found" })
const localHosts = new Set(["localhost", "127.0.0.1"])

const notPublic = (host: string) =>
  invalid(
    `url: ${host} is not a public internet address (loopback, private, link-local, shared, multicast or reserved)`
  )

/** Whether a host name can only ever mean this machine (RFC 6761), whatever DNS says. */
const isLocalName = (host: string) => {
  const name = host.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

/**
 * HTTPS only, to a host that is not a non-public IP address nor `localhost`; plain HTTP to this
 * machine, and any host, only when the operator allows insecure URLs
 * (docs/webhooks.md#only-the-public-internet). Names are not resolved here (see `HostResolver`).
 */
export const validUrl = (url: string, options: SubscriptionOptions): Effect.Effect<string, InvalidBody> => {
  if (url.length > 2048) return Effect.fail(invalid("url must be at most 2048 characters"))
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Effect.fail(invalid("url must be an absolute HTTPS URL"))
  }
  if (parsed.protocol === "https:" && parsed.hostname !== "") {
    if (options.allowInsecureUrls) return Effect.succeed(url)
    const range = IpAddress.classify(parsed.hostname)
    const blocked = Option.isSome(range) ? range.value !== "public" : isLocalName(parsed.hostname)
    return blocked ? Effect.fail(notPublic(parsed.hostname)) : Effect.succeed(url)
  }
  if (parsed.protocol === "http:" && options.allowInsecureUrls && localHosts.has(parsed.hostname)) {
    return Effect.succeed(url)
  }
  return Effect.fail(invalid(
    options.allowInsecureUrls
      ? "url must be HTTPS (or http://localhost / http://127.0.0.1)"
      : "url must be HTTPS"
  ))
}

/** Non-empty, each one of the four outbound types; duplicates collapse, order is kept. */
export const validEventTypes = (
  types: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<OutboundEventType>, InvalidBody> => {
  if (types.length === 0) return Effect.fail(invalid("eventTypes must name at least one event type"))
  const known = OutboundEventType.literals as ReadonlyArray<string>
  const unknown = types.find((t) => !known.includes(t))
  return unknown !== undefined
    ? Effect.fail(invalid(`eventTypes: unknown type "${unknown}" (expected ${known.join(", ")})`))
    : Effect.succeed([...new Set(types)] as ReadonlyArray<OutboundEventType>)
}

const view = (s: Subscription): SubscriptionView => ({
  id: s.id,
  programId: s.programId,
  url: s.url,
  eventTypes: s.eventTypes,
  createdAt: s.createdAt
})

export const make = Effect.gen(function*() {
  const directory = yield* DirectoryStore
  const store = yield* SubscriptionStore
  const experiments = yield* ExperimentStore
  const transactor = yield* Transactor
  const box = yield* SecretBox
  const resolver = yield* HostResolver
  const outbox = yield* Outbox
  const signal = yield* OutboxSignal

  const reachable = (principal: Credentials.Holder, id: string) =>
    Effect.flatMap(
      store.get(Ids.unsafe("SubscriptionId", id)),
      (found) =>
        Option.isNone(found) || !principal.workspaceIds.includes(found.value.workspaceId)
          ? Effect.fail(notFound)
          : Effect.succeed(found.value)
    )

  /** A host name must resolve, and only to public addresses (literal addresses were checked by `validUrl`). */
  const publicHost = (url: string, options: SubscriptionOptions): Effect.Effect<void, InvalidBody> => {
    const host = new URL(url).hostname
    if (options.allowInsecureUrls || Option.isSome(IpAddress.classify(host))) return Effect.void
    return Effect.flatMap(resolver.resolve(host), (resolved) => {
      if (Option.isNone(resolved)) return Effect.void
      if (resolved.value.length === 0) return Effect.fail(invalid(`url: ${host} does not resolve`))
      return resolved.value.every(IpAddress.isPublic) ? Effect.void : Effect.fail(notPublic(host))
    })
  }

  const reach = (principal: Credentials.Principal, programId: string) =>
    Effect.provideService(Credentials.reach(principal, programId), DirectoryStore, directory)

  return Subscriptions.of({
    create: (principal, input, options) =>
      Effect.gen(function*() {
        const url = yield* validUrl(input.url, options)
        const eventTypes = yield* validEventTypes(input.eventTypes)
        const { program, project } = yield* reach(principal, input.programId)
        // After the reach check: a caller learns nothing about names for programs it cannot reach.
        yield* publicHost(url, options)
        const secret = Credentials.generate("subscription")
        const createdAt = DateTime.toDateUtc(yield* DateTime.now)
        const subscription = new Subscription({
          id: yield* Ids.make("SubscriptionId"),
          workspaceId: project.workspaceId,
          projectId: project.id,
          programId: program.id,
          url,
          eventTypes,
          secretSealed: box.seal(secret),
          createdBy: principal.credential,
          createdAt
        })
        yield* transactor.withTransaction(
          Effect.zipRight(store.create(subscription), experiments.end(program.id, createdAt))
        )
        return { ...view(subscription), secret }
      }),

    remove: (principal, id) =>
      Effect.gen(function*() {
        const found = yield* store.get(Ids.unsafe("SubscriptionId", id))
        if (Option.isNone(found) || !principal.workspaceIds.includes(found.value.workspaceId)) {
          return yield* notFound
        }
        const at = DateTime.toDateUtc(yield* DateTime.now)
        yield* transactor.withTransaction(Effect.gen(function*() {
          // Removed concurrently by someone else: the caller's delete found nothing to delete.
          const removed = yield* store.remove(found.value.id)
          if (Option.isNone(removed)) return yield* notFound
          yield* experiments.end(removed.value.programId, at)
        }))
      }),

    list: (principal, programId) =>
      Effect.gen(function*() {
        const { program } = yield* reach(principal, programId)
        // The port indexes subscriptions by (program, type); four reads cover every type.
        const perType = yield* Effect.forEach(OutboundEventType.literals, (type) => store.forEvent(program.id, type))
        const byId = new Map(perType.flat().map((s) => [s.id, s]))
        return [...byId.values()]
          .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
          .map(view)
      }),

    listAll: (principal) =>
      Effect.map(store.ofWorkspaces(principal.workspaceIds), (found) =>
        [...found]
          .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
          .map((s) => ({ ...view(s), createdBy: s.createdBy }))),

    deliveries: (principal, id) =>
      Effect.flatMap(reachable(principal, id), (s) => outbox.ofSubscription(s.id, deliveryLogSize)),

    redeliver: (principal, id, messageId) =>
      Effect.gen(function*() {
        const subscription = yield* reachable(principal, id)
        const now = DateTime.toDateUtc(yield* DateTime.now)
        const found = yield* outbox.redeliver(subscription.id, Ids.unsafe("MessageId", messageId), now)
        if (!found) return yield* new NotFound({ message: "message not found" })
        yield* signal.notify
        return subscription
      })
  })
})

export const layer: Layer.Layer<
  Subscriptions,
  never,
  DirectoryStore | SubscriptionStore | ExperimentStore | Transactor | SecretBox | Outbox | OutboxSignal
> = Layer.effect(Subscriptions, make)
