/** Every `parley` subcommand. */
import { demo } from "./demo.js"
import { serve } from "./serve.js"

export const commands = [serve, demo] as const
