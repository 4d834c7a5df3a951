/**
 * Runs n8n-nodes-parley the way n8n does, with no n8n server and no database:
 * the built package loaded by n8n-core's PackageDirectoryLoader, workflows run
 * by WorkflowExecute, polls by PollContext, and a credentials helper that
 * resolves the credential's generic authentication like n8n's own.
 */
import type { ExecutionLifecycleHooks as Hooks, PackageDirectoryLoader } from "n8n-core"
import type {
  ICredentialDataDecryptedObject,
  ICredentials,
  ICredentialTestRequest,
  ICredentialType,
  IDataObject,
  IExecuteFunctions,
  IHttpRequestOptions,
  INode,
  INodeExecutionData,
  INodeProperties,
  INodeType,
  INodeTypeDescription,
  INodeTypes,
  IRun,
  IVersionedNodeType,
  IWebhookData,
  IWebhookResponseData,
  IWorkflowBase,
  IWorkflowExecuteAdditionalData,
  WorkflowExecuteMode,
  Workflow as WorkflowClass,
  IConnections
} from "n8n-workflow"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

// n8n-core and the built nodes are CommonJS and share one n8n-workflow; load the
// same CommonJS copy here so classes and instanceof checks agree.
const require = createRequire(import.meta.url)
const {
  ExecutionLifecycleHooks,
  HookContext,
  InstanceSettings,
  LoadOptionsContext,
  PackageDirectoryLoader: Loader,
  PollContext,
  WebhookContext,
  WorkflowExecute
} = require("n8n-core") as typeof import("n8n-core")
// n8n-core's dependency container (@n8n/di, a dependency of n8n-core), where its execution
// contexts read the instance settings from.
interface DependencyContainer {
  get<T>(type: new (...args: never[]) => T): T
}
const { Container } = createRequire(require.resolve("n8n-core"))("@n8n/di") as { Container: DependencyContainer }
const { createRunExecutionData, ICredentialsHelper, NodeHelpers, Workflow } =
  require("n8n-workflow") as typeof import("n8n-workflow")
type Workflow = WorkflowClass

export const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "n8n-nodes")
export const PACKAGE_NAME = "n8n-nodes-parley"
export const PARLEY = `${PACKAGE_NAME}.parley`
export const PARLEY_TRIGGER = `${PACKAGE_NAME}.parleyTrigger`

export interface ParleyCredentials extends ICredentialDataDecryptedObject {
  baseUrl: string
  apiKey: string
}

export async function loadPackage(): Promise<PackageDirectoryLoader> {
  const loader = new Loader(PACKAGE_DIR)
  await loader.loadAll()
  return loader
}

/**
 * n8n's "Loop Over Items" (SplitInBatches v3) reduced to batch size 1, since n8n-nodes-base is not
 * installed here: the first run keeps the input and sends its first item down "loop"; every later
 * run (fed back from the loop's last node) collects what came back and sends the next item, until
 * "done" gets everything that came back. The nodes in the loop run once per item, each run with the
 * next run index, as in n8n.
 */
class LoopOverItems implements INodeType {
  description: INodeTypeDescription = {
    displayName: "Loop Over Items",
    name: "loopOverItems",
    group: ["organization"],
    version: 1,
    description: "Batch size 1",
    defaults: { name: "Loop Over Items" },
    inputs: ["main"],
    outputs: ["main", "main"],
    outputNames: ["done", "loop"],
    properties: []
  }

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    const state = this.getContext("node") as { remaining?: INodeExecutionData[]; done?: INodeExecutionData[] }
    const input = this.getInputData()
    if (state.remaining === undefined) {
      state.remaining = input.map((item, index) => ({ json: item.json, pairedItem: { item: index } }))
      state.done = []
    } else {
      state.done!.push(...input.map((item) => ({ json: item.json })))
    }
    const next = state.remaining.shift()
    if (next !== undefined) return [[], [next]]
    const done = state.done!
    delete state.remaining
    delete state.done
    return [done, []]
  }
}

/** n8n's "No Operation, do nothing": passes its items on, so the node after it has a source node as in n8n. */
class NoOp implements INodeType {
  description: INodeTypeDescription = {
    displayName: "No Operation",
    name: "noOp",
    group: ["organization"],
    version: 1,
    description: "Passes items on",
    defaults: { name: "No Operation" },
    inputs: ["main"],
    outputs: ["main"],
    properties: []
  }

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    return [this.getInputData()]
  }
}

