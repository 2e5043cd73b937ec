/**
 * @streaks/mcp: the MCP worker, streaks for AI agents over the Model Context Protocol (Streamable
 * HTTP and stdio), on the same core services and credentials as the customer REST API.
 */
export * as McpConfig from "./McpConfig.js"
export * as McpLimits from "./McpLimits.js"
export * as Protocol from "./Protocol.js"
export * as Stdio from "./Stdio.js"
export * as StreamableHttp from "./StreamableHttp.js"
export * as Tools from "./Tools.js"
