/**
 * The app run by Zapier's own test harness (`createAppTester`) against the reference server on
 * Postgres: the connection test and label, each REST-hook trigger from subscribe to a real
 * delivery handed to `perform`, unsubscribe, samples, the action, the search, the errors in
 * Zapier's terms, and the subscriptions removed with the API key that created them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import zapier from "zapier-platform-core"
import App from "../src/index.js"
import type * as Triggers from "../src/Triggers.js"
import * as HookReceiver from "./support/HookReceiver.js"
import * as ReferenceServer from "./support/ReferenceServer.js"

const appTester = zapier.createAppTester(App)
const triggers = App.triggers as Record<string, any>

let server: ReferenceServer.Running
let receiver: HookReceiver.HookReceiver
let customer: ReferenceServer.Customer

const authData = () => ({ baseUrl: server.url, apiKey: customer.apiKey })

/** Zapier's error: a `z.errors.Error` or `ThrottledError` carries its details as JSON in the message. */
const details = (e: unknown) => {
  try {
    return JSON.parse((e as Error).message)
  } catch {
    return {}
  }
}

const rejection = async (p: Promise<unknown>) => {
  try {
    await p
  } catch (e) {
    return e as Error
  }
  throw new Error("expected a rejection")
}

beforeAll(async () => {
  server = await ReferenceServer.start()
  receiver = await HookReceiver.start()
  customer = await ReferenceServer.provision(server.url)
})

afterAll(async () => {
  await receiver?.close()
  await server?.dispose()
})

/** Subscribes `key`'s trigger through the app, as turning a Zap on does. */
const subscribe = async (key: string, programId: string, credentials = authData()) => {
  const targetUrl = receiver.targetUrl(`${key}-${Math.random().toString(36).slice(2)}`)
  const subscribeData = (await appTester(triggers[key].operation.performSubscribe, {
    authData: credentials,
    inputData: { programId },
    targetUrl
  })) as Triggers.Subscription
  receiver.secrets.set(targetUrl, subscribeData.secret)
  return { targetUrl, subscribeData }
}

/** The first delivery at `targetUrl`, checked signed, through the trigger's `perform`. */
const performed = async (key: string, targetUrl: string, subscribeData: Triggers.Subscription) => {
  const [caught] = await receiver.next(targetUrl)
  expect(caught!.verified).toBe(true)
  const records = (await appTester(triggers[key].operation.perform, {
    authData: authData(),
    inputData: { programId: subscribeData.programId },
    subscribeData,
    ...HookReceiver.hookBundle(caught!)
  })) as Array<any>
  expect(records).toHaveLength(1)
  // The record's id is the message id: the `webhook-id` of the delivery, the same on every retry.
  expect(records[0].id).toBe(caught!.headers["webhook-id"])
  expect(records[0].id).toMatch(/^msg_/)
  return records[0]
}

/** Every key of the static sample is in the live record, with a value of the same type. */
const expectShapeOfSample = (key: string, record: Record<string, unknown>) => {
  const sample = triggers[key].operation.sample as Record<string, unknown>
  for (const [field, value] of Object.entries(sample)) {
    expect(record, field).toHaveProperty(field)
    expect(typeof record[field], field).toBe(typeof value)
  }
}

describe("connection", () => {
  it("the test calls GET /v1/api/me and the label names the workspace and the key", async () => {
    const me = await appTester(App.authentication.test, { authData: authData() })
    expect(me).toMatchObject({ workspace: { id: customer.workspaceId, name: "Acme" }, credential: { type: "api_key" } })
    const label = await appTester(App.authentication.connectionLabel, { authData: authData(), inputData: me })
    expect(label).toBe(`Acme (API key ${customer.apiKeyId})`)
  })

  it("a refused API key is an ExpiredAuthError (the user reconnects)", async () => {
    const e = await rejection(
      appTester(App.authentication.test, { authData: { baseUrl: server.url, apiKey: "svc_api_wrong" } })
    )
    expect(e.name).toBe("ExpiredAuthError")
    expect(e.message).toContain("UNAUTHORIZED")
  })

  it("the program dropdown lists the programs with their project", async () => {
    const programs = (await appTester(triggers.program.operation.perform, { authData: authData() })) as Array<any>
    expect(programs.map((p) => p.label).sort()).toEqual([
      "Lessons (App, live)",
      "Reading (App, live)",
      "Workouts (App, live)"
    ])
    expect(programs.find((p) => p.id === customer.programId)).toMatchObject({
      name: "Lessons",
      eventKey: "lesson",
      status: "live",
      siteKey: customer.siteKey
    })
  })
})

