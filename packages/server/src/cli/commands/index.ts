/** Every `parley` subcommand. */
import { bots } from "./bots.js"
import { crm } from "./crm.js"
import { demo } from "./demo.js"
import { inbound } from "./inbound.js"
import { keys } from "./keys.js"
import { numbers } from "./numbers.js"
import { optouts } from "./optouts.js"
import { orgs } from "./orgs.js"
import { providers } from "./providers.js"
import { records } from "./records.js"
import { serve } from "./serve.js"
import { templates } from "./templates.js"
import { webhooks } from "./webhooks.js"
import { admins } from "./admins.js"
import { audit } from "./audit.js"

export const commands = [
  serve,
  demo,
  orgs,
  crm,
  keys,
  numbers,
  bots,
  templates,
  records,
  webhooks,
  providers,
  inbound,
  optouts,
  admins,
  audit
] as const
