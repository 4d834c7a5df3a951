/** Points n8n-core at a throwaway user folder before it is imported (it writes ~/.n8n/config otherwise). */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

process.env.N8N_USER_FOLDER ??= mkdtempSync(join(tmpdir(), "parley-n8n-user-"))