describe("REST-hook triggers", () => {
  it("Milestone Achieved and Reward Unlocked: a member's first counted day reaches the 1-day milestone", async () => {
    const milestone = await subscribe("milestoneAchieved", customer.programId)
    const reward = await subscribe("rewardUnlocked", customer.programId)
    expect(milestone.subscribeData).toMatchObject({
      programId: customer.programId,
      url: milestone.targetUrl,
      eventTypes: ["milestone.achieved"]
    })
    expect(milestone.subscribeData.secret).toMatch(/^whsec_/)
    expect((await ReferenceServer.act(server.url, customer, "lesson", "climber")).status).toBe(202)

    const achieved = await performed("milestoneAchieved", milestone.targetUrl, milestone.subscribeData)
    expect(achieved).toMatchObject({
      type: "milestone.achieved",
      programId: customer.programId,
      siteKey: customer.siteKey,
      userHash: "climber",
      isTest: false,
      streak: { current: 1, best: 1 },
      milestone: { target: 1, msg: "Day one", rewardType: "coupon" }
    })
    expectShapeOfSample("milestoneAchieved", achieved)

    const unlocked = await performed("rewardUnlocked", reward.targetUrl, reward.subscribeData)
    expect(unlocked).toMatchObject({
      type: "reward.unlocked",
      userHash: "climber",
      reward: { type: "coupon", value: "WELCOME-5" }
    })
    expectShapeOfSample("rewardUnlocked", unlocked)
    // Each subscription hears only its own type.
    expect(receiver.caught.filter((c) => c.path === new URL(reward.targetUrl).pathname)).toHaveLength(1)
  })

  it("Streak At Risk and Streak Broken: the due checks after a missed today and a missed yesterday", async () => {
    const atRisk = await subscribe("streakAtRisk", customer.programId)
    const broken = await subscribe("streakBroken", customer.programId)
    await ReferenceServer.act(server.url, customer, "lesson", "risky", ReferenceServer.noonDaysAgo(1))
    await ReferenceServer.act(server.url, customer, "lesson", "lapsed", ReferenceServer.noonDaysAgo(2))
    const run = await ReferenceServer.admin(server.url, "/admin/jobs/due-checks")
    expect(run.body).toMatchObject({ atRisk: 1, broken: 1 })

    const today = new Date().toISOString().slice(0, 10)
    const risk = await performed("streakAtRisk", atRisk.targetUrl, atRisk.subscribeData)
    expect(risk).toMatchObject({
      type: "streak.at_risk",
      userHash: "risky",
      localDate: today,
      timezone: "UTC",
      streak: { current: 1, best: 1 }
    })
    expectShapeOfSample("streakAtRisk", risk)
    const ended = await performed("streakBroken", broken.targetUrl, broken.subscribeData)
    expect(ended).toMatchObject({
      type: "streak.broken",
      userHash: "lapsed",
      endedRun: 1,
      lastActiveDate: ReferenceServer.noonDaysAgo(2).slice(0, 10),
      streak: { current: 0, best: 1 }
    })
    expectShapeOfSample("streakBroken", ended)
  })

  it("Freeze Earned and Freeze Used: a policy with freezes, at ingest and at the due checks", async () => {
    const earned = await subscribe("freezeEarned", customer.freezeProgramId)
    const used = await subscribe("freezeUsed", customer.freezeProgramId)
    await ReferenceServer.act(server.url, customer, "workout", "earner", ReferenceServer.noonDaysAgo(1))
    await ReferenceServer.act(server.url, customer, "workout", "earner")
    const gained = await performed("freezeEarned", earned.targetUrl, earned.subscribeData)
    expect(gained).toMatchObject({
      type: "streak.freeze_earned",
      programId: customer.freezeProgramId,
      userHash: "earner",
      freezesAvailable: 2,
      streak: { current: 2, best: 2 },
      timezone: "UTC"
    })
    expectShapeOfSample("freezeEarned", gained)

    await ReferenceServer.act(server.url, customer, "workout", "skipper", ReferenceServer.noonDaysAgo(2))
    const run = await ReferenceServer.admin(server.url, "/admin/jobs/due-checks")
    expect(run.body.freezesUsed).toBe(1)
    const frozen = await performed("freezeUsed", used.targetUrl, used.subscribeData)
    const frozenDay = ReferenceServer.noonDaysAgo(1).slice(0, 10)
    expect(frozen).toMatchObject({
      type: "streak.freeze_used",
      userHash: "skipper",
      period: { start: frozenDay, end: frozenDay },
      freezesLeft: 0,
      timezone: "UTC"
    })
    expectShapeOfSample("freezeUsed", frozen)
  })

  it("Streak Repaired: a support agent repairs the member's missed yesterday", async () => {
    const repaired = await subscribe("streakRepaired", customer.repairProgramId)
    expect(repaired.subscribeData.eventTypes).toEqual(["streak.repaired"])
    await ReferenceServer.act(server.url, customer, "reading", "mender", ReferenceServer.noonDaysAgo(2))
    const yesterday = ReferenceServer.noonDaysAgo(1).slice(0, 10)
    const repair = await ReferenceServer.call(
      server.url,
      `/v1/api/programs/${customer.repairProgramId}/members/mender/repairs`,
      { headers: { authorization: `Bearer ${customer.apiKey}` }, body: { period: yesterday, reason: "ticket 7" } }
    )
    expect(repair.status).toBe(200)
    const made = await performed("streakRepaired", repaired.targetUrl, repaired.subscribeData)
    expect(made).toMatchObject({
      type: "streak.repaired",
      programId: customer.repairProgramId,
      userHash: "mender",
      period: { start: yesterday, end: yesterday },
      current: repair.body.current,
      streak: { current: repair.body.current, best: repair.body.best }
    })
    expect(made.current).toBe(2)
    expectShapeOfSample("streakRepaired", made)

    const listed = (await appTester(triggers.streakRepaired.operation.performList, {
      authData: authData(),
      inputData: { programId: customer.repairProgramId }
    })) as Array<any>
    expect(listed).toEqual([expect.objectContaining({ id: made.id, type: "streak.repaired", userHash: "mender" })])
  })

  it("performList gives the recent deliveries of the type, newest first, or one made-up sample", async () => {
    const listed = (await appTester(triggers.milestoneAchieved.operation.performList, {
      authData: authData(),
      inputData: { programId: customer.programId }
    })) as Array<any>
    expect(listed.length).toBeGreaterThanOrEqual(1)
    expect(listed.every((r) => r.type === "milestone.achieved" && r.id.startsWith("msg_"))).toBe(true)
    expect(listed.map((r) => r.userHash)).toContain("climber")
    for (const r of listed) expectShapeOfSample("milestoneAchieved", r)

    // No broken streak in the freeze program was delivered to anyone: the synthetic sample.
    const synthetic = (await appTester(triggers.streakBroken.operation.performList, {
      authData: authData(),
      inputData: { programId: customer.freezeProgramId }
    })) as Array<any>
    expect(synthetic).toHaveLength(1)
    expect(synthetic[0]).toMatchObject({ id: "msg_sample", type: "streak.broken", programId: customer.freezeProgramId })
    expectShapeOfSample("streakBroken", synthetic[0])
  })

  it("perform ignores a body that is not a delivery of its type", async () => {
    const records = await appTester(triggers.streakBroken.operation.perform, {
      authData: authData(),
      inputData: { programId: customer.programId },
      cleanedRequest: { id: "msg_x", type: "milestone.achieved", timestamp: "2026-01-01T00:00:00.000Z", data: {} }
    })
    expect(records).toEqual([])
  })

  it("unsubscribe removes the subscription: no more deliveries, and a second removal finds nothing", async () => {
    const hook = await subscribe("milestoneAchieved", customer.programId)
    const control = await subscribe("milestoneAchieved", customer.programId)
    const removed = await appTester(triggers.milestoneAchieved.operation.performUnsubscribe, {
      authData: authData(),
      inputData: { programId: customer.programId },
      subscribeData: hook.subscribeData
    })
    expect(removed).toEqual({ id: hook.subscribeData.id })
    await ReferenceServer.act(server.url, customer, "lesson", "after-unsubscribe")
    // The other subscription hears the event, so it fired and was dispatched; the removed one did not.
    await receiver.next(control.targetUrl)
    await ReferenceServer.admin(server.url, "/admin/jobs/deliveries")
    expect(receiver.caught.filter((c) => c.path === new URL(hook.targetUrl).pathname)).toEqual([])
    const again = await ReferenceServer.call(server.url, `/v1/api/hooks/${hook.subscribeData.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${customer.apiKey}` }
    })
    expect(again.status).toBe(404)
    // Zapier may unsubscribe a hook that is already gone: that is no error.
    expect(
      await appTester(triggers.milestoneAchieved.operation.performUnsubscribe, {
        authData: authData(),
        subscribeData: hook.subscribeData
      })
    ).toEqual({ id: hook.subscribeData.id })
  })
})