/** Node types the tests add beside the package's: n8n's own nodes are not installed here. */
export const TEST_PREFIX = "parley-test"
export const LOOP_OVER_ITEMS = `${TEST_PREFIX}.loopOverItems`
export const NO_OP = `${TEST_PREFIX}.noOp`
const TEST_NODE_TYPES: Record<string, INodeType> = { [LOOP_OVER_ITEMS]: new LoopOverItems(), [NO_OP]: new NoOp() }

/** A node of one of the test node types. */
export function testNode(name: string, type: string): INode {
  return { id: name.toLowerCase().replace(/\W+/g, "-"), name, type, typeVersion: 1, position: [0, 0], parameters: {} }
}

class PackageNodeTypes implements INodeTypes {
  constructor(private readonly loader: PackageDirectoryLoader) {}

  private shortName(type: string): string {
    if (!type.startsWith(`${PACKAGE_NAME}.`)) throw new Error(`Node type ${type} is not in ${PACKAGE_NAME}`)
    return type.slice(PACKAGE_NAME.length + 1)
  }

  getByName(type: string): INodeType | IVersionedNodeType {
    return TEST_NODE_TYPES[type] ?? this.loader.getNode(this.shortName(type)).type
  }

  getByNameAndVersion(type: string, version?: number): INodeType {
    return NodeHelpers.getVersionedNodeType(this.getByName(type), version)
  }

  getKnownTypes() {
    return this.loader.known.nodes
  }
}

/** Resolves `={{ … }}` values the way n8n's CredentialsHelper does, with `$credentials` in scope. */
function resolveWithCredentials(
  value: unknown,
  credentials: ICredentialDataDecryptedObject,
  workflow: Workflow,
  node: INode
): unknown {
  if (typeof value !== "string" || !value.startsWith("=")) return value
  return workflow.expression.getSimpleParameterValue(node, value, "internal", { $credentials: credentials }, undefined, "")
}

class TestCredentialsHelper extends ICredentialsHelper {
  constructor(
    private readonly loader: PackageDirectoryLoader,
    private readonly credentials: Record<string, ICredentialDataDecryptedObject>
  ) {
    super()
  }

  private type(name: string): ICredentialType {
    return this.loader.getCredential(name).type
  }

  getParentTypes(): string[] {
    return []
  }

  isCredentialUsableByNode(credentialType: string, nodeType: string): boolean {
    const known = this.loader.known.credentials[credentialType]
    const shortName = nodeType.startsWith(`${PACKAGE_NAME}.`) ? nodeType.slice(PACKAGE_NAME.length + 1) : nodeType
    return known?.supportedNodes === undefined || known.supportedNodes.includes(shortName)
  }

  async authenticate(
    credentials: ICredentialDataDecryptedObject,
    typeName: string,
    requestOptions: IHttpRequestOptions,
    workflow?: Workflow,
    node?: INode
  ): Promise<IHttpRequestOptions> {
    const authenticate = this.type(typeName).authenticate
    if (typeof authenticate === "function") return authenticate(credentials, requestOptions)
    if (authenticate === undefined) return requestOptions
    if (workflow === undefined || node === undefined) throw new Error("generic authentication needs the workflow and node")
    const options = requestOptions as unknown as Record<string, IDataObject | undefined>
    for (const [target, values] of Object.entries(authenticate.properties)) {
      const resolved: IDataObject = { ...(options[target] ?? {}) }
      for (const [key, value] of Object.entries(values as IDataObject)) {
        resolved[String(resolveWithCredentials(key, credentials, workflow, node))] = resolveWithCredentials(
          value,
          credentials,
          workflow,
          node
        ) as string
      }
      options[target] = resolved
    }
    return requestOptions
  }

  async preAuthentication() {
    return undefined
  }

  async runPreAuthentication() {
    return undefined
  }

  async getCredentials(): Promise<ICredentials> {
    throw new Error("getCredentials is not used by n8n-nodes-parley")
  }

  async getDecrypted(_additionalData: unknown, _node: unknown, type: string): Promise<ICredentialDataDecryptedObject> {
    const credentials = this.credentials[type]
    if (credentials === undefined) throw new Error(`No test credentials of type ${type}`)
    return credentials
  }

