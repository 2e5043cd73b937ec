/**
 * A storage adapter, completed: an adapter implements the ports of `Ports.Storage`, and `layer`
 * adds what core builds on them (the directory, subscription, credential and experiment stores on
 * the `Catalog`; `IngestStore` and `StateStore` from the ports unless the adapter has its own).
 */
import { Context, Effect, Layer, Option } from "effect"
import * as IngestStore from "./IngestStore.js"
import * as CatalogStores from "./internal/catalogStores.js"
import {
  Catalog,
  CredentialStore,
  DirectoryStore,
  ExperimentStore,
  OAuthStore,
  type Storage,
  type Stores,
  SubscriptionStore
} from "./Ports.js"
import * as StateStore from "./StateStore.js"

/** Everything core reads and writes through: the ports, the stores on them, ingest's and state's stores. */
export type Complete = Stores | IngestStore.IngestStore | StateStore.StateStore

// The stores `make` lifted from the ports, so that a completed layer still tells them from an adapter's own.
const lifted = new WeakSet<object>()

/** Whether `store` (an `IngestStore` or `StateStore`) was lifted from the ports by `Storage.layer`, not the adapter's own. */
export const isLifted = (store: object): boolean => lifted.has(store)

const lift = <A extends object, R>(fromPorts: Effect.Effect<A, never, R>) =>
  Effect.tap(fromPorts, (store) => Effect.sync(() => lifted.add(store)))

/** The stores core builds on the ports in context, keeping an `IngestStore` or `StateStore` the adapter provides. */
export const make: Effect.Effect<Context.Context<Exclude<Complete, Storage>>, never, Storage> = Effect.gen(
  function*() {
    const context = yield* Effect.context<Storage>()
    const catalog = Context.get(context, Catalog)
    const ingest = yield* Option.match(
      Context.getOption(context as Context.Context<unknown>, IngestStore.IngestStore),
      {
        onSome: Effect.succeed,
        onNone: () => lift(IngestStore.fromPorts)
      }
    )
    const state = yield* Option.match(Context.getOption(context as Context.Context<unknown>, StateStore.StateStore), {
      onSome: Effect.succeed,
      onNone: () => lift(StateStore.fromPorts)
    })
    return Context.make(DirectoryStore, CatalogStores.directory(catalog)).pipe(
      Context.add(SubscriptionStore, CatalogStores.subscriptions(catalog)),
      Context.add(CredentialStore, CatalogStores.credentials(catalog)),
      Context.add(ExperimentStore, CatalogStores.experiments(catalog)),
      Context.add(OAuthStore, CatalogStores.oauth(catalog)),
      Context.add(IngestStore.IngestStore, ingest),
      Context.add(StateStore.StateStore, state)
    )
  }
)

/** An adapter's ports layer, completed with what core builds on them. */
export const layer = <E, R>(ports: Layer.Layer<Storage, E, R>): Layer.Layer<Complete, E, R> =>
  Layer.provideMerge(Layer.effectContext(make), ports)
