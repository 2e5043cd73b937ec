/**
 * Both app definitions (API key and OAuth 2) against the platform's own validator: the `validate`
 * command of `zapier-platform-core`'s handler, which runs `zapier-platform-schema` as
 * `zapier validate` does, and the schema package directly on the serialized definition.
 */
import { describe, expect, it } from "vitest"
import zapier from "zapier-platform-core"
import schema from "zapier-platform-schema"
import * as App from "../src/App.js"
import ApiKeyApp from "../src/index.js"
import OAuthApp from "../src/indexOAuth.js"

// The handler factory `zapier validate` runs; the package's types leave it out.
const { createAppHandler } = zapier as unknown as {
  createAppHandler: (app: object) => (event: object) => Promise<{ results: unknown }>
}

const command = (app: object, name: "validate" | "definition") =>
  createAppHandler(app)({ command: name, bundle: {} }).then((r) => r.results)

describe("app definition", () => {
  for (const [name, app] of [["API key", ApiKeyApp], ["OAuth 2", OAuthApp]] as const) {
    it(`${name}: the platform validator finds no error`, async () => {
      expect(await command(app, "validate")).toEqual([])
      const definition = await command(app, "definition")
      expect(schema.validateAppDefinition(definition as any).errors).toEqual([])
    })
  }

  it("the validator is live: a trigger without its noun, or with a bad key, is refused", async () => {
    const { noun: _noun, ...nounless } = App.withApiKey.triggers.milestoneAchieved
    const broken = { ...App.withApiKey, triggers: { ...App.withApiKey.triggers, milestoneAchieved: nounless } }
    expect(JSON.stringify(await command(broken, "validate"))).toContain("noun")
    const badKey = { ...App.withApiKey.triggers.streakBroken, key: "streak.broken" }
    const renamed = { ...App.withApiKey, triggers: { ...App.withApiKey.triggers, streakBroken: badKey } }
    expect(await command(renamed, "validate")).not.toEqual([])
  })

  it("the entries export the two authentications, with PKCE and auto refresh on the OAuth one", async () => {
    expect(ApiKeyApp).toBe(App.withApiKey)
    const definition = (await command(OAuthApp, "definition")) as any
    expect(definition.authentication.type).toBe("oauth2")
    expect(definition.authentication.oauth2Config).toMatchObject({ autoRefresh: true, enablePkce: true })
    expect(((await command(ApiKeyApp, "definition")) as any).authentication.type).toBe("custom")
  })

  it("has the seven REST-hook triggers, each with a program dropdown, a sample and every hook method", async () => {
    const definition = (await command(ApiKeyApp, "definition")) as any
    const hooks = Object.values(definition.triggers).filter((t: any) => t.operation.type === "hook") as Array<any>
    expect(hooks.map((t) => t.display.label).sort()).toEqual([
      "Freeze Earned",
      "Freeze Used",
      "Milestone Achieved",
      "Reward Unlocked",
      "Streak At Risk",
      "Streak Broken",
      "Streak Repaired"
    ])
    for (const t of hooks) {
      expect(Object.keys(t.operation)).toEqual(
        expect.arrayContaining(["perform", "performList", "performSubscribe", "performUnsubscribe", "sample"])
      )
      expect(t.operation.inputFields[0]).toMatchObject({ key: "programId", dynamic: "program.id.label" })
      expect(typeof t.operation.sample.id).toBe("string")
    }
    expect(definition.triggers.program.display.hidden).toBe(true)
    expect(definition.creates.recordMemberAction.operation.inputFields.map((f: any) => f.key)).toEqual([
      "programId",
      "userHash",
      "ts",
      "tz",
      "idempotencyKey",
      "test"
    ])
    expect(definition.searches.findMemberStreak.operation.inputFields[0].dynamic).toBe("program.id.label")
  })
})
