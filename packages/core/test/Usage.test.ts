/** The pure rules of usage, without a store: months, active entries, the plan's limit. */
import { assert, describe, it } from "@effect/vitest"
import type * as Ids from "../src/Ids.js"
import * as Usage from "../src/Usage.js"

const workspaceId = "ws_01test" as Ids.WorkspaceId
const projectId = "prj_01test" as Ids.ProjectId

describe("Usage", () => {
  it("a month is YYYY-MM with a month from 01 to 12", () => {
    for (const month of ["2026-01", "2026-12", "1999-09"]) assert.isTrue(Usage.isMonth(month), month)
    for (const month of ["2026-00", "2026-13", "2026-1", "26-01", "2026-01-01", " 2026-01", ""]) {
      assert.isFalse(Usage.isMonth(month), month)
    }
  })

  it("an action counts its member in the UTC month of its own instant, per project", () => {
    const at = new Date("2026-12-31T23:59:59.999Z")
    assert.deepStrictEqual(Usage.activeEntry(workspaceId, projectId, "member-1" as Ids.UserHash, at), {
      workspaceId,
      month: "2026-12",
      member: "prj_01test:member-1"
    })
    assert.strictEqual(
      Usage.activeEntry(workspaceId, projectId, "member-1" as Ids.UserHash, new Date("2027-01-01T00:00:00.000Z")).month,
      "2027-01"
    )
  })

  it("a month is over the plan above its limit, not at it", () => {
    assert.deepStrictEqual(Usage.usageOf("starter", "2026-06", 500), {
      month: "2026-06",
      plan: "starter",
      limit: 500,
      activeStreakers: 500,
      overLimit: false
    })
    assert.isTrue(Usage.usageOf("starter", "2026-06", 501).overLimit)
    assert.isFalse(Usage.usageOf("growth", "2026-06", 501).overLimit)
    assert.isTrue(Usage.usageOf("pro", "2026-06", 50_001).overLimit)
  })
})
