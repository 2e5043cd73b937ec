/** The in-memory reference adapter of `@streaks/core` passes the suite every adapter runs. */
import * as MemoryStorage from "@streaks/core/MemoryStorage"
import { storageConformance } from "../src/StorageConformance.js"

storageConformance("memory", MemoryStorage.layer)
