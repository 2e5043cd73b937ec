#!/usr/bin/env -S npx tsx
/** Entry point of the `streaks` command (see Cli.ts). */
// First, so that the heap settings are in place while the modules below load.
import "./internal/applyHeapTuning.js"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as Cli from "./Cli.js"

Cli.run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain({ disableErrorReporting: true }))
