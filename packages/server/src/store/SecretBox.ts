/**
 * Secrets at rest: every secret Parley must read back (webhook signing
 * secrets, the cursor-signing secret, provider credentials, CRM tokens) is stored sealed
 * with AES-256-GCM under the installation's secret key, so a copy of the
 * database alone (a backup, a stolen disk) reveals none of them.
 *
 * The key is `PARLEY_SECRET_KEY` (32 random bytes, base64 or hex; required on
 * Postgres, where replicas must share it) or, when that is unset, the file
 * `secret.key` beside the SQLite database, created with mode 0600 on first
 * start. Sealed values read
 * `enc:v1:<key id>:<base64url(iv ‖ ciphertext ‖ tag)>`; the key id (the first
 * 8 hex digits of the key's SHA-256) lets a rotation name the old key in
 * `PARLEY_PREVIOUS_SECRET_KEYS` while `resealSecrets` moves every stored value
 * to the new one at start. Values stored before sealing existed (plain text)
 * are read as they are and sealed by the same pass.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { ServerConfig, type ServerSettings } from "../config/ServerConfig.js"

export const KEY_FILE = "secret.key"
const PREFIX = "enc:v1:"
const IV_BYTES = 12
const TAG_BYTES = 16

/** The key is missing, malformed, or does not open a stored secret: the process cannot start. */
export class SecretKeyError extends Data.TaggedError("SecretKeyError")<{ readonly message: string }> {}

export interface SecretBoxService {
  /** Seals a secret under the current key. */
  readonly seal: (plaintext: string) => string
  /** Opens a stored value: sealed under the current or a previous key, or stored before sealing existed. */
  readonly open: (stored: string) => Effect.Effect<string, SecretKeyError>
  /** Whether a stored value is sealed under the current key (a rotation reseals the others). */
  readonly isCurrent: (stored: string) => boolean
}

export class SecretBox extends Context.Tag("@parley/server/store/SecretBox")<SecretBox, SecretBoxService>() {}

const keyId = (key: Buffer) => createHash("sha256").update(key).digest("hex").slice(0, 8)

/** 32 bytes written as base64, base64url or hex. */
export const parseKey = (text: string, variable: string): Effect.Effect<Buffer, SecretKeyError> => {
  const trimmed = text.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(trimmed)
    ? Buffer.from(trimmed, "hex")
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)
    ? Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    : undefined
  return bytes !== undefined && bytes.length === 32
    ? Effect.succeed(bytes)
    : Effect.fail(
      new SecretKeyError({
        message: `${variable} must be 32 random bytes written as base64 or hex (generate one with ` +
          "`openssl rand -base64 32`)."
      })
    )
}

export const make = (current: Buffer, previous: ReadonlyArray<Buffer> = []): SecretBoxService => {
  const currentId = keyId(current)
  const keys = new Map<string, Buffer>([...previous.map((k) => [keyId(k), k] as const), [currentId, current]])
  return {
    seal: (plaintext) => {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv("aes-256-gcm", current, iv)
      // The key id is authenticated too, so a value cannot be passed off as sealed under another key.
      cipher.setAAD(Buffer.from(currentId))
      const body = Buffer.concat([iv, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()])
      return `${PREFIX}${currentId}:${body.toString("base64url")}`
    },
    open: (stored) =>
      Effect.suspend(() => {
        if (!stored.startsWith(PREFIX)) return Effect.succeed(stored)
        const [id = "", data = ""] = stored.slice(PREFIX.length).split(":")
        const key = keys.get(id)
        if (key === undefined) {
          return Effect.fail(
            new SecretKeyError({
              message: `A stored secret is sealed under key ${id}, which is neither PARLEY_SECRET_KEY nor one of ` +
                "PARLEY_PREVIOUS_SECRET_KEYS: start with the key it was sealed under."
            })
          )
        }
        return Effect.try({
          try: () => {
            const body = Buffer.from(data, "base64url")
            const decipher = createDecipheriv("aes-256-gcm", key, body.subarray(0, IV_BYTES))
            decipher.setAAD(Buffer.from(id))
            decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
            return Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()])
              .toString("utf8")
          },
          catch: () => new SecretKeyError({ message: `A stored secret sealed under key ${id} does not open: it was altered.` })
        })
      }),
    isCurrent: (stored) => stored.startsWith(`${PREFIX}${currentId}:`)
  }
}

/**
 * The key file beside the database: read, or created once with mode 0600. Created under a temporary name
 * and linked into place, so two processes starting together agree on one key.
 */
