/** The `streaks` command turns V8's allocation-site pretenuring off unless node's flags chose. */
import { assert, describe, it } from "@effect/vitest"
import * as HeapTuning from "../src/HeapTuning.js"

describe("HeapTuning.wanted", () => {
  it("turns pretenuring off by default, whatever else node was given", () => {
    assert.isTrue(HeapTuning.wanted([]))
    assert.isTrue(HeapTuning.wanted(["--max-semi-space-size=8", "--heap-growing-percent=50"]))
    assert.isTrue(HeapTuning.wanted(["--trace-gc-nvp", "--trace-pretenuring"]))
  })

  it("leaves it to node's flags when they set it, either way and in either spelling", () => {
    assert.isFalse(HeapTuning.wanted(["--allocation-site-pretenuring"]))
    assert.isFalse(HeapTuning.wanted(["--no-allocation-site-pretenuring"]))
    assert.isFalse(HeapTuning.wanted(["--max-semi-space-size=8", "--allocation_site_pretenuring"]))
    assert.isFalse(HeapTuning.wanted(["--noallocation-site-pretenuring"]))
  })
})