describe("Record Member Action and Find Member Streak", () => {
  const action = () => (App.creates as Record<string, any>).recordMemberAction.operation.perform
  const search = () => (App.searches as Record<string, any>).findMemberStreak.operation.perform

  it("the action counts (the member read shows it), a repeated idempotency key counts once", async () => {
    const ts = ReferenceServer.noonDaysAgo(1)
    const first = await appTester(action(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "zapped", ts, tz: "UTC", idempotencyKey: "run-1" }
    })
    expect(first).toMatchObject({ programId: customer.programId, userHash: "zapped", counted: true, duplicate: false })
    const repeat = await appTester(action(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "zapped", ts, tz: "UTC", idempotencyKey: "run-1" }
    })
    expect(repeat).toMatchObject({ counted: true })
    const today = await appTester(action(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "zapped", test: "false" }
    })
    expect(today).toMatchObject({ counted: true, duplicate: false })
    const member = await ReferenceServer.call(server.url, `/v1/api/programs/${customer.programId}/members/zapped`, {
      headers: { authorization: `Bearer ${customer.apiKey}` }
    })
    expect(member.body).toMatchObject({ current: 2, best: 2, todayDone: true, isLive: true })
  })

  it("a test action counts on the test ledger only", async () => {
    const answer = await appTester(action(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "tester", test: true }
    })
    expect(answer).toMatchObject({ counted: true })
    const live = await ReferenceServer.call(server.url, `/v1/api/programs/${customer.programId}/members/tester`, {
      headers: { authorization: `Bearer ${customer.apiKey}` }
    })
    expect(live.body).toMatchObject({ current: 0, best: 0 })
  })

  it("the search finds the member's streak, and a member never seen with zeros", async () => {
    const found = (await appTester(search(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "zapped" }
    })) as Array<any>
    expect(found).toEqual([
      expect.objectContaining({
        id: `${customer.programId}:zapped`,
        programId: customer.programId,
        userHash: "zapped",
        current: 2,
        best: 2,
        todayDone: true,
        pending: false,
        isLive: true
      })
    ])
    const unknown = (await appTester(search(), {
      authData: authData(),
      inputData: { programId: customer.programId, userHash: "nobody" }
    })) as Array<any>
    expect(unknown).toEqual([expect.objectContaining({ current: 0, best: 0, lastActiveDate: null })])
  })

  it("a client mistake is a z.errors.Error with the server's code, and nothing is counted", async () => {
    const e = await rejection(
      appTester(action(), {
        authData: authData(),
        inputData: { programId: customer.programId, userHash: "someone@example.com" }
      })
    )
    expect(e.name).toBe("AppError")
    expect(details(e)).toMatchObject({ code: "INVALID_BODY", status: 400 })
    const missing = await rejection(
      appTester(search(), { authData: authData(), inputData: { programId: "prg_unknown", userHash: "zapped" } })
    )
    expect(details(missing)).toMatchObject({ code: "NOT_FOUND", status: 404 })
  })
})

