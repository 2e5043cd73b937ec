/**
 * An outage window over 10,000 broken streaks on Postgres (docs/streak-semantics.md#forgiveness):
 * one call restores them all, set-wise through the ports (rows locked, days read and rows saved a
 * batch at a time), with one `streak.repaired` message each for the program's subscription.
 */
import { assert, layer } from "@effect/vitest"
import { Calendar, Forgiveness, OutboxSignal, Policy, SecretBox, Services, Streak } from "@streaks/core"
import { StreakKey } from "@streaks/core/Domain"
import type { UserHash } from "@streaks/core/Ids"
import { StreakStore, SubscriptionStore } from "@streaks/core/Ports"
import { makeRow, makeSubscription, seedTenant } from "@streaks/storage-conformance/Fixtures"
import { Effect, Layer, TestClock } from "effect"
import { SqlClient } from "@effect/sql"
import * as PgStorage from "../src/PgStorage.js"
import * as PgTest from "../src/PgTest.js"

const MEMBERS = 10_000

const services = Services.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(SecretBox.layerEphemeral, OutboxSignal.layerNoop)),
  Layer.provideMerge(PgStorage.layer()),
  Layer.provideMerge(PgTest.layer)
)

layer(services, { timeout: "300 seconds" })("an outage window on Postgres", (it) => {
  it.effect(`restores ${MEMBERS} broken streaks in one call, each with one streak.repaired`, () =>
    Effect.gen(function*() {
      const streaks = yield* StreakStore
      const t = yield* seedTenant({ program: { status: "live" } })
      yield* (yield* SubscriptionStore).create(makeSubscription(t))
      const days = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"].map(Calendar.unsafeLocalDate)
      const summary = Streak.fromDays(days, "UTC", Policy.defaultPolicy)
      const keys = Array.from({ length: MEMBERS }, (_, i) =>
        new StreakKey({
          projectId: t.project.id,
          programId: t.program.id,
          userHash: `member-${i}` as UserHash,
          ledger: "live"
        }))
      // Each member kept 03-01..03-04, missed 03-05, and was told the streak broke.
      yield* streaks.save(keys.map((key) =>
        makeRow(key, {
          lastActiveDay: summary.lastActiveDay!,
          run: summary.run,
          best: summary.best,
          periodDays: 1,
          freezes: 0,
          timezone: "UTC",
          brokenNotifiedAfter: summary.lastActiveDay!
        })
      ))
      yield* streaks.addDays(keys.flatMap((key) => days.map((day) => ({ key, day }))))
      yield* TestClock.setTime(Date.parse("2026-03-06T12:00:00Z"))

      const started = performance.now()
      const outage = yield* (yield* Forgiveness.Forgiveness).addOutage(t.program.id, {
        start: "2026-03-05T10:00:00Z",
        end: "2026-03-05T14:00:00Z",
        reason: "database down"
      })
      const seconds = (performance.now() - started) / 1000
      console.log(`outage window over ${MEMBERS} broken streaks: ${seconds.toFixed(2)} s`)
      assert.strictEqual(outage.restored, MEMBERS)
      assert.isBelow(seconds, 30)

      const sql = yield* SqlClient.SqlClient
      const [messages] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM streaks_outbox
        WHERE type = 'streak.repaired' AND program_id = ${t.program.id}`
      assert.strictEqual(Number(messages!.n), MEMBERS)
      const [row] = yield* streaks.rows({ keys: [keys[0]!] })
      assert.deepStrictEqual([row!.run, row!.brokenNotifiedAfter], [4, undefined])
    }))
})
