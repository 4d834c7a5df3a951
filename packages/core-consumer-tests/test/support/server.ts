/** The server package's black-box test support: a real Parley server on a free port and a temp data dir. */
export { type DemoSummary, TestServer } from "../../../server/test/support/server.js"
