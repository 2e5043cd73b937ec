import { layerMemory, storageConformance } from "@streaks/core/testing"

storageConformance("memory", layerMemory)
