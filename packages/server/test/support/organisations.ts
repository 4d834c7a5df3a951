/** An organisation row as the store tests insert it: open for business, unlimited, in UTC. */
import { Organisations } from "@parley/core/domain"

export const openOrganisation = (
  id: string,
  name: string,
  overrides: Partial<Organisations.Organisation> = {}
): Organisations.Organisation => ({
  id,
  name,
  ...Organisations.OPEN_ORGANISATION,
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
