/**
 * The built-in CRM: message templates and records in the same database as everything else (Parley's own
 * actions are in SqlActionStore), and every organisation's connection state (store/CrmConnectionRow, which
 * the API's authentication joins), whichever CRM serves its records.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Crm, CrmModule } from "@parley/core/internal"
import { Effect, Layer, Option, Schema } from "effect"
import { ConnectionRow, toConnection } from "../../store/CrmConnectionRow.js"
import { DbJson, NullableString, storage } from "../../store/rows.js"

const TemplateRow = Schema.Struct({
  org_id: Schema.String,
  id: Schema.String,
  crm_id: Schema.String,
  record_type: NullableString,
  name: Schema.String,
  body: Schema.String
})

const RecordRow = Schema.Struct({
  org_id: Schema.String,
  module: CrmModule,
  id: Schema.String,
  name: Schema.String,
  phone: NullableString,
  owner_id: NullableString,
  fields: DbJson(Schema.Record({ key: Schema.String, value: Schema.String }))
})

/** The built-in CRM's service; the registry's other CRMs build on it (see crm/CrmLive.ts). */
export const make = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const connection = SqlSchema.findOne({
      Request: Schema.String,
      Result: ConnectionRow,
      execute: (orgId) => sql`SELECT state, account_id, account_name, permissions FROM crm_connections
                              WHERE org_id = ${orgId}`
    })
    // All of the organisation's templates, sorted in the process by Crm.byTemplateName: neither store's
    // ORDER BY can give the order people read names in, identically on both (SQLite compares bytes;
    // Postgres collations depend on how the server was built). A CRM keeps tens to hundreds of templates.
    const templates = SqlSchema.findAll({
      Request: Schema.String,
      Result: TemplateRow,
      execute: (orgId) => sql`SELECT * FROM templates WHERE org_id = ${orgId}`
    })
    const template = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, id: Schema.String }),
      Result: TemplateRow,
      execute: ({ id, orgId }) => sql`SELECT * FROM templates WHERE org_id = ${orgId} AND id = ${id}`
    })
    const record = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, module: Schema.String, id: Schema.String }),
      Result: RecordRow,
      execute: ({ id, module, orgId }) =>
        sql`SELECT * FROM crm_records WHERE org_id = ${orgId} AND module = ${module} AND id = ${id}`
    })
    const records = SqlSchema.findAll({
      Request: Schema.String,
      Result: RecordRow,
      execute: (orgId) => sql`SELECT * FROM crm_records WHERE org_id = ${orgId} ORDER BY module, id`
    })
    const byPhone = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, phone: Schema.String }),
      Result: RecordRow,
      execute: ({ orgId, phone }) =>
        sql`SELECT * FROM crm_records WHERE org_id = ${orgId} AND phone = ${phone} ORDER BY module, id LIMIT 1`
    })
    const toTemplate = (t: typeof TemplateRow.Type): Crm.TemplateRow => ({
      orgId: t.org_id,
      id: t.id,
      crmId: t.crm_id,
      recordType: t.record_type,
      name: t.name,
      body: t.body
    })
    const toRecord = (r: typeof RecordRow.Type): Crm.CrmRecord => ({
      orgId: r.org_id,
      module: r.module,
      id: r.id,
      name: r.name,
      phone: r.phone,
      ownerId: r.owner_id,
      fields: r.fields
    })

    return Crm.Crm.of({
      connection: (orgId) =>
        storage("crm.connection")(Effect.map(connection(orgId), (found): Crm.CrmConnection =>
          Option.isNone(found) ? { state: "disconnected" } : toConnection(found.value))),
      setConnection: (orgId, c) => {
        const account = c.state === "disconnected" ? null : c.account
        return storage("crm.setConnection")(sql`INSERT INTO crm_connections ${
          sql.insert({
            org_id: orgId,
            state: c.state,
            account_id: account?.id ?? null,
            account_name: account?.name ?? null,
            permissions: account === null ? null : JSON.stringify(account.permissions)
          })
        } ON CONFLICT (org_id) DO UPDATE SET state = excluded.state, account_id = excluded.account_id,
          account_name = excluded.account_name, permissions = excluded.permissions`)
      },
      listTemplates: (orgId, limit) =>
        storage("crm.listTemplates")(
          Effect.map(templates(orgId), (rows) => rows.map(toTemplate).sort(Crm.byTemplateName).slice(0, limit))
        ),
      findTemplate: (orgId, id) =>
        storage("crm.findTemplate")(Effect.map(template({ orgId, id }), Option.map(toTemplate))),
      upsertTemplate: (t) =>
        storage("crm.upsertTemplate")(sql`INSERT INTO templates ${
          sql.insert({ org_id: t.orgId, id: t.id, crm_id: t.crmId, record_type: t.recordType, name: t.name, body: t.body })
        } ON CONFLICT (org_id, id) DO UPDATE SET crm_id = excluded.crm_id, record_type = excluded.record_type,
          name = excluded.name, body = excluded.body`),
      findRecord: (orgId, module, id) =>
        storage("crm.findRecord")(Effect.map(record({ orgId, module, id }), Option.map(toRecord))),
      upsertRecord: (r) =>
        storage("crm.upsertRecord")(sql`INSERT INTO crm_records ${
          sql.insert({
            org_id: r.orgId,
            module: r.module,
            id: r.id,
            name: r.name,
            phone: r.phone,
            owner_id: r.ownerId,
            fields: JSON.stringify(r.fields)
          })
        } ON CONFLICT (org_id, module, id) DO UPDATE SET name = excluded.name, phone = excluded.phone,
          owner_id = excluded.owner_id, fields = excluded.fields`),
      listRecords: (orgId) => storage("crm.listRecords")(Effect.map(records(orgId), (rows) => rows.map(toRecord))),
      // Parley's own action rows are the built-in CRM's record of them.
      recordAction: () => Effect.succeed(Option.none()),
      // The first record with the phone, in the order records are listed.
      findByPhone: (orgId, phone) =>
        storage("crm.findByPhone")(Effect.map(byPhone({ orgId, phone }), Option.map(toRecord)))
    })
  })

export const layer = Layer.effect(Crm.Crm, make)
