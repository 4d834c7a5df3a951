/** Every example workflow in examples/n8n uses only node types and parameters that exist. */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { INode, INodeProperties, INodeTypeDescription } from "n8n-workflow"
import { describe, expect, it } from "vitest"
import { loadPackage, PACKAGE_NAME } from "./support/n8n.js"

const EXAMPLES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "examples", "n8n")
const files = readdirSync(EXAMPLES).filter((file) => file.endsWith(".json"))

// n8n's own nodes the examples use (not part of this package).
const N8N_BASE_NODES = new Set([
  "n8n-nodes-base.webhook",
  "n8n-nodes-base.wait",
  "n8n-nodes-base.if",
  "n8n-nodes-base.httpRequest"
])

/** Which property definitions could hold this value, given the node's other parameters. */
function unknownParameters(properties: INodeProperties[], parameters: Record<string, unknown>, path = ""): string[] {
  const problems: string[] = []
  for (const [name, value] of Object.entries(parameters)) {
    const candidates = properties.filter((property) => property.name === name)
    if (candidates.length === 0) {
      problems.push(`${path}${name} does not exist`)
      continue
    }
    const visible = candidates.filter((property) =>
      Object.entries(property.displayOptions?.show ?? {}).every(([key, allowed]) =>
        parameters[key] === undefined ? true : (allowed as unknown[]).includes(parameters[key])
      )
    )
    if (visible.length === 0) {
      problems.push(`${path}${name} is not shown for these settings`)
      continue
    }
    const property = visible[0]!
    if (property.type === "options" && typeof value === "string" && !value.startsWith("=")) {
      const values = (property.options ?? []).map((option) => ("value" in option ? option.value : undefined))
      if (!values.includes(value)) problems.push(`${path}${name}=${value} is not an option`)
    }
    if (property.type === "multiOptions" && Array.isArray(value)) {
      const values = (property.options ?? []).map((option) => ("value" in option ? option.value : undefined))
      for (const chosen of value) if (!values.includes(chosen)) problems.push(`${path}${name}=${chosen} is not an option`)
    }
    if (property.type === "collection" && typeof value === "object" && value !== null) {
      problems.push(
        ...unknownParameters(property.options as INodeProperties[], value as Record<string, unknown>, `${path}${name}.`)
      )
    }
    if (property.type === "resourceLocator") {
      const modes = (property.modes ?? []).map((mode) => mode.name)
      if (!modes.includes((value as { mode: string }).mode)) problems.push(`${path}${name} has an unknown mode`)
    }
  }
  return problems
}

describe("examples/n8n workflows", () => {
  it("has the three documented examples", () => {
    expect(files.sort()).toEqual([
      "ai-call-then-post-transcript.json",
      "post-call-outcomes-instantly.json",
      "send-templated-text-on-crm-webhook.json"
    ])
  })

  it.each(files)("%s uses only existing node types and parameters", async (file) => {
    const workflow = JSON.parse(readFileSync(join(EXAMPLES, file), "utf8")) as {
      nodes: INode[]
      connections: Record<string, { main: Array<Array<{ node: string }>> }>
    }
    const loader = await loadPackage()
    const descriptions = new Map<string, INodeTypeDescription>(
      loader.types.nodes.map((description) => [`${PACKAGE_NAME}.${description.name}`, description])
    )
    const names = new Set(workflow.nodes.map((node) => node.name))
    let parleyNodes = 0
    for (const node of workflow.nodes) {
      if (!node.type.startsWith(`${PACKAGE_NAME}.`)) {
        expect(N8N_BASE_NODES, `${node.name}: ${node.type}`).toContain(node.type)
        continue
      }
      parleyNodes++
      const description = descriptions.get(node.type)
      expect(description, `${node.name}: ${node.type} exists`).toBeDefined()
      expect(node.typeVersion).toBe(description!.version)
      expect(Object.keys(node.credentials ?? {})).toEqual(["parleyApi"])
      expect(unknownParameters(description!.properties, node.parameters as Record<string, unknown>), node.name).toEqual([])
    }
    expect(parleyNodes).toBeGreaterThan(0)
    for (const [from, outputs] of Object.entries(workflow.connections)) {
      expect(names).toContain(from)
      for (const target of outputs.main.flat()) expect(names).toContain(target.node)
    }
  })
})
