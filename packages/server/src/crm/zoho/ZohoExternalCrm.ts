/**
 * Zoho CRM behind the admin console's ExternalCrm seam: "Connect Zoho CRM" starts the same consent as
 * `parley crm connect ORG --provider zoho`. None when this server has no Zoho client configured. Zoho
 * returns to `/oauth/zoho/callback` (the redirect URL registered with Zoho), whose page names the
 * connected user; `returnTo` is not carried through Zoho.
 */
import { Effect, Layer, Option } from "effect"
import { ExternalCrm } from "../../admin/CrmConnection.js"
import { ServerConfig } from "../../config/ServerConfig.js"
import { accountsOrigin, start } from "./ZohoConnect.js"
import { ZohoConnections } from "./ZohoConnections.js"

export const layer = Layer.effect(
  ExternalCrm,
  Effect.gen(function*() {
    const context = yield* Effect.context<ServerConfig | ZohoConnections>()
    const config = yield* ServerConfig
    const configured = Option.isSome(config.zohoClientId) && Option.isSome(config.zohoClientSecret)
    return ExternalCrm.of({
      name: "Zoho CRM",
      consentOrigin: configured ? Option.some(accountsOrigin(config)) : Option.none(),
      start: (orgId) =>
        start(orgId).pipe(
          Effect.map((started) => Option.some(started.url)),
          Effect.catchTag("ZohoConnectFailed", () => Effect.succeed(Option.none<string>())),
          Effect.provide(context)
        )
    })
  })
)