describe("disconnecting", () => {
  it("revoking the API key removes every subscription it created, and its calls then ask to reconnect", async () => {
    const other = await ReferenceServer.admin(server.url, `/admin/workspaces/${customer.workspaceId}/api-keys`, {
      name: "revoked-later"
    })
    const doomed = { baseUrl: server.url, apiKey: other.body.key as string }
    const hooks = [
      await subscribe("milestoneAchieved", customer.programId, doomed),
      await subscribe("streakBroken", customer.programId, doomed)
    ]
    const kept = await subscribe("milestoneAchieved", customer.programId)
    expect(
      (await ReferenceServer.admin(server.url, `/admin/api-keys/${other.body.id}`, undefined, "DELETE")).status
    ).toBe(204)

    await ReferenceServer.act(server.url, customer, "lesson", "after-revoke")
    await receiver.next(kept.targetUrl)
    await ReferenceServer.admin(server.url, "/admin/jobs/deliveries")
    for (const hook of hooks) {
      expect(receiver.caught.filter((c) => c.path === new URL(hook.targetUrl).pathname)).toEqual([])
      // Subscriptions belong to the workspace: the other key could delete them, were they there.
      const gone = await ReferenceServer.call(server.url, `/v1/api/hooks/${hook.subscribeData.id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${customer.apiKey}` }
      })
      expect(gone.status).toBe(404)
    }
    const e = await rejection(
      appTester(triggers.milestoneAchieved.operation.performUnsubscribe, {
        authData: doomed,
        subscribeData: hooks[0]!.subscribeData
      })
    )
    expect(e.name).toBe("ExpiredAuthError")
  })
})
