/**
 * `streaks/pure-domain`, the ESLint rule that keeps core's pure domain pure
 * (docs/architecture.md#the-pure-domain-and-the-services). A module on the pure list may import
 * only other modules on the list (type imports too: a type of a port module is still a dependency
 * on the port) and the packages the list allows; it may not define or reach services: no
 * `Context`, `Layer` or the other service and concurrency modules of `effect`, no `Effect.Service`
 * or `Effect.Tag`, no running of effects.
 *
 * Options: `{ pure: [absolute paths of the pure modules], packages: [packages they may import] }`.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"

/** Modules of `effect` that define or run services, state or concurrency: none of them is a rule. */
const serviceModules = new Set([
  "Cache",
  "Channel",
  "Console",
  "Context",
  "Deferred",
  "Fiber",
  "FiberHandle",
  "FiberMap",
  "FiberRef",
  "FiberRefs",
  "FiberSet",
  "KeyedPool",
  "Layer",
  "Logger",
  "Mailbox",
  "ManagedRuntime",
  "Metric",
  "Pool",
  "PubSub",
  "Queue",
  "RcMap",
  "RcRef",
  "Ref",
  "Reloadable",
  "Request",
  "RequestResolver",
  "Resource",
  "Runtime",
  "Schedule",
  "Scope",
  "ScopedCache",
  "Sink",
  "Stream",
  "SubscriptionRef",
  "Supervisor",
  "SynchronizedRef",
  "Tracer"
])

/** Members of `Effect` that define a service or run an effect. */
const serviceMembers = /^(Service|Tag|run(Sync|SyncExit|Promise|PromiseExit|Fork|Callback))$/

/** Why a module is not pure, read from its source, for the message. */
const reasonOf = (file) => {
  if (!existsSync(file)) return "is not on the pure list"
  const source = readFileSync(file, "utf8")
  if (/\bContext\.(Tag|GenericTag|Reference)\b|\bEffect\.(Service|Tag)\b/.test(source)) return "defines a Context.Tag"
  if (/\bLayer\.[a-z]/.test(source)) return "builds a Layer"
  return "is not on the pure list"
}

/** The `.ts` file a relative import names (`./Calendar.js` → `Calendar.ts`). */
const targetOf = (importer, source) => {
  const path = resolve(dirname(importer), source)
  return path.endsWith(".js") ? `${path.slice(0, -3)}.ts` : path.endsWith(".ts") ? path : `${path}.ts`
}

const packageOf = (source) => {
  if (source.startsWith("node:")) return source
  const parts = source.split("/")
  return source.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]
}

/** @type {import("eslint").Rule.RuleModule} */
const rule = {
  meta: {
    type: "problem",
    docs: { description: "A module of the pure domain imports only pure modules and defines or reaches no service." },
    schema: [{
      type: "object",
      properties: {
        pure: { type: "array", items: { type: "string" } },
        packages: { type: "array", items: { type: "string" } }
      },
      required: ["pure", "packages"],
      additionalProperties: false
    }],
    messages: {
      impureModule:
        "A pure module imports '{{source}}', which {{reason}} (docs/architecture.md#the-pure-domain-and-the-services).",
      impurePackage: "A pure module imports the package '{{source}}', which pure modules may not use.",
      serviceModule: "A pure module imports '{{name}}' of effect, which defines or runs services.",
      serviceMember: "A pure module uses 'Effect.{{name}}', which defines a service or runs an effect."
    }
  },
  create(context) {
    const [{ packages, pure }] = context.options
    const pureSet = new Set(pure.map((file) => resolve(file)))
    const allowed = new Set(packages)
    const file = resolve(context.filename)
    if (!pureSet.has(file)) return {}

    const checkEffectName = (node, name) => {
      if (serviceModules.has(name)) context.report({ node, messageId: "serviceModule", data: { name } })
    }

    const checkSource = (node, source, specifiers) => {
      if (typeof source !== "string") return
      if (source.startsWith(".")) {
        const target = targetOf(file, source)
        if (!pureSet.has(target)) {
          context.report({ node, messageId: "impureModule", data: { source, reason: reasonOf(target) } })
        }
        return
      }
      const name = packageOf(source)
      if (!allowed.has(name)) {
        context.report({ node, messageId: "impurePackage", data: { source } })
        return
      }
      if (name !== "effect") return
      if (source !== "effect") return checkEffectName(node, source.slice("effect/".length))
      for (const specifier of specifiers ?? []) {
        const imported = specifier.type === "ImportSpecifier" || specifier.type === "ExportSpecifier"
          ? (specifier.type === "ImportSpecifier" ? specifier.imported : specifier.local)
          : undefined
        if (imported !== undefined) checkEffectName(specifier, imported.name ?? imported.value)
      }
    }

    return {
      ImportDeclaration: (node) => checkSource(node, node.source.value, node.specifiers),
      ExportNamedDeclaration: (node) => node.source && checkSource(node, node.source.value, node.specifiers),
      ExportAllDeclaration: (node) => checkSource(node, node.source.value, []),
      ImportExpression: (node) => node.source.type === "Literal" && checkSource(node, node.source.value, []),
      TSImportType: (node) => {
        const literal = node.argument?.literal ?? node.argument
        if (literal?.type === "Literal") checkSource(node, literal.value, [])
      },
      MemberExpression: (node) => {
        if (
          node.object.type === "Identifier" && node.object.name === "Effect" &&
          node.property.type === "Identifier" && serviceMembers.test(node.property.name)
        ) {
          context.report({ node, messageId: "serviceMember", data: { name: node.property.name } })
        }
      }
    }
  }
}

/** The plugin `eslint.config.mjs` registers as `streaks`. */
export const plugin = { meta: { name: "streaks" }, rules: { "pure-domain": rule } }