  async updateCredentials() {
    throw new Error("updateCredentials is not used by n8n-nodes-parley")
  }

  async updateCredentialsOauthTokenData() {
    throw new Error("updateCredentialsOauthTokenData is not used by n8n-nodes-parley")
  }

  getCredentialsProperties(type: string): INodeProperties[] {
    return this.type(type).properties
  }
}

export interface WorkflowJson {
  name?: string
  nodes: INode[]
  connections: IConnections
}

export interface RunOptions {
  /** Items fed to the first node. */
  input?: IDataObject[]
  /** Items fed to the first node, as n8n items (a webhook trigger's output); wins over `input`. */
  items?: INodeExecutionData[]
  executionId?: string
  mode?: WorkflowExecuteMode
}

export interface HarnessOptions {
  /**
   * The n8n instance the workflows run on (n8n's InstanceSettings.instanceId, which n8n derives from
   * its encryption key or reads from N8N_INSTANCE_ID). Harnesses without one share this process's.
   */
  instanceId?: string
  /** n8n's webhook base URL (WEBHOOK_URL + /webhook), where webhook triggers are reached. */
  webhookBaseUrl?: string
}

/** The webhook lifecycle methods n8n calls on activation (checkExists, then create) and deactivation (delete). */
export type WebhookMethod = "checkExists" | "create" | "delete"

/** The instance settings n8n-core's execution contexts read `getInstanceId()` from. */
function instanceSettings() {
  return Container.get(InstanceSettings)
}
const PROCESS_INSTANCE_ID = instanceSettings().instanceId

let executionCounter = 0

/** A loaded package plus a credential: runs workflows and polls against one Parley server. */
export class N8nHarness {
  readonly nodeTypes: PackageNodeTypes
  readonly credentialsHelper: TestCredentialsHelper

  constructor(
    readonly loader: PackageDirectoryLoader,
    readonly credentials: ParleyCredentials,
    readonly options: HarnessOptions = {}
  ) {
    this.nodeTypes = new PackageNodeTypes(loader)
    this.credentialsHelper = new TestCredentialsHelper(loader, { parleyApi: credentials })
  }

  workflow(json: WorkflowJson, staticData?: IDataObject): Workflow {
    return new Workflow({
      id: "parley-test",
      name: json.name ?? "Parley test",
      nodes: json.nodes,
      connections: json.connections,
      nodeTypes: this.nodeTypes,
      active: false,
      ...(staticData === undefined ? {} : { staticData })
    })
  }

  additionalData(executionId: string, hooks?: Hooks): IWorkflowExecuteAdditionalData {
    const data = {
      credentialsHelper: this.credentialsHelper,
      executionId,
      hooks,
      restApiUrl: "http://127.0.0.1:5678/rest",
      instanceBaseUrl: "http://127.0.0.1:5678/",
      formWaitingBaseUrl: "http://127.0.0.1:5678/form-waiting",
      webhookBaseUrl: this.options.webhookBaseUrl ?? "http://127.0.0.1:5678/webhook",
      webhookWaitingBaseUrl: "http://127.0.0.1:5678/webhook-waiting",
      webhookTestBaseUrl: "http://127.0.0.1:5678/webhook-test",
      currentNodeParameters: undefined,
      executionTimeoutTimestamp: undefined,
      userId: "parley-test-user",
      variables: {},
      setExecutionStatus: () => {},
      logAiEvent: () => {}
    }
    return data as unknown as IWorkflowExecuteAdditionalData
  }

  /** Makes this harness's n8n instance the one the next execution context sees. */
  private enterInstance(): void {
    instanceSettings().instanceId = this.options.instanceId ?? PROCESS_INSTANCE_ID
  }

  /** Runs a workflow from its first node, as n8n's WorkflowExecute does, and returns the run. */
  async run(json: WorkflowJson, options: RunOptions = {}): Promise<IRun> {
    this.enterInstance()
    const executionId = options.executionId ?? `test-${++executionCounter}`
    const mode = options.mode ?? "manual"
    const workflow = this.workflow(json)
    const workflowData: IWorkflowBase = {
      id: "parley-test",
      name: workflow.name ?? "Parley test",
      active: false,
      activeVersionId: null,
      isArchived: false,
      createdAt: new Date(),
      updatedAt: new Date(),
      nodes: json.nodes,
      connections: json.connections
    } as unknown as IWorkflowBase
    const hooks = new ExecutionLifecycleHooks(mode, executionId, workflowData)
    const startNode = json.nodes[0]!
    const input: INodeExecutionData[] = options.items ?? (options.input ?? [{}]).map((json) => ({ json }))
    const runExecutionData = createRunExecutionData({
      executionData: {
        nodeExecutionStack: [{ node: startNode, data: { main: [input] }, source: null }]
      }
    })
    const execute = new WorkflowExecute(this.additionalData(executionId, hooks), mode, runExecutionData)
    return await execute.processRunExecutionData(workflow)
  }

