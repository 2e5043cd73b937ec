/**
 * `@streaks/core/testing`: the in-memory reference adapter, the storage conformance suite every
 * adapter runs, the test-data builders other packages' tests reuse, and reads of one record to
 * inspect what a test stored (the ports read in batches).
 */
import * as MemoryStorage from "./MemoryStorage.js"

/** Every storage port in memory, completed with what core builds on them; each build of the layer starts empty. */
export const layerMemory = MemoryStorage.layer

export { storageConformance } from "./internal/conformance.js"
export {
  achievementsOf,
  at,
  day,
  epoch,
  freshId,
  makeAchievement,
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
  memberOf,
  randomHex,
  rowOf,
  seedProgram,
  seedTenant,
  type Tenant,
  withoutDue
} from "./internal/conformanceFixtures.js"
