/**
 * For the tests that drive the store's modules directly (no server): a store module's layer over the
 * server's own database layer, configured as the server would be for the test's database.
 */
import { ConfigProvider, Layer } from "effect"
import { ServerConfig } from "../../src/config/ServerConfig.js"
import { DatabaseLive } from "../../src/store/Database.js"
import type { TestDatabase } from "./store.js"

/** `layer` on the test's database, with the database's own services (SqlClient, the driver's handle) beside it. */
export const onTestDatabase = <A, E, R>(db: TestDatabase, layer: Layer.Layer<A, E, R>) =>
  layer.pipe(
    Layer.provideMerge(DatabaseLive),
    Layer.provide(ServerConfig.layer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PARLEY_DATA_DIR", db.dataDir], ...Object.entries(db.env)]))))
  )
