/** @streaks/server: the runnable service (configuration, composition root, CLI). */
export * as Cli from "./Cli.js"
export * as Demo from "./Demo.js"
export * as Main from "./Main.js"
export * as SecretKey from "./SecretKey.js"
export * as ServerConfig from "./ServerConfig.js"