  /** Calls the trigger's poll() through n8n-core's PollContext, with the workflow's static data. */
  async poll(workflow: Workflow, nodeName: string, mode: "trigger" | "manual") {
    this.enterInstance()
    const node = workflow.getNode(nodeName)
    if (node === null) throw new Error(`No node ${nodeName}`)
    const nodeType = this.nodeTypes.getByNameAndVersion(node.type, node.typeVersion)
    const context = new PollContext(
      workflow,
      node,
      this.additionalData(`poll-${++executionCounter}`),
      mode,
      mode === "manual" ? "manual" : "activate"
    )
    if (nodeType.poll === undefined) throw new Error(`${node.type} does not poll`)
    return await nodeType.poll.call(context)
  }

  /** What n8n's WebhookService knows of a node's (first) webhook. */
  private webhookData(workflow: Workflow, nodeName: string, additionalData: IWorkflowExecuteAdditionalData) {
    const node = workflow.getNode(nodeName)
    if (node === null) throw new Error(`No node ${nodeName}`)
    const nodeType = this.nodeTypes.getByNameAndVersion(node.type, node.typeVersion)
    const description = nodeType.description.webhooks?.[0]
    if (description === undefined) throw new Error(`${node.type} has no webhooks`)
    const webhookData: IWebhookData = {
      httpMethod: "POST",
      node: node.name,
      path: String(description.path),
      webhookDescription: description,
      workflowId: workflow.id,
      workflowExecuteAdditionalData: additionalData,
      ...(node.webhookId === undefined ? {} : { webhookId: node.webhookId })
    }
    return { node, nodeType, webhookData }
  }

  /**
   * Calls one of the node's webhook lifecycle methods as n8n's WebhookService does (through n8n-core's
   * HookContext): mode `trigger` with activation `activate` when a workflow is activated, mode
   * `internal` with activation `update` when it is deactivated.
   */
  async webhookMethod(workflow: Workflow, nodeName: string, method: WebhookMethod): Promise<boolean> {
    this.enterInstance()
    const additionalData = this.additionalData(`hook-${++executionCounter}`)
    const { node, nodeType, webhookData } = this.webhookData(workflow, nodeName, additionalData)
    const fn = nodeType.webhookMethods?.[webhookData.webhookDescription.name]?.[method]
    if (fn === undefined) throw new Error(`${node.type} has no webhook method ${method}`)
    const deactivating = method === "delete"
    const context = new HookContext(
      workflow,
      node,
      additionalData,
      deactivating ? "internal" : "trigger",
      deactivating ? "update" : "activate",
      webhookData
    )
    return await fn.call(context)
  }

  /** Activation, as n8n's WebhookService.createWebhookIfNotExists: create unless checkExists says it exists. */
  async activateWebhook(workflow: Workflow, nodeName: string): Promise<void> {
    if (!(await this.webhookMethod(workflow, nodeName, "checkExists"))) {
      await this.webhookMethod(workflow, nodeName, "create")
    }
  }

  /** Deactivation, as n8n's WebhookService.deleteWebhook. */
  async deactivateWebhook(workflow: Workflow, nodeName: string): Promise<boolean> {
    return await this.webhookMethod(workflow, nodeName, "delete")
  }

  /**
   * Runs the node's webhook() for one request as n8n's WebhookService.runWebhook does (through n8n-core's
   * WebhookContext), with the request and response n8n's webhook server hands over.
   */
  async webhook(workflow: Workflow, nodeName: string, request: unknown, response: unknown): Promise<IWebhookResponseData> {
    this.enterInstance()
    const additionalData = {
      ...this.additionalData(`webhook-${++executionCounter}`),
      httpRequest: request,
      httpResponse: response
    } as unknown as IWorkflowExecuteAdditionalData
    const { node, nodeType, webhookData } = this.webhookData(workflow, nodeName, additionalData)
    if (nodeType.webhook === undefined) throw new Error(`${node.type} has no webhook function`)
    const context = new WebhookContext(workflow, node, additionalData, "trigger", webhookData, [], null)
    return await nodeType.webhook.call(context)
  }

