#!/usr/bin/env -S npx tsx
/** Entry point of the `streaks` command (see Cli.ts). */
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Cli from "./Cli.js"
import * as HeapTuning from "./HeapTuning.js"

HeapTuning.apply(process.execArgv)
Cli.run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true }))
