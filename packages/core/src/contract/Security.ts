/**
 * Bearer authentication for every /api/v1 call, and the principal it yields.
 * The middleware's failures are the errors any endpoint can answer before its
 * handler runs: a bad key, the rate limit, and the organisation's access state.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Caller } from "../domain/Caller.js"
import { ErrorCatalog } from "./Errors.js"

export class Authorization extends HttpApiMiddleware.Tag<Authorization>()("@parley/core/Authorization", {
  provides: Caller,
  failure: Schema.Union(
    ErrorCatalog.UNAUTHORIZED,
    ErrorCatalog.RATE_LIMITED,
    ErrorCatalog.SUBSCRIPTION_INACTIVE,
    ErrorCatalog.SEAT_INACTIVE,
    ErrorCatalog.OAUTH_REQUIRED,
    ErrorCatalog.IDENTITY_CHANGED,
    ErrorCatalog.PILOT_PENDING,
    ErrorCatalog.SETUP_UNAVAILABLE,
    ErrorCatalog.CRM_UNAVAILABLE,
    ErrorCatalog.CRM_REJECTED,
    ErrorCatalog.SETUP_REQUIRED,
    ErrorCatalog.CRM_RATE_LIMITED,
    ErrorCatalog.INTERNAL
  ),
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "`Authorization: Bearer parley_live_…` or `parley_test_…`. Keys belong on servers, never in browser code."
      )
    )
  }
}) {}
