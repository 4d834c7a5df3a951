/** An organisation row as the store tests insert it: open for business, unlimited, in UTC. */
import type { Organisations } from "@parley/core/domain"

export const openOrganisation = (
  id: string,
  name: string,
  overrides: Partial<Organisations.Organisation> = {}
): Organisations.Organisation => ({
  id,
  name,
  subscriptionActive: true,
  seatActive: true,
  pilotOpen: true,
  aiCallsEnabled: true,
  timezone: "UTC",
  sendingHours: "always",
  smsAllowance: null,
  callAllowance: null,
  destinationCountries: null,
  premiumNumbersAllowed: false,
  internationalNetworksAllowed: false,
  botsManagementUrl: null,
  templatesManagementUrl: null,
  createdAt: new Date().toISOString(),
  ...overrides
})
