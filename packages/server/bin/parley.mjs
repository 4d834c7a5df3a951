#!/usr/bin/env node
// Parley's admin CLI and server. The workspace runs from TypeScript source:
// tsx compiles each module once at load, so there is no build step to forget.
import { register } from "tsx/esm/api"

register()
await import("../src/cli/main.ts")
