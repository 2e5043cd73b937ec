/**
 * The served OpenAPI document as a contract on every answer of the end-to-end tests: `TestServer`'s
 * `request` checks each reply against `/openapi.json` of the server that gave it. An error status
 * the route does not declare, an error code outside the route's enum, or a body that breaks the
 * declared schema fails the test that saw it.
 */
import SwaggerParser from "@apidevtools/swagger-parser"
import { Ajv2020 } from "ajv/dist/2020.js"

type Json = Record<string, any>

/** One operation of the document, found by method and concrete path. */
export interface Operation {
  readonly method: string
  readonly template: string
  readonly operation: Json
}

interface Contract {
  readonly document: Json
  readonly find: (method: string, path: string) => Operation | undefined
  readonly validate: (schema: Json, body: unknown) => string | undefined
}

const contracts = new Map<string, Promise<Contract>>()

/** The schemas with their `$id`s dropped: Effect marks each `unknown` with the same one, which the validator refuses twice. */
const withoutIds = <A>(value: A): A => {
  if (Array.isArray(value)) value.forEach(withoutIds)
  else if (typeof value === "object" && value !== null) {
    delete (value as Json).$id
    Object.values(value).forEach(withoutIds)
  }
  return value
}

const load = async (baseUrl: string): Promise<Contract> => {
  const response = await fetch(`${baseUrl}/openapi.json`)
  const document = (await response.json()) as Json
  // References resolved once, so each response schema stands alone for the validator.
  const resolved = withoutIds((await SwaggerParser.dereference(structuredClone(document) as any)) as Json)
  const routes = Object.entries(resolved.paths as Json).map(([template, item]) => {
    const segments = template.split("/")
    return {
      template,
      item: item as Json,
      literals: segments.filter((s) => !s.startsWith("{")).length,
      pattern: new RegExp(
        `^${segments.map((s) => (s.startsWith("{") ? "[^/]+" : s.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))).join("/")}$`
      )
    }
  })
  // Routes with more literal segments win (`/experiments/current` before `/experiments/{id}`).
  routes.sort((a, b) => b.literals - a.literals)
  // Integer widths (`int32`, `int64`) are documentation: the schemas bound every integer besides.
  const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { int32: true, int64: true } })
  const compiled = new WeakMap<Json, ReturnType<typeof ajv.compile>>()
  return {
    document,
    find: (method, path) => {
      const m = method.toLowerCase()
      const route = routes.find((r) => r.pattern.test(path) && r.item[m] !== undefined)
      return route === undefined ? undefined : { method: m, template: route.template, operation: route.item[m] }
    },
    validate: (schema, body) => {
      let check = compiled.get(schema)
      if (check === undefined) {
        check = ajv.compile(schema)
        compiled.set(schema, check)
      }
      return check(body) ? undefined : ajv.errorsText(check.errors)
    }
  }
}

/** The contract of the server at `baseUrl` (its document is read once). */
export const of = (baseUrl: string): Promise<Contract> => {
  let contract = contracts.get(baseUrl)
  if (contract === undefined) {
    contract = load(baseUrl)
    contracts.set(baseUrl, contract)
  }
  return contract
}

/**
 * What is wrong with a reply to `method path` by the document's route for it, or undefined.
 * Requests that no route of the document matches (unknown paths, methods a path does not serve,
 * the docs page) are not part of the contract.
 */
export const violation = async (
  baseUrl: string,
  method: string,
  pathAndQuery: string,
  reply: { readonly status: number; readonly body: unknown; readonly text: string }
): Promise<string | undefined> => {
  const contract = await of(baseUrl)
  const path = pathAndQuery.split("?")[0]!
  const found = contract.find(method, path)
  if (found === undefined) return undefined
  const where = `${method.toUpperCase()} ${path} (${found.template}) answered ${reply.status} ${
    reply.text.slice(0, 200)
  }`
  const declared: Json | undefined = found.operation.responses[String(reply.status)]
  if (declared === undefined) {
    return `${where}, a status the document does not declare for the route (declared: ${
      Object.keys(found.operation.responses).join(", ")
    })`
  }
  const schema: Json | undefined = declared.content?.["application/json"]?.schema
  if (schema === undefined) return reply.text === "" ? undefined : `${where}, a body where the document declares none`
  if (reply.body === undefined) return `${where}, which is not the JSON body the document declares`
  const invalid = contract.validate(schema, reply.body)
  return invalid === undefined ? undefined : `${where}, a body that breaks the declared schema: ${invalid}`
}
