// The Spectral ruleset `/openapi.json` is held to (packages/http/test/Spectral.e2e.test.ts runs it
// against the served document): Spectral's `oas` rules and the OWASP API Security rules, with the
// changes below, each with its reason. CLI: `npx spectral lint -r packages/http/openapi.spectral.mjs openapi.json`.
import { defined, schema, truthy, xor } from "@stoplight/spectral-functions"
import { oas } from "@stoplight/spectral-rulesets"
import owaspModule from "@stoplight/spectral-owasp-ruleset"

const owasp = owaspModule.default ?? owaspModule

/** Every schema node of a request: bodies and parameters, `$ref`s resolved, the schema itself included. */
const requestNodes = (type) => {
  const is = `(@.type == "${type}" || (@.type && @.type.constructor.name === "Array" && @.type.includes("${type}")))`
  return [
    `$.paths[*][*].requestBody.content[*][?(@property === "schema" && @ && ${is})]`,
    `$.paths[*][*].requestBody.content[*].schema..[?(@ && ${is})]`,
    `$.paths[*][*].parameters[*][?(@property === "schema" && @ && ${is})]`,
    `$.paths[*][*].parameters[*].schema..[?(@ && ${is})]`
  ]
}

/** Answers of the limited routes: `/v1/api/*`, `/mcp`, `POST /v1/e` and `POST /v1/alias`. */
const limitedAnswers = [
  "$.paths[?(@property.startsWith('/v1/api/'))][*].responses[?(@property.match(/^(2|4)/))]",
  "$.paths['/v1/e','/v1/alias'].post.responses[?(@property.match(/^(2|4)/))]"
]

export default {
  extends: [[oas, "recommended"], [owasp, "recommended"]],
  rules: {
    // The bounds rules judge every schema, answers included. What the server writes is bounded by
    // what it accepted; what a client sends is what an attacker controls. The three rules below
    // hold every request body and parameter to them instead.
    "owasp:api4:2023-string-limit": "off",
    "owasp:api4:2023-integer-limit": "off",
    "owasp:api4:2023-array-limit": "off",
    "streaks:request-string-limit": {
      description: "Each string of a request body or parameter has a maximum length, an enum or a const.",
      severity: "error",
      given: requestNodes("string"),
      then: {
        function: schema,
        functionOptions: {
          schema: {
            type: "object",
            anyOf: [{ required: ["maxLength"] }, { required: ["enum"] }, { required: ["const"] }]
          }
        }
      }
    },
    "streaks:request-integer-limit": {
      description: "Each integer of a request body or parameter has a minimum and a maximum.",
      severity: "error",
      given: requestNodes("integer"),
      then: [
        { function: xor, functionOptions: { properties: ["minimum", "exclusiveMinimum"] } },
        { function: xor, functionOptions: { properties: ["maximum", "exclusiveMaximum"] } }
      ]
    },
    "streaks:request-array-limit": {
      description: "Each array of a request body or parameter has a maximum size.",
      severity: "error",
      given: requestNodes("array"),
      then: { field: "maxItems", function: defined }
    },
    // Rate-limit headers are declared where requests are limited (docs/api.md#rate-limits). The
    // other routes have no request limit: the server and webhook doors, state reads and the admin
    // API serve authenticated backends and operators at the speed they send, and the health probes
    // answer load balancers; their only limit, failed authentications, is described by the 429
    // answer and its Retry-After on each of them.
    "owasp:api4:2023-rate-limit": "off",
    "streaks:rate-limit-headers": {
      description: "Every 2xx and 4xx answer of a limited route declares RateLimit-Policy and RateLimit.",
      severity: "error",
      given: limitedAnswers,
      then: {
        field: "headers",
        function: schema,
        functionOptions: { schema: { type: "object", required: ["RateLimit", "RateLimit-Policy"] } }
      }
    },
    // CORS: only the browser doors answer browsers (docs/api.md#cors-preflight), and only for the
    // project's allowed origins, so only their answers declare Access-Control-Allow-Origin; every
    // other route is for servers and sends no CORS header at all, which browsers read as "no origin
    // allowed".
    "owasp:api8:2023-define-cors-origin": "off",
    "streaks:browser-cors-origin": {
      description: "Answers of the browser doors (`POST /v1/e`, `POST /v1/alias`, `GET /v1/state`) declare " +
        "Access-Control-Allow-Origin.",
      severity: "error",
      given: [
        "$.paths['/v1/e','/v1/alias'].post.responses[?(@property.match(/^(2|4)/))].headers",
        "$.paths['/v1/state'].get.responses[?(@property.match(/^(2|4)/))].headers"
      ],
      then: { field: "Access-Control-Allow-Origin", function: truthy }
    }
  },
  overrides: [
    {
      // The credential of `POST /v1/alias` is the alias token in its body, an HS256 JWT signed with
      // the project's signing secret (docs/api.md): no security scheme can name a body field, so the
      // route declares none and the rule cannot see that it is protected.
      files: ["**#/paths/~1v1~1alias/post"],
      rules: { "owasp:api2:2023-write-restricted": "off" }
    }
  ]
}