const keyFromFile = (dataDir: string): Buffer => {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const path = join(dataDir, KEY_FILE)
  try {
    return Buffer.from(readFileSync(path, "utf8").trim(), "base64")
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) throw error
  }
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`
  writeFileSync(temporary, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600 })
  try {
    linkSync(temporary, path)
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
  } finally {
    unlinkSync(temporary)
  }
  chmodSync(path, 0o600)
  return Buffer.from(readFileSync(path, "utf8").trim(), "base64")
}

export const fromSettings = (config: ServerSettings): Effect.Effect<SecretBoxService, SecretKeyError> =>
  Effect.gen(function*() {
    if (Option.isSome(config.databaseUrl) && Option.isNone(config.secretKey)) {
      // A key file is local to one machine: replicas each making their own could not open each other's secrets.
      return yield* new SecretKeyError({
        message: "PARLEY_SECRET_KEY is required with DATABASE_URL: every replica (and the CLI) must seal secrets " +
          "with the same key. Generate one with `openssl rand -base64 32` and give it to each of them."
      })
    }
    const current = yield* Option.match(config.secretKey, {
      onNone: () =>
        Effect.try({
          try: () => keyFromFile(config.dataDir),
          catch: () => new SecretKeyError({ message: `Cannot read or create ${join(config.dataDir, KEY_FILE)}.` })
        }),
      onSome: (key) => parseKey(Redacted.value(key), "PARLEY_SECRET_KEY")
    })
    if (current.length !== 32) {
      return yield* new SecretKeyError({ message: `${join(config.dataDir, KEY_FILE)} does not hold a 32-byte key.` })
    }
    const previous: Array<Buffer> = []
    for (const text of config.previousSecretKeys) {
      previous.push(yield* parseKey(Redacted.value(text), "Each of PARLEY_PREVIOUS_SECRET_KEYS"))
    }
    return make(current, previous)
  })

/** The installation's SecretBox; a process without a usable key does not start. */
export const layer: Layer.Layer<SecretBox, SecretKeyError, ServerConfig> = Layer.effect(
  SecretBox,
  Effect.flatMap(ServerConfig, fromSettings)
)

/**
 * Seals every stored secret under the current key: values from before sealing existed and values sealed
 * under a previous key. Each update is conditional on the value read, so processes starting together
 * (the server, a CLI command) never overwrite each other's work.
 */
export const resealSecrets = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const box = yield* SecretBox
  const webhooks = yield* sql<{ readonly id: string; readonly secret: string; readonly previous_secret: string | null }>`
    SELECT id, secret, previous_secret FROM webhooks`
  for (const row of webhooks) {
    if (!box.isCurrent(row.secret)) {
      const sealed = box.seal(yield* box.open(row.secret))
      yield* sql`UPDATE webhooks SET secret = ${sealed} WHERE id = ${row.id} AND secret = ${row.secret}`
    }
    if (row.previous_secret !== null && !box.isCurrent(row.previous_secret)) {
      const sealed = box.seal(yield* box.open(row.previous_secret))
      yield* sql`UPDATE webhooks SET previous_secret = ${sealed}
        WHERE id = ${row.id} AND previous_secret = ${row.previous_secret}`
    }
  }
  const accounts = yield* sql<{ readonly org_id: string; readonly kind: string; readonly secrets: string }>`
    SELECT org_id, kind, secrets FROM provider_accounts`
  for (const row of accounts) {
    if (box.isCurrent(row.secrets)) continue
    const sealed = box.seal(yield* box.open(row.secrets))
    yield* sql`UPDATE provider_accounts SET secrets = ${sealed}
      WHERE org_id = ${row.org_id} AND kind = ${row.kind} AND secrets = ${row.secrets}`
  }
  // Administrators' TOTP secrets (two-factor sign-in), confirmed and being set up.
  for (const column of ["totp_secret", "totp_pending_secret"] as const) {
    const admins = yield* sql<{ readonly id: string; readonly value: string }>`
      SELECT id, ${sql(column)} AS value FROM admins WHERE ${sql(column)} IS NOT NULL`
    for (const row of admins) {
      if (box.isCurrent(row.value)) continue
      const sealed = box.seal(yield* box.open(row.value))
      yield* sql`UPDATE admins SET ${sql(column)} = ${sealed} WHERE id = ${row.id} AND ${sql(column)} = ${row.value}`
    }
  }
  // Each CRM's tokens are resealed by the CRM (crm/Registry.ts's resealCrmSecrets, run by serve after this).
  const settings = yield* sql<{ readonly name: string; readonly value: string }>`
    SELECT name, value FROM settings WHERE name IN ${sql.in(SEALED_SETTINGS)}`
  for (const row of settings) {
    if (box.isCurrent(row.value)) continue
    const sealed = box.seal(yield* box.open(row.value))
    yield* sql`UPDATE settings SET value = ${sealed} WHERE name = ${row.name} AND value = ${row.value}`
  }
})

/** The settings row of the cursor-signing secret. */
export const CURSOR_SECRET_SETTING = "cursor_secret"
/** Settings rows that hold secrets. */
export const SEALED_SETTINGS: ReadonlyArray<string> = [CURSOR_SECRET_SETTING]
