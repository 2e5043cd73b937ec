/**
 * `@streaks/core/testing`: the in-memory reference adapter, the storage conformance suite every
 * adapter runs, and the test-data builders other packages' tests reuse.
 */
import * as MemoryStorage from "./MemoryStorage.js"

/** Every storage port in memory; each build of the layer starts empty. */
export const layerMemory = MemoryStorage.layer

export { storageConformance } from "./internal/conformance.js"
export {
  at,
  day,
  epoch,
  freshId,
  makeAction,
  makeApiKey,
  makeAttempt,
  makeExperiment,
  makeGrant,
  makeKey,
  makeMessage,
  makeMilestone,
  makeProgram,
  makeProject,
  makeRow,
  makeSubscription,
  makeUserHash,
  makeWorkspace,
  randomHex,
  seedProgram,
  seedTenant,
  type Tenant,
  withoutDue
} from "./internal/conformanceFixtures.js"