  /** The node's subtitle as n8n's editor shows it: its expression resolved against the node's parameters. */
  subtitle(node: INode): unknown {
    const nodeType = this.nodeTypes.getByNameAndVersion(node.type, node.typeVersion)
    const workflow = this.workflow({ nodes: [node], connections: {} })
    return workflow.expression.getSimpleParameterValue(node, nodeType.description.subtitle ?? "", "internal", {})
  }

  /**
   * Calls a list search of the node as n8n's editor does (POST /rest/dynamic-node-parameters/resource-locator-results),
   * with the node's current parameters.
   */
  async listSearch(node: INode, method: string, filter?: string) {
    const nodeType = this.nodeTypes.getByNameAndVersion(node.type, node.typeVersion)
    const search = nodeType.methods?.listSearch?.[method]
    if (search === undefined) throw new Error(`${node.type} has no list search ${method}`)
    const workflow = this.workflow({ nodes: [node], connections: {} })
    const additionalData = { ...this.additionalData("list-search"), currentNodeParameters: node.parameters }
    const context = new LoadOptionsContext(workflow, node, additionalData, "parameters")
    return await search.call(context, filter)
  }

  /**
   * Runs the credential's test request the way n8n's "Test" button does:
   * resolve it against the credential, authenticate it, send it, apply the rules.
   */
  async testCredential(credentials: ParleyCredentials): Promise<{ status: "OK" | "Error"; message: string }> {
    const type = this.loader.getCredential("parleyApi").type
    const test = type.test as ICredentialTestRequest
    const node: INode = {
      id: "credential-test",
      name: "Credential Test",
      type: PARLEY,
      typeVersion: 1,
      position: [0, 0],
      parameters: {}
    }
    const workflow = this.workflow({ nodes: [node], connections: {} })
    const baseURL = String(resolveWithCredentials(test.request.baseURL, credentials, workflow, node))
    const request = await this.credentialsHelper.authenticate(
      credentials,
      "parleyApi",
      { url: test.request.url ?? "", method: test.request.method ?? "GET", headers: {} },
      workflow,
      node
    )
    let response: Response
    try {
      response = await fetch(`${baseURL}${request.url}`, {
        method: request.method ?? "GET",
        headers: request.headers as Record<string, string>
      })
    } catch (error) {
      // n8n's CredentialsTester answers a request that failed without a response with the error's cause code.
      const cause = (error as Error).cause
      const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined
      return { status: "Error", message: code ?? (error as Error).message }
    }
    for (const rule of test.rules ?? []) {
      if (rule.type === "responseCode" && response.status === rule.properties.value) {
        return { status: "Error", message: rule.properties.message }
      }
    }
    if (!response.ok) return { status: "Error", message: `HTTP ${response.status}` }
    return { status: "OK", message: "Connection tested successfully" }
  }
}

/** The output items of one node in a run (first output, every run of it). */
export function outputOf(run: IRun, nodeName: string): INodeExecutionData[] {
  const tasks = run.data.resultData.runData[nodeName]
  if (tasks === undefined) {
    const error = run.data.resultData.error
    throw new Error(`Node ${nodeName} did not run${error === undefined ? "" : `: ${error.message}`}`)
  }
  return tasks.flatMap((task) => task.data?.main?.[0] ?? [])
}

export function parleyNode(name: string, parameters: INode["parameters"], extra: Partial<INode> = {}): INode {
  return {
    id: name.toLowerCase().replace(/\W+/g, "-"),
    name,
    type: PARLEY,
    typeVersion: 1,
    position: [0, 0],
    parameters,
    credentials: { parleyApi: { id: "1", name: "Parley" } },
    ...extra
  }
}

/** Connects the nodes in a line: a → b → c. */
export function chain(...names: string[]): IConnections {
  const connections: IConnections = {}
  for (let i = 0; i + 1 < names.length; i++) {
    connections[names[i]!] = { main: [[{ node: names[i + 1]!, type: "main", index: 0 }]] }
  }
  return connections
}
